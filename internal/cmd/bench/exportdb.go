package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
)

// w30ExportDB: the library's tar of a brain holding one SQLite memory.db
// (64 MiB, 16 quick; stored as a chunked value, one chunk per page), to
// io.Discard, with its chunks read ahead (what WriteTar does). In the same
// run: the same value streamed a chunk at a time with objects.OpenValue
// (what the tar did before it read ahead) and sha256 of the same bytes.
func w30ExportDB(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	if cfg.sqlite3 == "" {
		return []row{{id: "30", name: "export of a brain holding a memory.db", note: "skipped: sqlite3 not installed"}}, nil
	}
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(cfg.work, "exportdb")
	brain, store := filepath.Join(base, "brain"), filepath.Join(base, "store")
	if err := os.MkdirAll(brain, 0o755); err != nil {
		return nil, err
	}
	db, err := genSQLite(ctx, cfg.sqlite3, filepath.Join(brain, "memory.db"), cfg.dbBytes, 30)
	if err != nil {
		return nil, err
	}
	content, err := os.ReadFile(db.path)
	if err != nil {
		return nil, err
	}
	if _, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "init"); err != nil {
		return nil, err
	}
	if _, _, err := r.run(ctx, base, nil, cfg.bin, "--store", store, "commit", "-m", "db", brain); err != nil {
		return nil, err
	}
	rp, err := repo.Open(store, repo.Options{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer rp.Close()
	_, hc, err := rp.HeadCommit(ctx, "main")
	if err != nil || hc == nil {
		return nil, fmt.Errorf("exportdb store has no HEAD (%v)", err)
	}
	t, err := objects.LoadTree(ctx, rp.Blocks, hc.Tree)
	if err != nil {
		return nil, err
	}
	v, ok, err := t.Get(ctx, "memory.db")
	if err != nil || !ok {
		return nil, fmt.Errorf("exportdb: memory.db not in the tree (%v)", err)
	}
	var tars, seq, shas []time.Duration
	for range cfg.reps {
		t0 := time.Now()
		bundle, err := objects.TreeBundleHash(ctx, rp.Blocks, hc.Tree)
		if err != nil {
			return nil, err
		}
		if _, err := snapshot.WriteTar(ctx, io.Discard, rp.Blocks, hc.Tree, bundle, nil); err != nil {
			return nil, err
		}
		tars = append(tars, time.Since(t0))
		t0 = time.Now()
		rd, _, err := objects.OpenValue(ctx, rp.Blocks, v)
		if err != nil {
			return nil, err
		}
		if _, err := io.Copy(io.Discard, rd); err != nil {
			return nil, err
		}
		seq = append(seq, time.Since(t0))
		t0 = time.Now()
		sha256.Sum256(content)
		shas = append(shas, time.Since(t0))
	}
	total := int64(len(content))
	a, s, h := median(tars), median(seq), median(shas)
	return []row{
		{id: "30", name: fmt.Sprintf("library WriteTar of a brain holding a %s memory.db (%d-byte pages), to io.Discard", fmtBytes(total), 4096), as: fmt.Sprintf("%.0f MB/s", mbs(total, a)),
			ratio: ratio(float64(a), float64(h)),
			note:  fmt.Sprintf("chunks read ahead on every core; ratio: against sha256 of the same bytes in this run (%.0f MB/s, one core)", mbs(total, h))},
		{id: "30s", name: "  the same value read a chunk at a time (objects.OpenValue)", as: fmt.Sprintf("%.0f MB/s", mbs(total, s)), ratio: ratio(float64(s), float64(a)),
			note: "ratio: its time over the tar's (row 30)"},
	}, nil
}
