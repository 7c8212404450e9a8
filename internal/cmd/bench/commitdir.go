package main

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// runRSS runs one command as runner.run does and also returns its peak
// resident set (waitPeak: the process's own high-water mark; the rusage
// figure of a child carries this harness's size).
func (r *runner) runRSS(ctx context.Context, dir string, name string, args ...string) (time.Duration, int64, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = r.env
	errf, err := os.CreateTemp("", "bench-err-")
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(errf.Name())
	defer errf.Close()
	cmd.Stdout, cmd.Stderr = io.Discard, errf
	d, peak, err := waitPeak(cmd)
	if err != nil {
		errb, _ := os.ReadFile(errf.Name())
		return d, 0, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, tail(string(errb)))
	}
	return d, peak, nil
}

// hashFiles reads and sha256-hashes the files once, one after another: the
// floor of a commit that must look at their content.
func hashFiles(paths []string) (time.Duration, int64, error) {
	t0 := time.Now()
	var n int64
	buf := make([]byte, 1<<20)
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return 0, 0, err
		}
		h := sha256.New()
		m, err := io.CopyBuffer(h, f, buf)
		f.Close()
		if err != nil {
			return 0, 0, err
		}
		h.Sum(nil)
		n += m
	}
	return time.Since(t0), n, nil
}

// commitFloor times the floor of a `commit DIR` (rows 2x and 22f): the
// Badger-only program internal/cmd/bench/commitfloor on a copy of the store
// as it was before the commit, writing as many blocks of the same sizes as
// the commit added, after reading and hashing the changed files once (and,
// for row 2x, an lstat of every file of the brain).
type commitFloor struct {
	r        *runner
	bin, dir string
	n        int
	copy     string // the store's copy made by before
	// front, when set, is a copy of the front end with commitfloor beside
	// it as the engine (row 22g): before makes a second copy of the store,
	// copy2, which afterFront writes into through it.
	front string
	copy2 string
}

func newCommitFloor(ctx context.Context, cfg *config, r *runner, dir string) (*commitFloor, error) {
	bin, err := buildFloor(ctx, cfg, "commitfloor")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &commitFloor{r: r, bin: bin, dir: dir}, nil
}

// before copies the store (untimed) and flushes the file system's dirty
// pages, so that neither the commit nor the floor writes out the other's
// or the workload's data with its own syncs.
func (f *commitFloor) before(ctx context.Context, store string) error {
	f.n++
	f.copy = filepath.Join(f.dir, fmt.Sprintf("store-%d", f.n))
	os.RemoveAll(f.copy)
	if _, _, err := f.r.run(ctx, f.dir, nil, "cp", "-a", store, f.copy); err != nil {
		return err
	}
	if f.front != "" {
		f.copy2 = f.copy + "-front"
		os.RemoveAll(f.copy2)
		if _, _, err := f.r.run(ctx, f.dir, nil, "cp", "-a", store, f.copy2); err != nil {
			return err
		}
	}
	_, _, err := f.r.run(ctx, f.dir, nil, "sync")
	return err
}

// afterFront times the floor as after does, into the second copy, through
// the front end (f.front), with the brain's walk and the format's two
// hashes of a large file (-walk, -pages): row 22g. sizes is after's list.
func (f *commitFloor) afterFront(ctx context.Context, sizes, walk string, files []string) (time.Duration, error) {
	defer os.RemoveAll(f.copy2)
	args := append([]string{"write", "-walk", walk, "-pages", f.copy2, sizes}, files...)
	env := []string{"COMMITFLOOR_ARGS=" + strings.Join(args, "\n")}
	// The front end's command line is a commit's; what runs is the floor.
	_, d, err := f.r.run(ctx, f.dir, env, f.front, "--store", f.copy2, "commit", "-m", "floor", walk)
	return d, err
}

// after lists (untimed) the blocks the commit added to store and times the
// floor writing as many of the same sizes into the copy made by before.
func (f *commitFloor) after(ctx context.Context, store, walk string, files []string) (time.Duration, int, error) {
	d, n, sizes, err := f.afterSizes(ctx, store, walk, files)
	os.Remove(sizes)
	return d, n, err
}

// afterSizes is after, also returning the sizes list it wrote (the caller
// removes it).
func (f *commitFloor) afterSizes(ctx context.Context, store, walk string, files []string) (time.Duration, int, string, error) {
	defer os.RemoveAll(f.copy)
	sizes := filepath.Join(f.dir, fmt.Sprintf("sizes-%d", f.n))
	if _, _, err := f.r.run(ctx, f.dir, nil, f.bin, "sizes", f.copy, store, sizes); err != nil {
		return 0, 0, sizes, err
	}
	raw, err := os.ReadFile(sizes)
	if err != nil {
		return 0, 0, sizes, err
	}
	args := []string{"write"}
	if walk != "" {
		args = append(args, "-walk", walk)
	}
	args = append(append(args, f.copy, sizes), files...)
	_, d, err := f.r.run(ctx, f.dir, nil, f.bin, args...)
	return d, strings.Count(string(raw), "\n"), sizes, err
}

// w22TaskCommit: a 2000-file brain holding a 32 MiB memory.db; a task
// changes ~1% of the database's pages (row rewrites, FTS5 inserts) and three
// skill files, then 'agentstate commit DIR' records it. The floor, in the
// same run right after each commit: reading and sha256-hashing the changed
// files once. Target: the commit in at most 2x the floor.
func w22TaskCommit(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(cfg.work, "taskcommit")
	brain, store := filepath.Join(base, "brain"), filepath.Join(base, "store")
	os.RemoveAll(base)
	if err := genBrain(brain, 20, 100, 1024, 22); err != nil { // 2000 files; the skills are among them
		return nil, err
	}
	dbPath := filepath.Join(brain, "memory.db")
	db, err := genSQLite(ctx, cfg.sqlite3, dbPath, 32<<20, 22)
	if err != nil {
		return nil, err
	}
	prev, err := os.ReadFile(dbPath)
	if err != nil {
		return nil, err
	}
	pageSize := int(binary.BigEndian.Uint16(prev[16:18]))
	pages := len(prev) / pageSize
	if _, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "init"); err != nil {
		return nil, err
	}
	if _, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "commit", "-m", "brain", brain); err != nil {
		return nil, err
	}
	// Everything ages past the racy window, and the stat cache is refreshed
	// once, as the previous task's commit would have.
	time.Sleep(1100 * time.Millisecond)
	if _, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "commit", "-m", "refresh", brain); err != nil {
		return nil, err
	}
	cf, err := newCommitFloor(ctx, cfg, r, filepath.Join(base, "floor"))
	if err != nil {
		return nil, err
	}
	if cf.front, err = frontWithEngine(filepath.Join(base, "floor", "front"), cfg.bin, cf.bin); err != nil {
		return nil, err
	}
	var as, fl, cfl, gfl []time.Duration
	var changed, blocks int
	buf := make([]byte, 1024+31)
	for i := range cfg.reps {
		if err := db.mutate(ctx, max(pages/100*4/5, 1), 8); err != nil {
			return nil, err
		}
		cur, err := os.ReadFile(dbPath)
		if err != nil {
			return nil, err
		}
		changed = changedPages(prev, cur, pageSize)
		prev = cur
		paths := []string{dbPath}
		for s := range 3 {
			p := filepath.Join(brain, brainPath(s*7, i))
			fill(buf, 220_000+uint64(i*3+s))
			if err := os.WriteFile(p, buf, 0o644); err != nil {
				return nil, err
			}
			paths = append(paths, p)
		}
		if err := cf.before(ctx, store); err != nil {
			return nil, err
		}
		_, a, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "commit", "-m", fmt.Sprintf("task %d", i), brain)
		if err != nil {
			return nil, err
		}
		f, _, err := hashFiles(paths)
		if err != nil {
			return nil, err
		}
		c, n, sizes, err := cf.afterSizes(ctx, store, "", paths)
		if err != nil {
			return nil, err
		}
		g, err := cf.afterFront(ctx, sizes, brain, paths)
		os.Remove(sizes)
		if err != nil {
			return nil, err
		}
		as, fl, cfl, gfl, blocks = append(as, a), append(fl, f), append(cfl, c), append(gfl, g), n
	}
	a, f, c, g := median(as), median(fl), median(cfl), median(gfl)
	verdict := verdictMax(float64(a)/float64(f), 2)
	if gr := float64(g) / float64(f); gr >= 2 && float64(a)/float64(f) > 2 {
		verdict = fmt.Sprintf("below this machine's floor (22g %.2fx >= 2x)", gr)
	}
	return []row{{id: "22", name: "commit DIR: 2000 files, 32 MiB memory.db ~1% pages and 3 skills changed", as: fmtDur(a), git: fmtDur(f),
		ratio: ratio(float64(a), float64(f)), target: "<= 2x reading+hashing the changed files", verdict: verdict,
		note: fmt.Sprintf("git column: reading and sha256-hashing memory.db and the 3 skills once, in this process, right after each commit (the floor); %d of %d pages changed in the last version", changed, pages)},
		{id: "22f", name: "  floor of 22: Badger alone (writable open, the commit's new blocks, close) + reading and hashing the changed files, vs the hashing", as: fmtDur(c), git: fmtDur(f),
			ratio: ratio(float64(c), float64(f)),
			note:  fmt.Sprintf("internal/cmd/bench/commitfloor on a copy of the store as it was before each commit, the store's Badger options and level-0 rule, %d blocks of the sizes the last commit added; the commit took %s of it", blocks, ratio(float64(a), float64(c)))},
		{id: "22g", name: "  floor of 22 with what the commit must do besides: 22f through the front end, with the brain's lstat walk and the format's second hash of memory.db, vs the hashing", as: fmtDur(g), git: fmtDur(f),
			ratio: ratio(float64(g), float64(f)),
			note:  fmt.Sprintf("commitfloor write -walk BRAIN -pages, installed beside a copy of the front end as its engine and started by it (COMMITFLOOR_ARGS), on a second copy of the store as it was before each commit: the lstat of every file (how a commit finds what changed), memory.db hashed in its pages on one goroutine beside its whole content on another (its pages' CIDs and the sha256 of its content the bundle hash needs); the commit took %s of it", ratio(float64(a), float64(g)))},
	}, nil
}

// w23MillionFiles: 'agentstate commit DIR' of 1,000,000 small files (100,000
// with -quick) into a fresh store against 'git add -A' of the same
// directory in the same run (git's index and loose objects, no commit), and
// agentstate's peak resident set. Targets: at most 1x git's time, at most
// 1 GB resident.
func w23MillionFiles(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	files := 1_000_000
	if cfg.quick {
		files = 100_000
	}
	base := filepath.Join(cfg.work, "million")
	brain, store := filepath.Join(base, "brain"), filepath.Join(base, "store")
	os.RemoveAll(base)
	t0 := time.Now()
	// 1000 directories of files of 40 to 400 bytes: an agent's many small
	// notes, embeddings indexes cut into shards, tool outputs.
	dirs := files / 1000
	buf := make([]byte, 400)
	for d := range dirs {
		dir := filepath.Join(brain, fmt.Sprintf("shard-%04d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		for f := range 1000 {
			n := 40 + (d*1000+f)%361
			fill(buf[:n], 23_000_000+uint64(d*1000+f))
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("item-%04d.txt", f)), buf[:n], 0o644); err != nil {
				return nil, err
			}
		}
	}
	fmt.Fprintf(cfg.log, "bench: %d files written in %s\n", files, time.Since(t0).Round(time.Millisecond))
	if _, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "init"); err != nil {
		return nil, err
	}
	a, rss, err := r.runRSS(ctx, base, cfg.bin, "--store", store, "commit", "-m", "million", brain)
	if err != nil {
		return nil, err
	}
	gitDir := filepath.Join(base, "git")
	if _, _, err := r.run(ctx, base, nil, "git", "init", "-q", "--bare", gitDir); err != nil {
		return nil, err
	}
	g, grss, err := r.runRSS(ctx, brain, "git", "--git-dir="+gitDir, "--work-tree="+brain, "add", "-A")
	if err != nil {
		return nil, err
	}
	return []row{
		{id: "23", name: fmt.Sprintf("commit DIR of %d small files into a new store", files), as: fmtDur(a), git: fmtDur(g),
			ratio: ratio(float64(a), float64(g)), target: "<= 1x git add -A", verdict: verdictMax(float64(a)/float64(g), 1),
			note: "git add -A in a new repository (index and loose objects; the git column) right after, same files, page cache warm for both"},
		{id: "23m", name: "  peak resident set of that commit", as: fmtBytes(rss), git: fmtBytes(grss),
			target: "<= 1 GB", verdict: verdictMax(float64(rss), 1e9)},
	}, nil
}
