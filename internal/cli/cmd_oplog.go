package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/urfave/cli/v2"
)

func newOplogCommand(e *env) *cli.Command {
	return &cli.Command{Name: "oplog", Usage: "show the agent's operation log, newest first", ArgsUsage: " ",
		Flags: []cli.Flag{&cli.IntFlag{Name: "n", Value: -1, Usage: "show at most `N` entries"}, jsonFlag()}, Action: e.oplogAction}
}

type oplogOptions struct {
	readOpts
	N    int // at most N entries; < 0 is all
	JSON bool
}

func (e *env) oplogAction(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	o := oplogOptions{N: c.Int("n"), JSON: c.Bool("json")}
	return e.withRepoRead(func(r *repo.Repo) error {
		o.readOpts = e.readOpts(r)
		return runOplog(e.ctx, o, c.Args().Slice(), e.stdout)
	})
}

// runOplog renders the read model's operation log (inspect.View.Oplog):
// --json is exactly its []inspect.Op.
func runOplog(ctx context.Context, o oplogOptions, args []string, out io.Writer) error {
	if len(args) != 0 {
		return usagef("oplog: takes no arguments")
	}
	ops, err := o.View.Oplog(ctx, o.Agent, max(o.N, 0))
	if err != nil {
		return err
	}
	if o.N == 0 {
		ops = ops[:0]
	}
	if o.JSON {
		return o.out(ctx, out).writeJSON(ops)
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
		fmt.Fprintln(out, line)
	}
	return nil
}
