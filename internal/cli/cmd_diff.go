package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/dag/sqlitedb/rowdiff"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newDiffCommand(e *env) *cli.Command {
	return &cli.Command{Name: "diff", Usage: "list keys that differ between REV and REV2 (default HEAD; no REV: what HEAD changed; A..B is A B); task:ID alone: the task's whole change; SQLite values by table", ArgsUsage: "[REV [REV2] | A..B | REV DIR] [-- KEY...]",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "stat", Usage: "show sizes and a summary (a SQLite value: rows per table)"}, patchFlag(), jsonFlag(), bytesFlag(),
			&cli.BoolFlag{Name: "sql", Usage: "print SQL that turns each changed SQLite value's old database into the new (as sqldiff)"}},
		Action: e.diffAction}
}

type diffOptions struct {
	readOpts
	Stat, Patch, JSON, SQL bool
	Keys                   []string // only these keys (none: all)
	// Dir, when set, is a directory on disk compared with the one REV
	// (diff REV DIR; inspect.View.DiffDir).
	Dir string
}

func (e *env) diffAction(c *cli.Context) error {
	args := c.Args().Slice()
	o := diffOptions{Stat: c.Bool("stat"), Patch: c.Bool("patch"), JSON: c.Bool("json"), SQL: c.Bool("sql")}
	// What follows "--" on the command line is keys.
	if i := slices.Index(e.args, "--"); i >= 0 {
		o.Keys = slices.Clone(e.args[i+1:])
		args = args[:max(0, len(args)-len(o.Keys))]
		args = slices.DeleteFunc(args, func(a string) bool { return a == "--" })
	}
	if len(args) > 2 {
		return usagef("diff: takes at most 2 revisions, REV [REV2] (keys go after --)")
	}
	// diff REV DIR: a directory on disk as the second side.
	if len(args) == 2 && isDir(e.path(args[1])) {
		if strings.Contains(args[0], "..") {
			return usagef("diff REV DIR compares one revision with a directory: no range")
		}
		o.Dir, args = e.path(args[1]), args[:1]
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		o.readOpts = e.readOpts(r)
		return runDiff(e.ctx, o, args, e.stdout)
	})
}

// runDiff renders the read model's diff (inspect.View.Diff; --json is its
// []inspect.Change) from args[0] to args[1] (default HEAD; no args: what
// HEAD changed against its first parent). Sizes come from the tree and the values' file
// nodes; content is read only for -p, and a SQLite value's pages only
// where they differ (inspect.View.DiffRows) for --stat, -p, --json, --sql.
func runDiff(ctx context.Context, o diffOptions, args []string, out io.Writer) error {
	if len(args) > 2 {
		return usagef("diff: takes at most 2 revisions, REV [REV2]")
	}
	// A range A..B is diff A B, as git reads it.
	if len(args) == 1 {
		from, to, ok, err := inspect.SplitRange(args[0])
		if err != nil {
			return err
		}
		if ok {
			args = []string{from, to}
		}
	} else if len(args) == 2 && (strings.Contains(args[0], "..") || strings.Contains(args[1], "..")) {
		return usagef("diff: give a range A..B alone, or two revisions")
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
	if o.Dir != "" {
		// The directory's values are read through the view DiffDir gives.
		var dd inspect.DirDiff
		dd, o.View, err = o.View.DiffDir(ctx, o.Agent, args[0], o.Dir, o.Patch)
		changes, isTask = dd.Changes, true
	} else if len(args) == 1 {
		changes, isTask, err = taskChange(ctx, o.readOpts, args[0], o.Patch)
	}
	if len(args) == 0 {
		// What HEAD changed, against its first parent (a root commit:
		// against nothing), as show gives it.
		var sh inspect.Shown
		sh, err = o.View.Show(ctx, o.Agent, "HEAD", o.Patch)
		changes, isTask = sh.Changes, true
	}
	if !isTask {
		changes, err = o.View.Diff(ctx, o.Agent, args[0], to, o.Patch)
	}
	if err != nil {
		return err
	}
	if len(o.Keys) > 0 {
		for _, k := range o.Keys {
			if err := objects.ValidateKey(k); err != nil {
				return err
			}
		}
		changes = slices.DeleteFunc(changes, func(c inspect.Change) bool { return !slices.Contains(o.Keys, c.Path) })
	}
	switch {
	case o.SQL:
		if err := o.View.DiffSQL(ctx, changes); err != nil {
			return err
		}
	case o.Stat && !o.Patch && !o.JSON:
		if err := o.View.DiffCounts(ctx, changes); err != nil {
			return err
		}
	case o.Stat || o.Patch || o.JSON:
		if err := o.View.DiffRows(ctx, changes); err != nil {
			return err
		}
	}
	switch {
	case o.SQL:
		n := 0
		for _, ch := range changes {
			if ch.RowsError != "" {
				return fmt.Errorf("diff: %s: %s", termsafe.Line(ch.Path), termsafe.Line(ch.RowsError))
			}
			if ch.Rows == nil {
				continue
			}
			n++
			sql, err := ch.Rows.SQL()
			if err != nil {
				return err
			}
			if len(changes) > 1 {
				fmt.Fprintf(out, "-- %s\n", termsafe.Line(ch.Path))
			}
			fmt.Fprint(out, sql)
		}
		if n == 0 {
			return fmt.Errorf("diff: --sql: no SQLite value changed")
		}
	case o.JSON:
		return e.writeJSON(changes)
	case o.Patch:
		e.printPatch(changes)
	case o.Stat:
		printStat(e, changes)
	default:
		e.printChanges(changes)
	}
	return nil
}

// printStat prints changes as diff --stat does: a line per key with its
// sizes (and a SQLite value's rows per table), then a summary.
func printStat(e *env, changes []inspect.Change) {
	out := e.stdout
	var added, removed, modified int
	for _, ch := range changes {
		size := func(v objects.CID, n uint64) string {
			if v.IsZero() {
				return "-"
			}
			return e.size(int64(n))
		}
		unit := ""
		if e.exactBytes {
			unit = " bytes"
		}
		fmt.Fprintf(out, " %s %s | %s -> %s%s\n", changeLetter[ch.Change], termsafe.Line(ch.Path), size(ch.Old, ch.OldSize), size(ch.New, ch.NewSize), unit)
		printRowStat(out, ch)
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
}

// printRowStat prints a SQLite value's change per table under its key's
// --stat line.
func printRowStat(out io.Writer, ch inspect.Change) {
	if ch.RowsError != "" {
		fmt.Fprintf(out, "     (rows not compared: %s)\n", termsafe.Line(ch.RowsError))
		return
	}
	if ch.Rows == nil {
		return
	}
	for _, s := range ch.Rows.Schema {
		fmt.Fprintf(out, "     schema: %s %s %s\n", s.Change, s.Type, termsafe.Line(s.Name))
	}
	for _, t := range ch.Rows.Tables {
		fmt.Fprintf(out, "     table %s: %d inserted, %d updated, %d deleted\n", termsafe.Line(t.Name), t.Inserted, t.Updated, t.Deleted)
	}
}

// printRows prints a SQLite value's change by table (diff -p): schema
// changes, then each table's rows, "+" inserted, "-" deleted, "~" updated
// with the changed columns' old and new values. Values are escaped for
// the terminal, as keys are.
func (e *env) printRows(ch inspect.Change) {
	if ch.RowsError != "" {
		fmt.Fprintf(e.stdout, "rows not compared: %s\n", termsafe.Line(ch.RowsError))
		return
	}
	d := ch.Rows
	for _, s := range d.Schema {
		switch s.Change {
		case "removed":
			fmt.Fprintln(e.stdout, e.paint("31", "- "+termsafe.Line(s.OldSQL)))
		case "added":
			fmt.Fprintln(e.stdout, e.paint("32", "+ "+termsafe.Line(s.NewSQL)))
		default:
			fmt.Fprintln(e.stdout, e.paint("31", "- "+termsafe.Line(s.OldSQL)))
			fmt.Fprintln(e.stdout, e.paint("32", "+ "+termsafe.Line(s.NewSQL)))
		}
	}
	for _, t := range d.Tables {
		fmt.Fprintln(e.stdout, e.paint("36", fmt.Sprintf("@@ table %s (%s): %d inserted, %d updated, %d deleted @@", termsafe.Line(t.Name), t.Kind, t.Inserted, t.Updated, t.Deleted)))
		oldCols := t.OldColumns
		if oldCols == nil {
			oldCols = t.Columns
		}
		for _, r := range t.Rows {
			key := "" // a WITHOUT ROWID table's key is among its columns
			if len(t.Key) == 1 && t.Key[0] == "rowid" {
				key = cellsText(t.Key, r.Key) + " "
			}
			switch r.Change {
			case "insert":
				fmt.Fprintln(e.stdout, e.paint("32", "+ "+key+cellsText(t.Columns, r.New)))
			case "delete":
				fmt.Fprintln(e.stdout, e.paint("31", "- "+key+cellsText(oldCols, r.Old)))
			default:
				var parts []string
				for _, c := range r.Changed {
					was, now := "(none)", "(none)"
					if i := slices.Index(oldCols, c); i >= 0 {
						was = cellText(r.Old[i])
					}
					if i := slices.Index(t.Columns, c); i >= 0 {
						now = cellText(r.New[i])
					}
					parts = append(parts, termsafe.Line(c)+": "+was+" -> "+now)
				}
				fmt.Fprintln(e.stdout, e.paint("33", "~ "+cellsText(t.Key, r.Key)+" "+strings.Join(parts, ", ")))
			}
		}
	}
}

func cellsText(names []string, cells []sqlitedb.Cell) string {
	parts := make([]string, len(cells))
	for i, c := range cells {
		n := "?"
		if i < len(names) {
			n = names[i]
		}
		parts[i] = termsafe.Line(n) + "=" + cellText(c)
	}
	return strings.Join(parts, " ")
}

// cellText writes a cell as a SQL literal would read, escaped for the
// terminal: text quoted, a blob as X'hex', NULL as NULL; past 200 bytes it
// is cut, saying how long it is (--json and --sql give it whole).
func cellText(c sqlitedb.Cell) string {
	s := rowdiff.Literal(c)
	if len(s) > 200 {
		s = fmt.Sprintf("%s... (%d bytes)", s[:200], len(s))
	}
	return termsafe.Line(s)
}
