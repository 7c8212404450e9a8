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
		Flags:  []cli.Flag{messageFlag(), &cli.StringFlag{Name: "row", Usage: "revert one row `TABLE:PK` (the rowid, or a JSON array for a composite key) of the SQLite value KEY (default memory.db)"}, &cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "say what would be reverted, write nothing"}, jsonFlag()},
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
	if row := c.String("row"); row != "" {
		key := "memory.db"
		switch len(keys) {
		case 0:
		case 1:
			key = keys[0]
		default:
			return usagef("revert --row takes one KEY (the SQLite value; default memory.db)")
		}
		return e.runRevertRow(c, rev, key, row)
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

// runRevertRow renders the read model's row revert (inspect.View.RevertRow,
// or PlanRevertRow with --dry-run): --json is its inspect.RevertRowPlan.
func (e *env) runRevertRow(c *cli.Context, rev, key, row string) error {
	e.gatesOwnWrites = true
	with := e.withRepo
	if c.Bool("dry-run") {
		with = e.withRepoRead
	}
	return with(func(r *repo.Repo) error {
		v := inspect.New(r)
		var p inspect.RevertRowPlan
		var err error
		if c.Bool("dry-run") {
			p, err = v.PlanRevertRow(e.ctx, e.agent, rev, key, row)
			if errors.Is(err, inspect.ErrRevertConflict) {
				fmt.Fprintf(e.stderr, "a revert would be refused: %v\n", err)
				err = nil
			}
		} else {
			p, err = v.RevertRow(e.ctx, e.agent, rev, key, row, inspect.WriteOptions{Message: c.String("message")})
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
		fmt.Fprintf(e.stdout, "%-8s row %s of %s\n", p.Action, termsafe.Line(row), termsafe.Line(key))
		if c.Bool("dry-run") {
			fmt.Fprintln(e.stderr, "dry run: nothing written")
			return nil
		}
		if !p.New.IsZero() {
			fmt.Fprintln(e.stdout, p.New)
		}
		return nil
	})
}
