// Command bench is agentstate's performance harness: it generates the
// workloads of DESIGN §9 deterministically, runs agentstate (the CLI at
// bin/agentstate for CLI workloads, the Go library for library workloads),
// git and restic on identical data in one run, and prints medians and
// ratios. It never claims absolute figures: every number sits beside git's,
// restic's or this machine's own limits measured in the same run.
//
// Usage:
//
//	go run ./internal/cmd/bench [-quick] [-only 1,2,9] [-bin bin/agentstate] [-work DIR] [-keep]
//
// docs/performance.md explains each workload and records a run.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// config is the harness's settings, from flags.
type config struct {
	quick   bool
	bin     string // agentstate CLI
	work    string // scratch directory
	keep    bool
	only    map[int]bool
	reps    int
	out     io.Writer
	log     io.Writer
	restic  string // path of restic, "" when unavailable
	sqlite3 string // path of sqlite3, "" when unavailable

	// Sizes.
	brainDirs, brainFiles, brainFileSize int // workloads 1, 2, 5
	keyCommits                           int // workloads 3, 4
	bigKeys                              int // workloads 6, 7
	exportBytes                          int64
	dbBytes                              int64 // workload 9
	dbVersions                           int
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "small sizes and fewer repetitions (about a minute)")
	bin := fs.String("bin", "bin/agentstate", "agentstate binary to run for the CLI workloads")
	work := fs.String("work", "", "scratch directory (default: a new temporary directory)")
	keep := fs.Bool("keep", false, "keep the scratch directory")
	only := fs.String("only", "", "comma-separated workload numbers to run (default: all)")
	reps := fs.Int("reps", 0, "repetitions per timed measurement (default 5, 3 with -quick)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg := &config{quick: *quick, keep: *keep, out: stdout, log: stderr, reps: *reps}
	var err error
	if cfg.bin, err = filepath.Abs(*bin); err != nil {
		return err
	}
	if _, err := os.Stat(cfg.bin); err != nil {
		return fmt.Errorf("agentstate binary %s: %w (run 'make build' or pass -bin)", cfg.bin, err)
	}
	if *only != "" {
		cfg.only = map[int]bool{}
		for _, s := range strings.Split(*only, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil || !slices.ContainsFunc(workloads, func(w workload) bool { return w.n == n }) {
				return fmt.Errorf("-only %q: want workload numbers 1 to %d", *only, workloads[len(workloads)-1].n)
			}
			cfg.only[n] = true
		}
	}
	cfg.sizes()
	if _, err := lookPath("git"); err != nil {
		return fmt.Errorf("git is required for the comparison: %w", err)
	}
	if p, err := lookPath("restic"); err == nil {
		cfg.restic = p
	} else {
		fmt.Fprintln(stderr, "bench: restic not found: workload 9 runs without the restic comparison (apt-get install -y restic)")
	}
	if p, err := lookPath("sqlite3"); err == nil {
		cfg.sqlite3 = p
	} else {
		fmt.Fprintln(stderr, "bench: sqlite3 not found: workloads 9 and 16 are skipped (apt-get install -y sqlite3)")
	}
	if *work == "" {
		if cfg.work, err = os.MkdirTemp("", "agentstate-bench-"); err != nil {
			return err
		}
	} else {
		cfg.work = *work
		if err := os.MkdirAll(cfg.work, 0o755); err != nil {
			return err
		}
	}
	if !cfg.keep {
		defer os.RemoveAll(cfg.work)
	} else {
		fmt.Fprintln(stderr, "bench: scratch directory kept at", cfg.work)
	}

	start := time.Now()
	var rows []row
	mach, err := machine(ctx, cfg)
	if err != nil {
		return fmt.Errorf("measuring the machine: %w", err)
	}
	for _, w := range workloads {
		if cfg.only != nil && !cfg.only[w.n] {
			continue
		}
		if (w.n == 9 || w.n == 16 || w.n == 17 || w.n == 18 || w.n == 22) && cfg.sqlite3 == "" {
			rows = append(rows, row{id: "9", name: w.name, note: "skipped: sqlite3 not installed"})
			continue
		}
		fmt.Fprintf(stderr, "bench: workload %d: %s\n", w.n, w.name)
		t0 := time.Now()
		rs, err := w.run(ctx, cfg, mach)
		if err != nil {
			return fmt.Errorf("workload %d (%s): %w", w.n, w.name, err)
		}
		fmt.Fprintf(stderr, "bench: workload %d took %s\n", w.n, time.Since(t0).Round(time.Millisecond))
		rows = append(rows, rs...)
	}
	printTable(stdout, cfg, mach, rows, time.Since(start))
	return nil
}

// sizes sets workload sizes for a full or a quick run.
func (c *config) sizes() {
	c.brainDirs, c.brainFiles, c.brainFileSize = 100, 100, 1024
	c.keyCommits = 1000
	c.bigKeys = 1_000_000
	c.exportBytes = 1 << 30
	c.dbBytes, c.dbVersions = 64<<20, 100
	if c.reps == 0 {
		c.reps = 5
	}
	if c.quick {
		c.bigKeys = 100_000
		c.exportBytes = 128 << 20
		c.dbBytes, c.dbVersions = 16<<20, 20
		if c.reps == 5 {
			c.reps = 3
		}
	}
}

// workload is one of DESIGN §9's measurements.
type workload struct {
	n    int
	name string
	run  func(ctx context.Context, cfg *config, m *machineFigures) ([]row, error)
}

var workloads = []workload{
	{1, "import a 10k-file brain (CLI)", w1Import},
	{2, "commit after changing 1 file of 10k (CLI)", w2Change},
	{3, "single-key commits through the library", w3KeyCommits},
	{4, "log over 1000 commits (CLI)", w4Log},
	{5, "checkout of an old commit into an empty directory (CLI)", w5Checkout},
	{6, "one key write at 1k vs 1M keys (library)", w6Write},
	{7, "diff of two commits differing in one key of 1M (library)", w7Diff},
	{8, "export of a 1 GiB brain to tar", w8Export},
	{9, "bytes stored: 100 versions of a 64 MiB SQLite memory.db", w9SQLite},
	{10, "the CLI against a served store (agentstate serve)", w10Served},
	{11, "one-key put into a served 100k-key brain", w11ServedScale},
	{12, "8 CLI readers beside a runtime landing tasks", w12Readers},
	{13, "retention: forget --keep-last 100 after 10k tasks on a memory.db", w13Retention},
	{14, "lineage sync: clone a 10k-commit history, pull one commit", w14Sync},
	{15, "log --tasks over 10,000 runtime tasks (CLI)", w15Tasks},
	{16, "first sql query at an old commit of a 64 MiB memory.db vs sqlite3 on a checkout", w16SQLQuery},
	{17, "diff --sql and --stat of two versions of a 64 MiB memory.db 1% of pages apart vs sqldiff", w17RowDiff},
	{18, "log --row over 1000 tasks of a 64 MiB memory.db", w18RowLog},
	{19, "log --oneline and --json over 100,000 commits, unserved (CLI)", w19LogLong},
	{21, "floors of the unserved reads: the engine's start, the store's open, the first sql query's pages", w21Floors},
	{22, "commit DIR after a task changed a 32 MiB memory.db and 3 skills (CLI)", w22TaskCommit},
	{23, "commit DIR of 1,000,000 small files (CLI)", w23MillionFiles},
	{24, "runtime tasks of one durable write, one writer (Sync)", w24DurableTasks},
	{25, "du of a store of about 607k blocks (CLI)", w25Du},
	{26, "verify of about 607k blocks vs sha256 of the same bytes (CLI)", w26Verify},
	{29, "diff --stat and --sql of two versions of a 64 MiB memory.db one row apart vs sqldiff", w29RowDiffOne},
	{30, "export of a brain holding a 64 MiB memory.db (library)", w30ExportDB},
}

// row is one line of the result table. Times are in the unit the row says.
type row struct {
	id, name string
	as       string // agentstate figure, formatted
	git      string
	restic   string
	ratio    string // agentstate / git (or the row's own comparison)
	target   string
	verdict  string // "met", "MISSED by ...", or ""
	note     string
}

func printTable(w io.Writer, cfg *config, m *machineFigures, rows []row, took time.Duration) {
	mode := "full"
	if cfg.quick {
		mode = "quick"
	}
	fmt.Fprintf(w, "\nagentstate benchmark (%s run, %d repetitions, medians; %s total)\n", mode, cfg.reps, took.Round(time.Second))
	fmt.Fprintf(w, "machine: %d CPUs; sha256 %.0f MB/s; write+fsync %.0f MB/s; fsync %.2f ms; %s; %s\n\n",
		m.cpus, m.sha256MBs, m.diskWriteMBs, m.fsyncMs, m.git, m.restic)
	hdr := []string{"#", "workload", "agentstate", "git", "restic", "ratio", "target", "verdict"}
	cells := [][]string{hdr}
	for _, r := range rows {
		cells = append(cells, []string{r.id, r.name, r.as, r.git, r.restic, r.ratio, r.target, r.verdict})
	}
	widths := make([]int, len(hdr))
	for _, c := range cells {
		for i, s := range c {
			widths[i] = max(widths[i], len(s))
		}
	}
	line := func(c []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, s := range c {
			fmt.Fprintf(&b, " %-*s |", widths[i], s)
		}
		fmt.Fprintln(w, b.String())
	}
	line(cells[0])
	sep := make([]string, len(hdr))
	for i := range sep {
		sep[i] = strings.Repeat("-", widths[i])
	}
	line(sep)
	for _, c := range cells[1:] {
		line(c)
	}
	var notes []string
	for _, r := range rows {
		if r.note != "" {
			notes = append(notes, fmt.Sprintf("  %s %s: %s", r.id, r.name, r.note))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintln(w, "\nnotes:")
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
}

// median returns the median of ds (the mean of the middle two for an even count).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianF(fs []float64) float64 {
	if len(fs) == 0 {
		return 0
	}
	s := slices.Clone(fs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// fmtDur prints a duration with three significant digits.
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d.Nanoseconds())
	case d < time.Millisecond:
		return fmt.Sprintf("%.3gµs", float64(d)/float64(time.Microsecond))
	case d < time.Second:
		return fmt.Sprintf("%.3gms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%.3gs", d.Seconds())
	}
}

func fmtBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%d B", n)
	}
}

func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// verdictMax says whether got <= limit and, if not, by how much it misses.
func verdictMax(got, limit float64) string {
	if got <= limit {
		return "met"
	}
	return fmt.Sprintf("MISSED by %.2fx", got/limit)
}

// verdictMin says whether got >= limit.
func verdictMin(got, limit float64) string {
	if got >= limit {
		return "met"
	}
	return fmt.Sprintf("MISSED by %.2fx", limit/got)
}
