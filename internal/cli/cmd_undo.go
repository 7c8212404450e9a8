package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/urfave/cli/v2"
)

func newUndoCommand(e *env) *cli.Command {
	return &cli.Command{Name: "undo", Usage: "step HEAD back along the operation log (repeatable)", ArgsUsage: " ", Action: e.runUndo}
}

func (e *env) runUndo(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.undoRedo(false)
}

func (e *env) undoRedo(redo bool) error {
	return e.withRepo(func(r *repo.Repo) error {
		do, verb := r.Undo, "undid"
		if redo {
			do, verb = r.Redo, "redid"
		}
		u, err := do(e.ctx, e.agent)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "%s operation %d (%s); HEAD of %s is now at %s\n", verb, u.Target.Seq, termsafe.Line(string(u.Target.Op)), e.agent, u.Entry.New.Short())
		return nil
	})
}
