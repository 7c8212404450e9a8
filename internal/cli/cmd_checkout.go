package cli

import (
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newCheckoutCommand(e *env) *cli.Command {
	return &cli.Command{Name: "checkout", Usage: "make DIR exactly REV's state (HEAD does not move)", ArgsUsage: "REV DIR",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "force", Aliases: []string{"f"},
			Usage: "also overwrite and remove files in DIR that the store did not write (never a .git or a store)"},
			&cli.BoolFlag{Name: "allow-redacted", Usage: "check out a commit with redacted values: write no file for them (say which) instead of refusing"}},
		Action: e.runCheckout}
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
		// export.CheckoutWith refuses a target inside any store, a tree that
		// would write into one (export.ErrInStore) or into a .git
		// (export.ErrGitDir), and, unless --force, any file in the way that
		// the store did not write there: the directory's stat cache (kept in
		// the store, as commit DIR and the runtime keep it) records what it
		// wrote, so the next checkout into DIR may replace it.
		opts := export.CheckoutOptions{Cache: r.StatCache(), Force: c.Bool("force")}
		view := inspect.New(r)
		opts.Skip = func(key string, v objects.CID) (bool, error) {
			red, err := view.RedactionOf(e.ctx, v)
			if err != nil || red == nil {
				return false, err
			}
			if !c.Bool("allow-redacted") {
				return false, &inspect.RedactedError{Key: key, Commit: id, Value: v, Redacted: red}
			}
			return true, nil
		}
		rep, err := export.CheckoutWith(e.ctx, r.Blocks, cm.Tree, e.path(dir), opts)
		if errors.Is(err, export.ErrNotOwned) {
			return fmt.Errorf("%w (move them away, or run checkout --force to overwrite and remove them; a .git and stores are never touched)", err)
		}
		if errors.Is(err, inspect.ErrRedacted) {
			return fmt.Errorf("%w; nothing was written (checkout --allow-redacted writes no file for a redacted value)", err)
		}
		if err != nil {
			return err
		}
		for _, k := range rep.Skipped {
			fmt.Fprintf(e.stdout, "redacted: %s (no file written)\n", termsafe.Line(k))
		}
		fmt.Fprintf(e.stdout, "checked out %s into %s: %d written, %d unchanged, %d removed\n", id.Short(), dir, rep.Written, rep.Unchanged, rep.Removed)
		return nil
	})
}
