package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newShowCommand(e *env) *cli.Command {
	return &cli.Command{Name: "show", Usage: "show a commit and what it changed, or REV:KEY's value", ArgsUsage: "REV[:KEY]",
		Flags: []cli.Flag{patchFlag(), jsonFlag(), bytesFlag()}, Action: e.showAction}
}

type showOptions struct {
	readOpts
	Patch, JSON bool
}

func (e *env) showAction(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	o := showOptions{Patch: c.Bool("patch"), JSON: c.Bool("json")}
	return e.withRepoRead(func(r *repo.Repo) error {
		o.readOpts = e.readOpts(r)
		return runShow(e.ctx, o, c.Args().Slice(), e.stdout)
	})
}

// runShow renders the read model's commit (inspect.View.Show; --json is
// its inspect.Shown) for args[0], REV; for REV:KEY it streams the value;
// for a task revision it shows the task (runShowTask).
func runShow(ctx context.Context, o showOptions, args []string, out io.Writer) error {
	if len(args) != 1 {
		return usagef("show: takes 1 argument, REV[:KEY]")
	}
	rev, key, hasKey := strings.Cut(args[0], ":")
	if dag.IsTaskRev(args[0]) {
		// task:ID is the task; task:ID:KEY a value at the commit it
		// landed (split at the last ':', as blame splits it); task:ID~1 a
		// commit.
		if done, err := runShowTask(ctx, o, args[0], out); done {
			return err
		}
		if rev, key = splitRevKey(args[0]); key == "" {
			return showCommit(ctx, o, args[0], out)
		}
		hasKey = true
	}
	if hasKey && o.JSON {
		// The read model's Value, as 'get --json' gives it.
		v, err := o.View.Get(ctx, o.Agent, rev, key, -1)
		if err != nil {
			return err
		}
		return o.out(ctx, out).writeJSON(v)
	}
	if hasKey {
		_, rd, err := o.View.Open(ctx, o.Agent, rev, key)
		if err != nil {
			return err
		}
		_, err = objects.CopyValue(out, rd)
		return err
	}
	return showCommit(ctx, o, rev, out)
}

// showCommit renders the read model's commit rev.
func showCommit(ctx context.Context, o showOptions, rev string, out io.Writer) error {
	e := o.out(ctx, out)
	s, err := o.View.Show(ctx, o.Agent, rev, o.Patch)
	if err != nil {
		return err
	}
	if o.JSON {
		return e.writeJSON(s)
	}
	head, err := o.View.Head(ctx, o.Agent)
	if err != nil {
		return err
	}
	e.printCommit(s.Commit, headOnly(s.Commit.CID == head))
	fmt.Fprintf(out, "\nTree:   %s\nBundle: %s\n\n", s.Commit.Tree, s.Commit.BundleHash)
	switch {
	case s.ParentGone:
		// The first parent a forget cut (the oldest commit log lists):
		// what the commit changed is not known, the rest is.
		fmt.Fprintf(out, "%s\n", e.paint("2", "~~ the first parent was forgotten (history cut by forget): what this commit changed is not known ~~"))
	case o.Patch:
		e.printPatch(s.Changes)
	default:
		e.printChanges(s.Changes)
	}
	return nil
}
