package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newDiffCommand(e *env) *cli.Command {
	return &cli.Command{Name: "diff", Usage: "list keys that differ between REV and REV2 (default HEAD)", ArgsUsage: "REV [REV2]",
		Flags:  []cli.Flag{&cli.BoolFlag{Name: "stat", Usage: "show sizes and a summary"}, patchFlag(), jsonFlag()},
		Action: e.runDiff}
}

func (e *env) runDiff(c *cli.Context) error {
	if err := nargs(c, 1, 2); err != nil {
		return err
	}
	rev2 := revArg(c, 1)
	return e.withRepoRead(func(r *repo.Repo) error {
		a, err := r.Resolve(e.ctx, e.agent, c.Args().Get(0))
		if err != nil {
			return err
		}
		b, err := r.Resolve(e.ctx, e.agent, rev2)
		if err != nil {
			return err
		}
		changes := []objects.Change{}
		for ch, err := range dag.Diff(e.ctx, r.Blocks, a, b) {
			if err != nil {
				return err
			}
			changes = append(changes, ch)
		}
		switch {
		case c.Bool("json"):
			return e.writeJSON(changes)
		case c.Bool("patch"):
			return e.printPatch(r, changes)
		case c.Bool("stat"):
			var added, removed, modified int
			for _, ch := range changes {
				size := func(v objects.CID) string {
					if v.IsZero() {
						return "-"
					}
					n, err := objects.ContentSize(e.ctx, r.Blocks, v)
					if err != nil {
						return "?"
					}
					return fmt.Sprint(n)
				}
				fmt.Fprintf(e.stdout, " %s %s | %s -> %s bytes\n", changeLetter[ch.Change], termsafe.Line(ch.Path), size(ch.Old), size(ch.New))
				switch ch.Change {
				case objects.Added:
					added++
				case objects.Removed:
					removed++
				default:
					modified++
				}
			}
			fmt.Fprintf(e.stdout, " %d keys changed: %d added, %d modified, %d removed\n", len(changes), added, modified, removed)
		default:
			e.printChanges(changes)
		}
		return nil
	})
}
