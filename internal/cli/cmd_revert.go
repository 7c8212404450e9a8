package cli

import (
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
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
	return e.revertWith(c, func(v *inspect.View, dry bool) (any, objects.CID, func(), error) {
		var p inspect.RevertPlan
		var err error
		if dry {
			p, err = v.PlanRevert(e.ctx, e.agent, rev, keys)
		} else {
			p, err = v.Revert(e.ctx, e.agent, rev, keys, inspect.WriteOptions{Message: c.String("message")})
		}
		return p, p.New, func() {
			for _, k := range p.Keys {
				fmt.Fprintf(e.stdout, "%-8s %s\n", k.Action, termsafe.Line(k.Key))
			}
			if cs := p.Conflicts(); dry && len(cs) > 0 {
				fmt.Fprintf(e.stderr, "a revert would be refused: later commits changed %d of these keys too\n", len(cs))
			}
		}, err
	})
}

// runRevertRow renders the read model's row revert (inspect.View.RevertRow,
// or PlanRevertRow with --dry-run): --json is its inspect.RevertRowPlan.
func (e *env) runRevertRow(c *cli.Context, rev, key, row string) error {
	return e.revertWith(c, func(v *inspect.View, dry bool) (any, objects.CID, func(), error) {
		var p inspect.RevertRowPlan
		var err error
		if dry {
			p, err = v.PlanRevertRow(e.ctx, e.agent, rev, key, row)
			if errors.Is(err, inspect.ErrRevertConflict) {
				fmt.Fprintf(e.stderr, "a revert would be refused: %v\n", err)
				err = nil
			}
		} else {
			p, err = v.RevertRow(e.ctx, e.agent, rev, key, row, inspect.WriteOptions{Message: c.String("message")})
		}
		return p, p.New, func() {
			fmt.Fprintf(e.stdout, "%-8s row %s of %s\n", p.Action, termsafe.Line(row), termsafe.Line(key))
		}, err
	})
}

// revertWith runs a revert through the read model (or, with --dry-run,
// only its plan) and renders it: --json is the plan; else print's lines,
// then the new commit. The read model's write holds the write gate itself.
func (e *env) revertWith(c *cli.Context, run func(v *inspect.View, dry bool) (plan any, written objects.CID, print func(), err error)) error {
	dry := c.Bool("dry-run")
	e.gatesOwnWrites = true
	with := e.withRepo
	if dry {
		with = e.withRepoRead
	}
	return with(func(r *repo.Repo) error {
		p, written, print, err := run(inspect.New(r), dry)
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
		print()
		if dry {
			fmt.Fprintln(e.stderr, "dry run: nothing written")
			return nil
		}
		if !written.IsZero() {
			fmt.Fprintln(e.stdout, written)
		}
		return nil
	})
}
