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
		v, data, err := e.lookup(r, c.String("at"), key)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return e.writeJSON(struct {
				Path    string      `json:"path"`
				CID     objects.CID `json:"cid"`
				Size    int         `json:"size"`
				Content []byte      `json:"content"` // base64
			}{key, v, len(data), data})
		}
		_, err = e.stdout.Write(data)
		return err
	})
}
