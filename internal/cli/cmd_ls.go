package cli

import (
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newLsCommand(e *env) *cli.Command {
	return &cli.Command{Name: "ls", Usage: "list keys", ArgsUsage: "[PREFIX]",
		Flags: []cli.Flag{atFlag(),
			&cli.BoolFlag{Name: "long", Aliases: []string{"l"}, Usage: "show value CID and size"}, jsonFlag()},
		Action: e.runLs}
}

type lsEntry struct {
	Path string      `json:"path"`
	CID  objects.CID `json:"cid"`
	Size int64       `json:"size"`
}

func (e *env) runLs(c *cli.Context) error {
	if err := nargs(c, 0, 1); err != nil {
		return err
	}
	prefix := c.Args().First()
	return e.withRepoRead(func(r *repo.Repo) error {
		id, err := r.Resolve(e.ctx, e.agent, c.String("at"))
		if err != nil {
			return err
		}
		t, err := r.Tree(e.ctx, id)
		if err != nil {
			return err
		}
		long, asJSON := c.Bool("long"), c.Bool("json")
		out := []lsEntry{}
		for en, err := range t.Entries(e.ctx, prefix) {
			if err != nil {
				return err
			}
			if !strings.HasPrefix(en.Key, prefix) {
				break
			}
			le := lsEntry{Path: en.Key, CID: en.Value, Size: -1}
			if long || asJSON {
				n, err := objects.ContentSize(e.ctx, r.Blocks, en.Value) // a chunked value's file node, not its chunks
				if err != nil {
					return err
				}
				le.Size = int64(n)
			}
			if asJSON {
				out = append(out, le)
			} else if long {
				fmt.Fprintf(e.stdout, "%s %9d %s\n", en.Value.Short(), le.Size, termsafe.Line(en.Key))
			} else {
				fmt.Fprintln(e.stdout, termsafe.Line(en.Key))
			}
		}
		if asJSON {
			return e.writeJSON(out)
		}
		return nil
	})
}
