package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newLogCommand(e *env) *cli.Command {
	return &cli.Command{Name: "log", Usage: "show history, newest first", ArgsUsage: "[REV]",
		Flags: []cli.Flag{&cli.IntFlag{Name: "n", Value: -1, Usage: "show at most N commits"},
			&cli.StringFlag{Name: "path", Usage: "only commits that changed KEY"},
			&cli.BoolFlag{Name: "oneline", Usage: "one line per commit"}, jsonFlag},
		Action: e.runLog}
}

func (e *env) runLog(c *cli.Context) error {
	if err := nargs(c, 0, 1); err != nil {
		return err
	}
	rev := revArg(c, 0)
	path := c.String("path")
	if path != "" {
		if err := objects.ValidateKey(path); err != nil {
			return usagef("--path: %v", err)
		}
	}
	limit := c.Int("n")
	return e.withRepoRead(func(r *repo.Repo) error {
		start, err := r.Resolve(e.ctx, e.agent, rev)
		if err != nil {
			return err
		}
		head, _ := r.Refs.Head(e.ctx, e.agent)
		var out []logJSON
		n := 0
		for le, err := range dag.Log(e.ctx, r.Blocks, start) {
			if err != nil {
				return err
			}
			if limit >= 0 && n >= limit {
				break
			}
			if path != "" {
				ok, err := dag.TouchesKey(e.ctx, r.Blocks, le.Commit, path)
				if err != nil {
					return err
				}
				if !ok {
					continue
				}
			}
			n++
			switch {
			case c.Bool("json"):
				j, err := e.logJSON(r, le)
				if err != nil {
					return err
				}
				out = append(out, j)
			case c.Bool("oneline"):
				fmt.Fprintf(e.stdout, "%s %s\n", e.paint("33", le.CID.Short()), firstLine(le.Commit.Message))
			default:
				if n > 1 {
					fmt.Fprintln(e.stdout)
				}
				e.printCommit(le, le.CID == head.Commit)
			}
		}
		if c.Bool("json") {
			if out == nil {
				out = []logJSON{}
			}
			return e.writeJSON(out)
		}
		return nil
	})
}
