package cli

import (
	"context"
	"github.com/agentstate/agentstate/dag/inspect"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newRmCommand(e *env) *cli.Command {
	return &cli.Command{Name: "rm", Usage: "delete one key as a commit", ArgsUsage: "KEY",
		Flags: []cli.Flag{messageFlag()}, Action: e.runRm}
}

func (e *env) runRm(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	key := c.Args().First()
	if err := objects.ValidateKey(key); err != nil {
		return err
	}
	msg := c.String("message")
	if msg == "" {
		msg = "rm " + key
	}
	return e.withRepo(func(r *repo.Repo) error {
		return e.reportEdit(r.Edit(e.ctx, repo.EditRequest{Agent: e.agent, Message: msg,
			Edit: func(ctx context.Context, t *objects.Tree) (bool, error) {
				ok, err := t.Delete(ctx, key)
				if err == nil && !ok {
					return false, &inspect.KeyNotFoundError{Key: key, Agent: e.agent}
				}
				return ok, err
			}}))
	})
}
