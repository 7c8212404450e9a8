package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentstate/agentstate/objects"
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
	// The floor: the pages count(*) reads (the memories table's, from
	// SQLite's dbstat), read from the same store by a program linking
	// only Badger, and re-hashed.
	keys, err := tablePageKeys(ctx, r, base, cfg.sqlite3, filepath.Join(old, "memory.db"), "memories")
	if err != nil {
		return nil, err
	}
	bfloor, err := buildFloor(ctx, cfg, "badgerfloor")
	if err != nil {
		return nil, err
	}
	keysFile := filepath.Join(base, "page-keys")
	if err := os.WriteFile(keysFile, []byte("hash\n"+strings.Join(keys, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	var flOut string
	fl := func(int) (time.Duration, error) {
		out, d, err := r.run(ctx, base, nil, bfloor, store, "@"+keysFile)
		flOut = out
		return d, err
	}
	fm, sm2, err := pairN(max(cfg.reps, 20), fl, g)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(flOut) != strconv.Itoa(len(keys)) {
		return nil, fmt.Errorf("badgerfloor read %q blocks, want %d", strings.TrimSpace(flOut), len(keys))
	}
	const limit = 2.0
	fr := float64(fm) / float64(sm2)
	verdict := verdictMax(float64(am)/float64(sm), limit)
	if fr > limit && am > time.Duration(limit*float64(sm)) {
		verdict = fmt.Sprintf("below this machine's floor (16f %.2fx > %gx)", fr, limit)
	}
	rt := row{id: "16", name: fmt.Sprintf("first sql query (count(*) + a primary-key lookup) at an old commit of a %s memory.db", fmtBytes(fi.Size())),
		as: fmtDur(am), git: "-", restic: "-", ratio: ratio(float64(am), float64(sm)),
		target: fmt.Sprintf("<= %gx sqlite3 on a checkout", limit), verdict: verdict,
		note: fmt.Sprintf("sqlite3 -readonly on the checked-out file: %s (the checkout not counted); agentstate sql reads the pages from the store (a new process each run, the store opened unserved); both print %q", fmtDur(sm), asOut)}
	rf := row{id: "16f", name: fmt.Sprintf("  floor of 16: a program linking only Badger: start, read-only open, the %d pages count(*) reads, read by key and re-hashed on every core", len(keys)),
		as: fmtDur(fm), git: "-", restic: "-", ratio: ratio(float64(fm), float64(sm2)),
		note: fmt.Sprintf("ratio: against sqlite3 -readonly on the checked-out file, timed alternately with it (%s); internal/cmd/bench/badgerfloor with the store's read-only options; every page of the database is its own block (docs/format.md), which the store re-hashes as it reads it; no SQLite", fmtDur(sm2))}
	return []row{rt, rf}, nil
}

// tablePageKeys returns the store keys (hex) of the blocks holding the
// pages of table in the SQLite file db, in page order: the pages' numbers
// from SQLite's dbstat table, each page's block its bytes as a raw block
// (a database's chunks are its pages, docs/format.md).
func tablePageKeys(ctx context.Context, r *runner, dir, sqlite3, db, table string) ([]string, error) {
	out, _, err := r.run(ctx, dir, nil, sqlite3, "-readonly", db, fmt.Sprintf("SELECT pageno FROM dbstat WHERE name = '%s' ORDER BY pageno", table))
	if err != nil {
		return nil, err
	}
	content, err := os.ReadFile(db)
	if err != nil {
		return nil, err
	}
	page := objects.SQLitePageSize(content)
	if page == 0 {
		return nil, fmt.Errorf("%s: not a SQLite database", db)
	}
	var keys []string
	for _, f := range strings.Fields(out) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n*page > len(content) {
			return nil, fmt.Errorf("dbstat: page %q of %s", f, db)
		}
		c := objects.NewValue(content[(n-1)*page : n*page]).CID
		keys = append(keys, hex.EncodeToString(append([]byte{'b'}, c.Bytes()...)))
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("dbstat lists no pages of %s in %s", table, db)
	}
	return keys, nil
}
