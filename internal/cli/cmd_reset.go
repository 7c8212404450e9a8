package cli

import (
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/urfave/cli/v2"
)

func newResetCommand(e *env) *cli.Command {
	return &cli.Command{Name: "reset", Usage: "move HEAD to REV", ArgsUsage: "REV", Action: e.runReset}
}

func (e *env) runReset(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	return e.withRepo(func(r *repo.Repo) error {
		if _, err := r.Refs.Head(e.ctx, e.agent); err != nil {
			return err
		}
		target, err := r.Resolve(e.ctx, e.agent, c.Args().First())
		if err != nil {
			return err
		}
		_, err = r.Reset(e.ctx, e.agent, target)
		if errors.Is(err, repo.ErrNoChange) {
			fmt.Fprintf(e.stderr, "HEAD of %s is already at %s\n", e.agent, target.Short())
			return nil
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "HEAD of %s is now at %s\n", e.agent, target.Short())
		return nil
	})
}
