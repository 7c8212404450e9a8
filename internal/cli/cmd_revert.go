package cli

import (
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/urfave/cli/v2"
)

func newRevertCommand(e *env) *cli.Command {
	return &cli.Command{Name: "revert", Usage: "make a commit that undoes a commit's or a task's change to some keys (all it changed by default)", ArgsUsage: "REV [-- KEY...]",
		Flags:  []cli.Flag{messageFlag(), &cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "say what would be reverted, write nothing"}, jsonFlag()},
		Action: e.runRevert}
}

// runRevert renders the read model's revert (inspect.View.Revert, or
// PlanRevert with --dry-run): --json is its inspect.RevertPlan.
func (e *env) runRevert(c *cli.Context) error {
	if err := nargs(c, 1, -1); err != nil {
		return err
	}
	args := c.Args().Slice()
	rev, keys := args[0], args[1:]
	if len(keys) > 0 && keys[0] == "--" {
		keys = keys[1:]
	}
	// The read model's write holds the write gate itself.
	e.gatesOwnWrites = true
	with := e.withRepo
	if c.Bool("dry-run") {
		with = e.withRepoRead
	}
	return with(func(r *repo.Repo) error {
		v := inspect.New(r)
		var p inspect.RevertPlan
		var err error
		if c.Bool("dry-run") {
			p, err = v.PlanRevert(e.ctx, e.agent, rev, keys)
		} else {
			p, err = v.Revert(e.ctx, e.agent, rev, keys, inspect.WriteOptions{Message: c.String("message")})
		}
		if errors.Is(err, inspect.ErrNoChange) {
			fmt.Fprintf(e.stderr, "nothing to revert: %v; HEAD of %s stays\n", err, e.agent)
			err = nil
		}
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return e.writeJSON(p)
		}
		for _, k := range p.Keys {
			fmt.Fprintf(e.stdout, "%-8s %s\n", k.Action, termsafe.Line(k.Key))
		}
		if c.Bool("dry-run") {
			if cs := p.Conflicts(); len(cs) > 0 {
				fmt.Fprintf(e.stderr, "a revert would be refused: later commits changed %d of these keys too\n", len(cs))
			}
			fmt.Fprintln(e.stderr, "dry run: nothing written")
			return nil
		}
		if !p.New.IsZero() {
			fmt.Fprintln(e.stdout, p.New)
		}
		return nil
	})
}
