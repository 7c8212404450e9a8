package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/urfave/cli/v2"
)

func newOplogCommand(e *env) *cli.Command {
	return &cli.Command{Name: "oplog", Usage: "show the agent's operation log, newest first", ArgsUsage: " ",
		Flags: []cli.Flag{&cli.IntFlag{Name: "n", Value: -1, Usage: "show at most N entries"}, jsonFlag()}, Action: e.runOplog}
}

// runOplog renders the read model's operation log (inspect.View.Oplog):
// --json is exactly its []inspect.Op.
func (e *env) runOplog(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		limit := c.Int("n")
		ops, err := inspect.New(r).Oplog(e.ctx, e.agent, max(limit, 0))
		if err != nil {
			return err
		}
		if limit == 0 {
			ops = ops[:0]
		}
		if c.Bool("json") {
			return e.writeJSON(ops)
		}
		for _, op := range ops {
			old := "(none)"
			if !op.Old.IsZero() {
				old = op.Old.Short()
			}
			line := fmt.Sprintf("%4d %-7s %s -> %s  %s", op.Seq, termsafe.Line(op.Op), old, op.New.Short(), fmtTime(op.Time))
			if op.Task != "" {
				line += "  task=" + termsafe.Line(op.Task)
			}
			if op.Target != 0 {
				line += fmt.Sprintf("  (of operation %d)", op.Target)
			}
			if op.Note != "" {
				line += "  " + termsafe.Line(op.Note)
			}
			if op.Undone {
				line += "  (undone)"
			}
			fmt.Fprintln(e.stdout, line)
		}
		return nil
	})
}
