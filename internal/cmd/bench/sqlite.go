package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// w9SQLite stores dbVersions versions of a dbBytes SQLite memory.db, each
// with about 1% of its pages changed, in agentstate (CLI commits), git (add
// and commit each version, then git gc) and restic (one backup per
// version), and compares the bytes each keeps on disk (agentstate's after
// agentstate gc, which packs the versions, git's after git gc).
func w9SQLite(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(cfg.work, "sqlite")
	brain := filepath.Join(base, "brain")
	store, gitDir, resticRepo := filepath.Join(base, "store"), filepath.Join(base, "git"), filepath.Join(base, "restic")
	if err := os.MkdirAll(brain, 0o755); err != nil {
		return nil, err
	}
	dbPath := filepath.Join(brain, "memory.db")
	db, err := genSQLite(ctx, cfg.sqlite3, dbPath, cfg.dbBytes, 9)
	if err != nil {
		return nil, err
	}
	prev, err := os.ReadFile(dbPath)
	if err != nil {
		return nil, err
	}
	pageSize := int(binary.BigEndian.Uint16(prev[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := len(prev) / pageSize
	// About 1% of pages per version: scattered row rewrites plus FTS5 inserts.
	updates, inserts := max(pages/100*4/5, 1), 8

	if _, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "init"); err != nil {
		return nil, err
	}
	git := func(args ...string) []string {
		return append([]string{"git", "--git-dir=" + gitDir, "--work-tree=" + brain}, args...)
	}
	if _, err := r.seq(ctx, base, nil, []string{"git", "init", "-q", "--bare", gitDir}); err != nil {
		return nil, err
	}
	if cfg.restic != "" {
		if _, _, err := r.run(ctx, base, nil, cfg.restic, "-r", resticRepo, "init"); err != nil {
			return nil, err
		}
	}
	var asT, gitT, resT []time.Duration
	changedBytes := int64(0)
	first := int64(len(prev))
	for v := range cfg.dbVersions {
		if v > 0 {
			if err := db.mutate(ctx, updates, inserts); err != nil {
				return nil, err
			}
			cur, err := os.ReadFile(dbPath)
			if err != nil {
				return nil, err
			}
			changedBytes += int64(changedPages(prev, cur, pageSize) * pageSize)
			prev = cur
		}
		msg := fmt.Sprintf("version %d", v)
		_, d, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "commit", "-m", msg, brain)
		if err != nil {
			return nil, err
		}
		asT = append(asT, d)
		d, err = r.seq(ctx, base, nil, git("add", "memory.db"), git("commit", "-q", "-m", msg))
		if err != nil {
			return nil, err
		}
		gitT = append(gitT, d)
		if cfg.restic != "" {
			_, d, err := r.run(ctx, brain, nil, cfg.restic, "-r", resticRepo, "backup", "-q", ".")
			if err != nil {
				return nil, err
			}
			resT = append(resT, d)
		}
	}
	t0 := time.Now()
	if _, err := r.seq(ctx, base, nil, git("gc", "-q")); err != nil {
		return nil, err
	}
	gcTime := time.Since(t0)
	// agentstate's own gc packs a value's versions together (docs/format.md,
	// "Packs"): measured after it, as git's store is after git gc.
	_, asGCTime, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "gc")
	if err != nil {
		return nil, err
	}
	asBytes, err := diskUsage(store)
	if err != nil {
		return nil, err
	}
	gitBytes, err := diskUsage(filepath.Join(gitDir, "objects"))
	if err != nil {
		return nil, err
	}
	resBytes := int64(0)
	resCell := "unavailable"
	if cfg.restic != "" {
		if resBytes, err = diskUsage(resticRepo); err != nil {
			return nil, err
		}
		resCell = fmtBytes(resBytes)
	}
	ideal := first + changedBytes
	limit := float64(ideal) * 1.5
	verdict := verdictMax(float64(asBytes), limit)
	if verdict == "met" {
		switch {
		case asBytes >= gitBytes:
			verdict = fmt.Sprintf("MISSED: %.2fx git", float64(asBytes)/float64(gitBytes))
		case cfg.restic != "" && asBytes >= resBytes:
			verdict = fmt.Sprintf("MISSED: %.2fx restic", float64(asBytes)/float64(resBytes))
		}
	}
	note := fmt.Sprintf("one copy %s + changed pages %s (%d-byte pages, %.2f%% changed per version on average) = %s; target <= 1.5x that = %s. Median time per version: agentstate commit %s, git add+commit %s",
		fmtBytes(first), fmtBytes(changedBytes), pageSize, 100*float64(changedBytes)/float64(pageSize)/float64(max(cfg.dbVersions-1, 1))/float64(pages),
		fmtBytes(ideal), fmtBytes(int64(limit)), fmtDur(median(asT)), fmtDur(median(gitT)))
	if cfg.restic != "" {
		note += ", restic backup " + fmtDur(median(resT))
	} else {
		note += "; restic not installed, its comparison skipped"
	}
	note += fmt.Sprintf("; git gc took %s, agentstate gc %s (both stores measured after their gc)", fmtDur(gcTime), fmtDur(asGCTime))
	return []row{{
		id: "9", name: fmt.Sprintf("bytes stored, %d versions of a %s memory.db", cfg.dbVersions, fmtBytes(first)),
		as: fmtBytes(asBytes), git: fmtBytes(gitBytes), restic: resCell, ratio: ratio(float64(asBytes), float64(gitBytes)),
		target: "<= 1.5x (copy+changes), < git, < restic", verdict: verdict, note: note,
	}}, nil
}
