package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/runtime"
)

// w17RowDiff: 'agentstate diff --sql' between two commits of a dbBytes
// memory.db about 1% of pages apart, against sqldiff on the two files
// checked out (the checkouts not counted), each a new process; the SQL is
// checked first (sqlite3 applies it to the old file, sqldiff then finds
// it identical to the new). Then 'diff --stat' of the same, in a process
// and in-process (the server's part of a served command).
func w17RowDiff(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	sqldiff, err := lookPath("sqldiff")
	if err != nil {
		return []row{{id: "17", name: "diff --sql vs sqldiff", note: "skipped: sqldiff not installed (apt-get install -y sqlite3-tools)"}}, nil
	}
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	v, err := twoVersions(ctx, cfg, r, "rowdiff", 17, func(db *sqliteDB) error {
		return db.mutate(ctx, max(int(cfg.dbBytes/4096/125), 1), 8)
	})
	if err != nil {
		return nil, err
	}
	base, store, versions, changed, oldDB, newDB := v.base, v.store, v.versions, v.changed, v.oldDB, v.newDB
	// The oracle, once.
	sql, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "diff", "--sql", "HEAD~1", "HEAD")
	if err != nil {
		return nil, err
	}
	applied := filepath.Join(base, "applied.db")
	if err := os.WriteFile(applied, versions[0], 0o644); err != nil {
		return nil, err
	}
	script := filepath.Join(base, "diff.sql")
	if err := os.WriteFile(script, []byte(sql), 0o644); err != nil {
		return nil, err
	}
	if _, _, err := r.run(ctx, base, nil, cfg.sqlite3, applied, ".read "+script); err != nil {
		return nil, err
	}
	if out, _, err := r.run(ctx, base, nil, sqldiff, applied, newDB); err != nil || out != "" {
		return nil, fmt.Errorf("diff --sql applied to the old file: sqldiff still finds %q (%v)", tail(out), err)
	}
	a := func(int) (time.Duration, error) {
		_, d, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "diff", "--sql", "HEAD~1", "HEAD")
		return d, err
	}
	g := func(int) (time.Duration, error) {
		_, d, err := r.run(ctx, base, nil, sqldiff, oldDB, newDB)
		return d, err
	}
	am, sm, err := pairN(cfg.reps, a, g)
	if err != nil {
		return nil, err
	}
	st := func(int) (time.Duration, error) {
		_, d, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "diff", "--stat", "HEAD~1", "HEAD")
		return d, err
	}
	stm, _, err := pairN(cfg.reps, st, nil)
	if err != nil {
		return nil, err
	}
	// The same commands against the store held by 'agentstate serve' (a
	// runtime or an open page holds it so): a new front-end process each
	// run, on a server started for that run, whose first command (an
	// untimed log -n 1) opened the store: the diff's own blocks are read
	// cold, as the first diff a user asks of a running server.
	servedOnce := func(args ...string) timed {
		return func(int) (time.Duration, error) {
			stop, err := serve(ctx, cfg, r, store)
			if err != nil {
				return 0, err
			}
			defer stop()
			if _, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "log", "-n", "1", "--oneline"); err != nil {
				return 0, err
			}
			_, d, err := r.run(ctx, base, nil, cfg.bin, append([]string{"--store", store}, args...)...)
			return d, err
		}
	}
	svm, ssm, err := pairN(cfg.reps, servedOnce("diff", "--sql", "HEAD~1", "HEAD"), g)
	if err != nil {
		return nil, err
	}
	svst, _, err := pairN(cfg.reps, servedOnce("diff", "--stat", "HEAD~1", "HEAD"), nil)
	if err != nil {
		return nil, err
	}
	floor, fStart, fOpen, fReads, fBlocks, err := diffStatFloor(ctx, cfg, base, store, cfg.reps)
	if err != nil {
		return nil, err
	}
	rp, err := repo.Open(store, repo.Options{})
	if err != nil {
		return nil, err
	}
	defer rp.Close()
	ip := func(int) (time.Duration, error) { return inProcess(ctx, rp, base, "diff", "--stat", "HEAD~1", "HEAD") }
	ipm, _, err := pairN(cfg.reps, ip, nil)
	if err != nil {
		return nil, err
	}
	size := fmtBytes(int64(len(versions[1])))
	pages := len(versions[1]) / 4096
	const sqlLimit, statLimit = 0.5, 50 * time.Millisecond
	return []row{
		{id: "17", name: fmt.Sprintf("diff --sql of two versions of a %s memory.db %d of %d pages apart", size, changed, pages),
			as: fmtDur(am), git: "-", restic: "-", ratio: ratio(float64(am), float64(sm)),
			target: fmt.Sprintf("<= %gx sqldiff", sqlLimit), verdict: verdictMax(float64(am)/float64(sm), sqlLimit),
			note: fmt.Sprintf("sqldiff on the two checked-out files: %s (checkouts not counted); agentstate reads only the pages whose chunks differ (a new process each run); its %d bytes of SQL, applied by sqlite3 to the old file, give one sqldiff finds identical to the new", fmtDur(sm), len(sql))},
		{id: "17b", name: fmt.Sprintf("diff --stat of the same (rows per table)"),
			as: fmtDur(stm), git: "-", restic: "-", ratio: "-",
			target: fmt.Sprintf("<= %s", statLimit), verdict: verdictMax(float64(stm), float64(statLimit)),
			note: fmt.Sprintf("a new process each run (the store opened unserved); the command's own part, in-process as a server runs it: %s", fmtDur(ipm))},
		{id: "17bf", name: "  floor of 17b: the engine's start and the blocks the diff reads, read cold",
			as: fmtDur(floor), git: "-", restic: "-", ratio: ratio(float64(stm), float64(floor)),
			note: fmt.Sprintf("in the same run: %s version %s; a read-only open in this process (last run) %s; then the %d blocks an in-process diff --stat read (recorded on a fresh open: chunk list nodes and pages of both versions, tree nodes, commits) read again by Get on every core, nothing decoded, %s; ratio: 17b over this floor", filepath.Base(engineBin(cfg)), fmtDur(fStart), fmtDur(fOpen), fBlocks, fmtDur(fReads))},
		{id: "17s", name: "  diff --sql of the same, served",
			as: fmtDur(svm), git: "-", restic: "-", ratio: ratio(float64(svm), float64(ssm)),
			target: fmt.Sprintf("<= %gx sqldiff", sqlLimit), verdict: verdictMax(float64(svm)/float64(ssm), sqlLimit),
			note: fmt.Sprintf("agentstate serve holds the store, started for each run and opened by an untimed log -n 1: the diff reads its blocks cold; sqldiff timed alternately: %s", fmtDur(ssm))},
		{id: "17bs", name: "  diff --stat of the same, served",
			as: fmtDur(svst), git: "-", restic: "-", ratio: "-",
			target: fmt.Sprintf("<= %s", statLimit), verdict: verdictMax(float64(svst), float64(statLimit)),
			note: "agentstate serve holds the store, started for each run and opened by an untimed log -n 1: the diff reads its blocks cold"},
	}, nil
}

// w18RowLog: 'agentstate log --row' of one row over 1000 runtime tasks,
// each changing a few rows of a memory.db (the row itself every 10th).
func w18RowLog(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	tasks := 1000
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(cfg.work, "rowlog")
	store := filepath.Join(base, "store")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, err
	}
	db, err := genSQLite(ctx, cfg.sqlite3, filepath.Join(base, "memory.db"), cfg.dbBytes, 18)
	if err != nil {
		return nil, err
	}
	seed := [32]byte{18}
	rt, err := runtime.Open(ctx, runtime.Options{Store: store, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		return nil, err
	}
	target := db.rows / 2
	t0 := time.Now()
	for i := range tasks {
		if i > 0 {
			var b strings.Builder
			b.WriteString("BEGIN;\n")
			for range 3 {
				id := 1 + db.r.IntN(db.rows)
				if id == target {
					id = target%db.rows + 1 // other rows only
				}
				fmt.Fprintf(&b, "UPDATE memories SET created=created+1 WHERE id=%d;\n", id)
			}
			if i%10 == 0 {
				fmt.Fprintf(&b, "UPDATE memories SET created=%d WHERE id=%d;\n", 2_000_000_000+i, target)
			}
			b.WriteString("COMMIT;\n")
			if err := db.exec(ctx, b.String()); err != nil {
				rt.Close()
				return nil, err
			}
		}
		content, err := os.ReadFile(db.path)
		if err != nil {
			rt.Close()
			return nil, err
		}
		if _, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: fmt.Sprint("t", i)}, func(ctx context.Context, tx *runtime.Tx) error {
			return tx.Put(ctx, "memory.db", content)
		}); err != nil {
			rt.Close()
			return nil, fmt.Errorf("task %d: %w", i, err)
		}
	}
	build := time.Since(t0)
	if err := rt.Close(); err != nil {
		return nil, err
	}
	ref := fmt.Sprintf("memories:%d", target)
	var out string
	a := func(int) (time.Duration, error) {
		o, d, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "--agent", "lumen", "log", "--row", ref, "--json")
		out = o
		return d, err
	}
	am, _, err := pairN(max(cfg.reps, 3), a, nil)
	if err != nil {
		return nil, err
	}
	// The insert (task 0) and an update every 10th task after it.
	want := (tasks-1)/10 + 1
	versions := strings.Count(out, `"commit"`)
	if versions != want {
		return nil, fmt.Errorf("log --row found %d versions of %s, want %d", versions, ref, want)
	}
	const limit = 2 * time.Second
	return []row{{id: "18", name: fmt.Sprintf("log --row over %d tasks of a %s memory.db", tasks, fmtBytes(cfg.dbBytes)),
		as: fmtDur(am), git: "-", restic: "-", ratio: "-", target: fmt.Sprintf("<= %s", limit), verdict: verdictMax(float64(am), float64(limit)),
		note: fmt.Sprintf("%d commits changed the value, %d of them the row; a new process each run; building the history took %s", tasks, versions, build.Round(time.Second))}}, nil
}

// dbVersions is a store holding two commits of a generated memory.db (the
// second changed by a workload's edit) and both checked out.
type dbVersions struct {
	base, store  string
	versions     [2][]byte
	changed      int // pages that differ
	oldDB, newDB string
}

// twoVersions builds, under cfg.work/name, a memory.db from seed, commits
// it, changes it with edit, commits it again, and checks out both commits
// (the files sqldiff and sqlite3 read).
func twoVersions(ctx context.Context, cfg *config, r *runner, name string, seed uint64, edit func(*sqliteDB) error) (dbVersions, error) {
	v := dbVersions{base: filepath.Join(cfg.work, name)}
	brain := filepath.Join(v.base, "brain")
	v.store = filepath.Join(v.base, "store")
	if err := os.MkdirAll(brain, 0o755); err != nil {
		return v, err
	}
	db, err := genSQLite(ctx, cfg.sqlite3, filepath.Join(brain, "memory.db"), cfg.dbBytes, seed)
	if err != nil {
		return v, err
	}
	if _, _, err := r.run(ctx, v.base, nil, cfg.bin, "--store", v.store, "init"); err != nil {
		return v, err
	}
	for i := range 2 {
		if i > 0 {
			if err := edit(db); err != nil {
				return v, err
			}
		}
		if _, _, err := r.run(ctx, v.base, nil, cfg.bin, "--store", v.store, "commit", "-m", fmt.Sprintf("version %d", i), brain); err != nil {
			return v, err
		}
		if v.versions[i], err = os.ReadFile(db.path); err != nil {
			return v, err
		}
	}
	v.changed = changedPages(v.versions[0], v.versions[1], 4096)
	oldDir, newDir := filepath.Join(v.base, "old"), filepath.Join(v.base, "new")
	for _, c := range [][2]string{{"HEAD~1", oldDir}, {"HEAD", newDir}} {
		if _, _, err := r.run(ctx, v.base, nil, cfg.bin, "--store", v.store, "checkout", c[0], c[1]); err != nil {
			return v, err
		}
	}
	v.oldDB, v.newDB = filepath.Join(oldDir, "memory.db"), filepath.Join(newDir, "memory.db")
	return v, nil
}
