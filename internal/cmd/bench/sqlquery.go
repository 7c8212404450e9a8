package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// w16SQLQuery: the first 'agentstate sql' query (SELECT count(*) and a
// lookup by primary key, in one statement) against memory.db at an old
// commit, read from the store with no checkout, against the sqlite3 shell
// on a checked-out copy (the checkout not counted). Each run is a new
// process, so each is the first query its SQLite sees. The query's time
// limit is raised: on a loaded machine the default (10 s) ends a timing.
func w16SQLQuery(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(cfg.work, "sqlquery")
	brain, store, old := filepath.Join(base, "brain"), filepath.Join(base, "store"), filepath.Join(base, "old")
	if err := os.MkdirAll(brain, 0o755); err != nil {
		return nil, err
	}
	db, err := genSQLite(ctx, cfg.sqlite3, filepath.Join(brain, "memory.db"), cfg.dbBytes, 15)
	if err != nil {
		return nil, err
	}
	if _, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "init"); err != nil {
		return nil, err
	}
	// The old commit, then a newer one about 1% of pages away.
	for v := range 2 {
		if v > 0 {
			if err := db.mutate(ctx, max(int(cfg.dbBytes/4096/125), 1), 8); err != nil {
				return nil, err
			}
		}
		if _, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "commit", "-m", fmt.Sprintf("version %d", v), brain); err != nil {
			return nil, err
		}
	}
	if _, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "checkout", "HEAD~1", old); err != nil {
		return nil, err
	}
	fi, err := os.Stat(filepath.Join(old, "memory.db"))
	if err != nil {
		return nil, err
	}
	q := fmt.Sprintf("SELECT (SELECT count(*) FROM memories), (SELECT created FROM memories WHERE id = %d)", db.rows/2)
	var asOut, sqOut string
	a := func(int) (time.Duration, error) {
		out, d, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "sql", "--timeout", "10m", "HEAD~1:memory.db", q)
		asOut = out
		return d, err
	}
	g := func(int) (time.Duration, error) {
		out, d, err := r.run(ctx, base, nil, cfg.sqlite3, "-readonly", filepath.Join(old, "memory.db"), q)
		sqOut = out
		return d, err
	}
	am, sm, err := pairN(max(cfg.reps, 20), a, g)
	if err != nil {
		return nil, err
	}
	if asOut != sqOut || asOut == "" {
		return nil, fmt.Errorf("agentstate sql printed %q, sqlite3 on the checkout %q", asOut, sqOut)
	}
	const limit = 2.0
	rt := row{id: "16", name: fmt.Sprintf("first sql query (count(*) + a primary-key lookup) at an old commit of a %s memory.db", fmtBytes(fi.Size())),
		as: fmtDur(am), git: "-", restic: "-", ratio: ratio(float64(am), float64(sm)),
		target: fmt.Sprintf("<= %gx sqlite3 on a checkout", limit), verdict: verdictMax(float64(am)/float64(sm), limit),
		note: fmt.Sprintf("sqlite3 -readonly on the checked-out file: %s (the checkout not counted); agentstate sql reads the pages from the store (a new process each run, the store opened unserved); both print %q", fmtDur(sm), asOut)}
	return []row{rt}, nil
}
