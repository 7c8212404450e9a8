package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/refs"
	"github.com/urfave/cli/v2"
)

func newForkCommand(e *env) *cli.Command {
	return &cli.Command{Name: "fork", Usage: "start a new agent lineage at REV (default HEAD)", ArgsUsage: "NEW",
		Flags: []cli.Flag{&cli.StringFlag{Name: "from", Value: "HEAD", Usage: "the revision `REV` to fork from"}}, Action: e.runFork}
}

func (e *env) runFork(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	name := c.Args().First()
	if err := refs.ValidateAgent(name); err != nil {
		return err
	}
	return e.withRepo(func(r *repo.Repo) error {
		from, err := r.Resolve(e.ctx, e.agent, c.String("from"))
		if err != nil {
			return err
		}
		if _, err := r.Fork(e.ctx, e.agent, from, name); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "forked %s at %s into %s\n", e.agent, from.Short(), name)
		return nil
	})
}
