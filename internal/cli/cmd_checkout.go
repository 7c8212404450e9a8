package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export"
	"github.com/urfave/cli/v2"
)

func newCheckoutCommand(e *env) *cli.Command {
	return &cli.Command{Name: "checkout", Usage: "make DIR exactly REV's state (HEAD does not move)", ArgsUsage: "REV DIR", Action: e.runCheckout}
}

func (e *env) runCheckout(c *cli.Context) error {
	if err := nargs(c, 2, 2); err != nil {
		return err
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		id, cm, err := r.ResolveCommit(e.ctx, e.agent, c.Args().Get(0))
		if err != nil {
			return err
		}
		dir := c.Args().Get(1)
		// export.Checkout refuses a target inside any store, and a tree that
		// would write into one, saying which (export.ErrInStore).
		rep, err := export.Checkout(e.ctx, r.Blocks, cm.Tree, e.path(dir))
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "checked out %s into %s: %d written, %d unchanged, %d removed\n", id.Short(), dir, rep.Written, rep.Unchanged, rep.Removed)
		return nil
	})
}
