package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newBlameCommand(e *env) *cli.Command {
	return &cli.Command{Name: "blame", Usage: "show the commit and task that last changed each line of a text value", ArgsUsage: "[REV:]KEY",
		Flags: []cli.Flag{jsonFlag(), &cli.StringFlag{Name: "table", Usage: "a SQLite value: each row of `TABLE` with the commit and task that last inserted or changed it"}}, Action: e.blameAction}
}

type blameOptions struct {
	readOpts
	JSON  bool
	Table string // a SQLite value's table: blame its rows
}

func (e *env) blameAction(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	o := blameOptions{JSON: c.Bool("json"), Table: c.String("table")}
	return e.withRepoRead(func(r *repo.Repo) error {
		o.readOpts = e.readOpts(r)
		return runBlame(e.ctx, o, c.Args().Slice(), e.stdout)
	})
}

// runBlame renders the read model's blame (inspect.View.Blame) of its one
// argument, [REV:]KEY: --json is its lines, []inspect.BlameLine. A line at
// a forget cut (its commit is where the history was cut; it may be older)
// is marked "^", as git marks a boundary commit's.
func runBlame(ctx context.Context, o blameOptions, args []string, out io.Writer) error {
	if len(args) != 1 {
		return usagef("blame: takes 1 argument, [REV:]KEY, got %d", len(args))
	}
	rev, key := splitRevKey(args[0])
	if err := objects.ValidateKey(key); err != nil {
		return err
	}
	if o.Table != "" {
		return runBlameRows(ctx, o, rev, key, out)
	}
	b, err := o.View.Blame(ctx, o.Agent, rev, key)
	if err != nil {
		return err
	}
	if o.JSON {
		return o.out(ctx, out).writeJSON(b.Lines)
	}
	tw, nw := 1, len(fmt.Sprint(len(b.Lines)))
	for _, l := range b.Lines {
		tw = max(tw, len(termsafe.Line(l.Task)))
	}
	for _, l := range b.Lines {
		mark, task := " ", termsafe.Line(l.Task)
		if l.Boundary {
			mark = "^"
		}
		if task == "" {
			task = "-"
		}
		if _, err := fmt.Fprintf(out, "%s%s (%-*s %s %*d) %s\n", mark, l.Commit.Short(), tw, task, fmtTime(l.Time), nw, l.Line, o.out(ctx, out).valueLine(l.Text)); err != nil {
			return err
		}
	}
	return nil
}

// splitRevKey splits [REV:]KEY at its first ':' (HEAD when there is none),
// or, for a task revision (task:ID, which may hold ':'), at its last.
func splitRevKey(arg string) (rev, key string) {
	if dag.IsTaskRev(arg) {
		if i := strings.LastIndexByte(arg, ':'); i > strings.Index(arg, dag.TaskPrefix)+len(dag.TaskPrefix)-1 {
			return arg[:i], arg[i+1:]
		}
		return arg, ""
	}
	rev, key, ok := strings.Cut(arg, ":")
	if !ok {
		return "HEAD", arg
	}
	return rev, key
}

// runBlameRows renders the read model's row blame (inspect.View.BlameRows)
// of one table: a line per row, "SHORTCID (TASK DATE) KEY", its key's
// columns as COL=VALUE; --json is the inspect.RowBlame.
func runBlameRows(ctx context.Context, o blameOptions, rev, key string, out io.Writer) error {
	b, err := o.View.BlameRows(ctx, o.Agent, rev, key, o.Table)
	if err != nil {
		return err
	}
	if o.JSON {
		return o.out(ctx, out).writeJSON(b)
	}
	tw := 1
	for _, r := range b.Rows {
		tw = max(tw, len(termsafe.Line(r.Task)))
	}
	for _, r := range b.Rows {
		mark, task := " ", r.Task
		if r.Boundary {
			mark = "^"
		}
		if task == "" {
			task = "-"
		}
		if _, err := fmt.Fprintf(out, "%s%s (%-*s %s) %s\n", mark, r.Commit.Short(), tw, termsafe.Line(task), fmtTime(r.Time), cellsText(b.KeyColumns, r.Key)); err != nil {
			return err
		}
	}
	return nil
}
