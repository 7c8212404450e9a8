package cli

import (
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newGetCommand(e *env) *cli.Command {
	return &cli.Command{Name: "get", Usage: "print one key's value", ArgsUsage: "KEY",
		Flags: []cli.Flag{atFlag(), jsonFlag()}, Action: e.runGet}
}

func (e *env) runGet(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	key := c.Args().First()
	if err := objects.ValidateKey(key); err != nil {
		return err
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		if !c.Bool("json") {
			// The content streams out a chunk at a time; a chunked value's
			// sha256 is checked at its end, before its last piece is
			// written (a mismatch fails the command with its output short).
			v, err := e.lookupCID(r, c.String("at"), key)
			if err != nil {
				return err
			}
			rd, _, err := objects.OpenValue(e.ctx, r.Blocks, v)
			if err != nil {
				return err
			}
			_, err = objects.CopyValue(e.stdout, rd)
			return err
		}
		v, data, err := e.lookup(r, c.String("at"), key)
		if err != nil {
			return err
		}
		return e.writeJSON(struct {
			Path    string      `json:"path"`
			CID     objects.CID `json:"cid"`
			Size    int         `json:"size"`
			Content []byte      `json:"content"` // base64
		}{key, v, len(data), data})
	})
}
