package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newLogCommand(e *env) *cli.Command {
	return &cli.Command{Name: "log", Usage: "show history, newest first (REV may be a range A..B: the commits reachable from B and not from A)", ArgsUsage: "[REV | A..B] [-- KEY...]",
		Flags: []cli.Flag{&cli.IntFlag{Name: "n", Value: -1, Usage: "show at most `N` commits"},
			&cli.StringFlag{Name: "path", Usage: "only commits that changed `KEY`"},
			&cli.BoolFlag{Name: "oneline", Usage: "one line per commit"},
			&cli.BoolFlag{Name: "tasks", Usage: "one entry per landed task (its commits folded), not per commit"},
			&cli.BoolFlag{Name: "verify", Usage: "with --tasks: verify each task's receipt"},
			&cli.StringFlag{Name: "row", Usage: "the history of one row `TABLE:PK` of a SQLite value (the key after --, default memory.db): PK is the primary key's value, a JSON array for a composite key, or the rowid"},
			&cli.BoolFlag{Name: "follow", Aliases: []string{"f"}, Usage: "keep printing commits as HEAD moves (a served store; Ctrl-C stops)"}, jsonFlag(),
			patchFlag(), &cli.BoolFlag{Name: "stat", Usage: "under each commit, the keys it changed with their sizes"},
			&cli.StringFlag{Name: "grep", Usage: "only commits whose message or task, model, op or source metadata contains `TEXT` (any case)"},
			&cli.StringFlag{Name: "since", Usage: "only commits made at or after `DATE`: RFC 3339, YYYY-MM-DD (UTC) or \"N days ago\" (seconds, minutes, hours, days, weeks)"},
			&cli.StringFlag{Name: "until", Usage: "only commits made at or before `DATE` (as --since)"},
			&cli.StringFlag{Name: "task", Usage: "only the commits of task `ID`"}},
		Action: e.logAction}
}

type logOptions struct {
	readOpts
	N                     int    // at most N commits; < 0 is all
	Path                  string // only commits that changed this key
	Oneline, Follow, JSON bool
	Patch, Stat           bool     // each commit's changes, as show -p / diff --stat
	Keys                  []string // only commits that changed one of these (after --)
	Grep, Task            string
	Since, Until          time.Time
	// Served says that other processes can move HEAD (log --follow notes
	// when none can); Stderr takes that note.
	Served bool
	Stderr io.Writer
}

func (e *env) logAction(c *cli.Context) error {
	args := c.Args().Slice()
	var keys []string
	// What follows "--" on the command line is keys (log --row reads them
	// itself).
	if i := slices.Index(e.args, "--"); i >= 0 && c.String("row") == "" {
		keys = slices.Clone(e.args[i+1:])
		args = args[:max(0, len(args)-len(keys))]
		args = slices.DeleteFunc(args, func(a string) bool { return a == "--" })
	}
	if c.String("row") == "" {
		if err := checkArgCount(c.Command.Name, c.Command.ArgsUsage, len(args), 0, 1); err != nil {
			return err
		}
	}
	o := logOptions{N: c.Int("n"), Path: c.String("path"), Oneline: c.Bool("oneline"), Follow: c.Bool("follow"), JSON: c.Bool("json"), Stderr: e.stderr,
		Patch: c.Bool("patch"), Stat: c.Bool("stat"), Grep: c.String("grep"), Task: c.String("task")}
	now := time.Now()
	for _, b := range []struct {
		flag string
		to   *time.Time
	}{{"since", &o.Since}, {"until", &o.Until}} {
		if s := c.String(b.flag); s != "" {
			t, err := inspect.ParseWhen(s, now)
			if err != nil {
				return usagef("--%s: %v", b.flag, err)
			}
			*b.to = t
		}
	}
	filtered := o.Patch || o.Stat || o.Grep != "" || o.Task != "" || !o.Since.IsZero() || !o.Until.IsZero()
	if filtered && (c.String("row") != "" || c.Bool("tasks") || o.Follow) {
		return usagef("log -p, --stat, --grep, --since, --until and --task go with a commit log: no --row, --tasks or --follow")
	}
	if (o.Patch || o.Stat) && o.JSON {
		return usagef("log --json gives commits; for each one's changes use show --json or diff --json")
	}
	if o.Path != "" {
		if err := objects.ValidateKey(o.Path); err != nil {
			return usagef("--path: %v", err)
		}
	}
	if o.Follow && (o.JSON || c.NArg() > 0) {
		return usagef("log --follow follows HEAD, printing as it goes: no REV, no --json")
	}
	if c.Bool("verify") && !c.Bool("tasks") {
		return usagef("log --verify verifies the receipts of log --tasks: give --tasks")
	}
	if row := c.String("row"); row != "" {
		if o.Follow || o.Path != "" || c.Bool("tasks") || o.Oneline {
			return usagef("log --row lists one row's history: no --follow, --path, --tasks or --oneline")
		}
		key, args := "memory.db", c.Args().Slice()
		if i := slices.Index(e.args, "--"); i >= 0 {
			keys := e.args[i+1:]
			if len(keys) != 1 {
				return usagef("log --row takes one KEY after --")
			}
			key = keys[0]
			args = slices.DeleteFunc(args[:max(0, len(args)-1)], func(a string) bool { return a == "--" })
		}
		if len(args) > 1 {
			return usagef("log --row takes at most one REV (the key goes after --)")
		}
		rev := ""
		if len(args) == 1 {
			rev = args[0]
		}
		return e.withRepoRead(func(r *repo.Repo) error {
			return runLogRow(e.ctx, rowLogOptions{readOpts: e.readOpts(r), Rev: rev, Key: key, Row: row, N: o.N, JSON: o.JSON}, e.stdout)
		})
	}
	if c.Bool("tasks") {
		if o.Follow || o.Path != "" {
			return usagef("log --tasks lists landed tasks: no --follow, no --path")
		}
		return e.withRepoRead(func(r *repo.Repo) error {
			return runLogTasks(e.ctx, logTasksOptions{readOpts: e.readOpts(r), Rev: revArg(c, 0), Limit: o.N,
				Oneline: o.Oneline, JSON: o.JSON, Verify: c.Bool("verify")}, e.stdout)
		})
	}
	if o.Keys = keys; o.Follow && len(keys) > 0 {
		return usagef("log --follow follows one key at most, with --path")
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		o.readOpts, o.Served = e.readOpts(r), e.isServed(r)
		return runLog(e.ctx, o, args, e.stdout)
	})
}

// runLog renders the read model's log (inspect.View.Log; --json is its
// []inspect.Commit) from args[0] (default HEAD), then, with o.Follow, the
// commits each move of HEAD adds (inspect.View.Moved).
func runLog(ctx context.Context, o logOptions, args []string, out io.Writer) error {
	if len(args) > 1 {
		return usagef("log: takes at most 1 argument, REV")
	}
	rev := "HEAD"
	if len(args) == 1 && args[0] != "" {
		rev = args[0]
	}
	e := o.out(ctx, out)
	e.stderr = o.Stderr
	if e.stderr == nil {
		e.stderr = io.Discard
	}
	// The read model walks the log; this renders it. -n 0 prints
	// nothing, but the revision is still resolved (a bad one fails).
	lo := inspect.LogOptions{Rev: rev, Path: o.Path, Limit: max(o.N, 0), NoBundleHash: !o.JSON,
		Grep: o.Grep, Since: o.Since, Until: o.Until, Task: o.Task, Paths: o.Keys}
	if o.N == 0 {
		lo.Limit = 1
	}
	// Printed as the walk goes (inspect.View.LogEach): the first commit
	// of a long history shows at once, and none is held.
	stdout := e.stdout
	sw := newStreamWriter(stdout)
	e.stdout = sw
	var decos map[objects.CID]*inspect.Decoration
	var jw *jsonArrayWriter
	if o.JSON {
		jw = &jsonArrayWriter{w: sw}
	}
	printed := 0
	h, err := o.View.LogEach(ctx, o.Agent, lo, func(c inspect.Commit, h *inspect.History) error {
		if o.N == 0 {
			return nil
		}
		printed++
		if jw != nil {
			return jw.addCommit(c)
		}
		if decos == nil {
			var err error
			if decos, err = o.View.Decorations(ctx, o.Agent); err != nil {
				return err
			}
		}
		e.printLogEntry(c, o.Oneline, printed, decos[c.CID])
		if o.Patch || o.Stat {
			if err := e.printLogChanges(ctx, o, c); err != nil {
				return err
			}
		}
		if len(c.Cut) > 0 {
			e.printCut(h.Forgotten, o.Oneline)
		}
		return sw.err
	})
	if err == nil && jw != nil {
		err = jw.end()
	}
	if ferr := sw.Flush(); err == nil {
		err = ferr
	}
	e.stdout = stdout
	if err != nil {
		return err
	}
	if o.Follow {
		return e.followLog(o.View, o.Served, h.Head, o.Path, o.Oneline, printed)
	}
	return nil
}

// printLogChanges prints what a commit of the log changed against its
// first parent, as show gives it (inspect.View.Show): -p as diff -p, --stat
// as diff --stat; with keys after --, only those keys.
func (e *env) printLogChanges(ctx context.Context, o logOptions, c inspect.Commit) error {
	sh, err := o.View.Show(ctx, o.Agent, c.CID.String(), o.Patch)
	if err != nil {
		return err
	}
	changes := sh.Changes
	if keys := append(o.Keys, o.Path); len(o.Keys) > 0 || o.Path != "" {
		changes = slices.DeleteFunc(changes, func(ch inspect.Change) bool { return !slices.Contains(keys, ch.Path) })
	}
	rows := o.View.DiffRows
	if !o.Patch {
		rows = o.View.DiffCounts // --stat alone prints only the counts
	}
	if err := rows(ctx, changes); err != nil {
		return err
	}
	if !o.Oneline {
		fmt.Fprintln(e.stdout)
	}
	if o.Stat {
		printStat(e, changes)
	}
	if o.Patch {
		e.printPatch(changes)
	}
	return nil
}

// followLog prints, each time the agent's HEAD moves, the commits the move
// added (newest first, as log prints), or says where HEAD went when it moved
// elsewhere (undo, reset, restore). It returns when the command is
// interrupted or the server goes away.
func (e *env) followLog(v *inspect.View, served bool, last objects.CID, path string, oneline bool, printed int) error {
	r := v.R
	if r.Dir != "" && !served {
		fmt.Fprintf(e.stderr, "agentstate: note: nothing serves this store, so nothing else can move HEAD while this command holds it; following anyway\n")
	}
	for h, err := range r.WatchHead(e.ctx, e.agent) {
		if err != nil {
			return err
		}
		if h.Commit.IsZero() || h.Commit == last {
			continue
		}
		m, err := v.Moved(e.ctx, e.agent, last, h.Commit, path)
		if err != nil {
			return err
		}
		if !m.Descends {
			fmt.Fprintf(e.stdout, "%s HEAD moved to %s (not a descendant of %s: undo, reset or restore)\n", e.paint("31", "--"), h.Commit.Short(), last.Short())
		}
		for _, c := range m.Commits {
			printed++
			e.printLogEntry(c, oneline, printed, headOnly(c.CID == h.Commit))
		}
		last = h.Commit
	}
	if e.ctx.Err() != nil {
		return nil // interrupted: the normal way to stop
	}
	return nil
}

// printCut says that history below the last commit printed was cut: by
// the agent's forget (f), or, with f nil, by another agent's whose history
// this one shares.
func (e *env) printCut(f *inspect.Forgotten, oneline bool) {
	line := termsafe.Line(f.CutLine())
	if oneline {
		fmt.Fprintln(e.stdout, e.paint("2", "~~ "+line))
		return
	}
	fmt.Fprintf(e.stdout, "%s\n\n", e.paint("2", "    ~~ "+line+" ~~"))
}

// isServed reports whether other processes can move r's HEADs: the command
// runs in a server, or goes through one.
func (e *env) isServed(r *repo.Repo) bool {
	if e.served != nil {
		return true
	}
	_, ok := r.Storage.(repo.HeadWatcher)
	return ok
}

// printLogEntry prints the n-th commit of a log (1-based) with its
// decoration (HEAD, tags, other agents; nil: none).
func (e *env) printLogEntry(c inspect.Commit, oneline bool, n int, d *inspect.Decoration) {
	if oneline {
		// One write of one line, built without fmt (a thousand of them are
		// much of a served log --oneline).
		line := e.line[:0]
		if e.color {
			line = append(line, e.paint("33", c.CID.Short())...)
		} else {
			line = c.CID.AppendShort(line)
		}
		if d != nil {
			line = append(append(line, ' '), e.paint("33", e.decoration(d))...)
		}
		if task, ok := c.Metadata["task"]; ok {
			// A task's commit names the task, as a task revision does.
			line = append(append(append(line, " ["...), taskName(task, c.Metadata["attempt"])...), ']')
		}
		line = append(append(line, ' '), firstLine(c.Message)...)
		e.line = append(line, '\n')
		e.stdout.Write(e.line) // written out (or copied) before the next line reuses it
		return
	}
	if n > 1 {
		fmt.Fprintln(e.stdout)
	}
	e.printCommit(c, d)
}
