package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newDiffCommand(e *env) *cli.Command {
	return &cli.Command{Name: "diff", Usage: "list keys that differ between REV and REV2 (default HEAD); task:ID alone: the task's whole change", ArgsUsage: "REV [REV2]",
		Flags:  []cli.Flag{&cli.BoolFlag{Name: "stat", Usage: "show sizes and a summary"}, patchFlag(), jsonFlag()},
		Action: e.diffAction}
}

type diffOptions struct {
	readOpts
	Stat, Patch, JSON bool
}

func (e *env) diffAction(c *cli.Context) error {
	if err := nargs(c, 1, 2); err != nil {
		return err
	}
	o := diffOptions{Stat: c.Bool("stat"), Patch: c.Bool("patch"), JSON: c.Bool("json")}
	return e.withRepoRead(func(r *repo.Repo) error {
		o.readOpts = e.readOpts(r)
		return runDiff(e.ctx, o, c.Args().Slice(), e.stdout)
	})
}

// runDiff renders the read model's diff (inspect.View.Diff; --json is its
// []inspect.Change) from args[0] to args[1] (default HEAD). Sizes come from
// the tree and the values' file nodes; content is read only for -p.
func runDiff(ctx context.Context, o diffOptions, args []string, out io.Writer) error {
	if len(args) < 1 || len(args) > 2 {
		return usagef("diff: takes 1 to 2 arguments, REV [REV2]")
	}
	to := "HEAD"
	if len(args) == 2 && args[1] != "" {
		to = args[1]
	}
	e := o.out(ctx, out)
	// A lone task revision is the task's whole change, from the commit it
	// started from.
	var changes []inspect.Change
	isTask, err := false, error(nil)
	if len(args) == 1 {
		changes, isTask, err = taskChange(ctx, o.readOpts, args[0], o.Patch)
	}
	if !isTask {
		changes, err = o.View.Diff(ctx, o.Agent, args[0], to, o.Patch)
	}
	if err != nil {
		return err
	}
	switch {
	case o.JSON:
		return e.writeJSON(changes)
	case o.Patch:
		e.printPatch(changes)
	case o.Stat:
		var added, removed, modified int
		for _, ch := range changes {
			size := func(v objects.CID, n uint64) string {
				if v.IsZero() {
					return "-"
				}
				return fmt.Sprint(n)
			}
			fmt.Fprintf(out, " %s %s | %s -> %s bytes\n", changeLetter[ch.Change], termsafe.Line(ch.Path), size(ch.Old, ch.OldSize), size(ch.New, ch.NewSize))
			switch ch.Change {
			case objects.Added:
				added++
			case objects.Removed:
				removed++
			default:
				modified++
			}
		}
		fmt.Fprintf(out, " %d keys changed: %d added, %d modified, %d removed\n", len(changes), added, modified, removed)
	default:
		e.printChanges(changes)
	}
	return nil
}
