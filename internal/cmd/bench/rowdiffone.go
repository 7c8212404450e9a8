package main

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// w29RowDiffOne: 'agentstate diff --stat' and '--sql' between two commits
// of a dbBytes memory.db one row apart (the change an agent's task makes
// most often), against sqldiff on the two files checked out, each a new
// process: the diff's cost is to be in proportion to the change (the chunk
// list nodes both versions share are passed over), where sqldiff reads
// both files whole. The --sql output is checked to be the one UPDATE.
func w29RowDiffOne(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	sqldiff, err := lookPath("sqldiff")
	if err != nil {
		return []row{{id: "29", name: "diff of a one-row change vs sqldiff", note: "skipped: sqldiff not installed (apt-get install -y sqlite3-tools)"}}, nil
	}
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	v, err := twoVersions(ctx, cfg, r, "rowdiffone", 29, func(db *sqliteDB) error {
		return db.exec(ctx, fmt.Sprintf("UPDATE memories SET created=created+1 WHERE id=%d;", db.rows/2))
	})
	if err != nil {
		return nil, err
	}
	base, store, versions, changed, oldDB, newDB := v.base, v.store, v.versions, v.changed, v.oldDB, v.newDB
	sql, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "diff", "--sql", "HEAD~1", "HEAD")
	if err != nil {
		return nil, err
	}
	if n := strings.Count(sql, "UPDATE "); n != 1 {
		return nil, fmt.Errorf("diff --sql of a one-row change printed %d UPDATEs: %q", n, tail(sql))
	}
	st := func(int) (time.Duration, error) {
		_, d, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "diff", "--stat", "HEAD~1", "HEAD")
		return d, err
	}
	sq := func(int) (time.Duration, error) {
		_, d, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "diff", "--sql", "HEAD~1", "HEAD")
		return d, err
	}
	g := func(int) (time.Duration, error) {
		_, d, err := r.run(ctx, base, nil, sqldiff, oldDB, newDB)
		return d, err
	}
	stm, gm, err := pairN(cfg.reps, st, g)
	if err != nil {
		return nil, err
	}
	sqm, gm2, err := pairN(cfg.reps, sq, g)
	if err != nil {
		return nil, err
	}
	size := fmtBytes(int64(len(versions[1])))
	pages := len(versions[1]) / 4096
	note := fmt.Sprintf("%d of %d pages changed; sqldiff on the two checked-out files: %s / %s (checkouts not counted); a new process each run", changed, pages, fmtDur(gm), fmtDur(gm2))
	return []row{
		{id: "29", name: fmt.Sprintf("diff --stat of two versions of a %s memory.db one row apart", size),
			as: fmtDur(stm), git: "-", restic: "-", ratio: ratio(float64(stm), float64(gm)), target: "-", verdict: "-", note: note},
		{id: "29b", name: "diff --sql of the same",
			as: fmtDur(sqm), git: "-", restic: "-", ratio: ratio(float64(sqm), float64(gm2)), target: "-", verdict: "-"},
	}, nil
}
