package main

import (
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/runtime"
)

// w13Retention: retentionTasks runtime tasks, each rewriting a memory.db of
// dbBytes with 1% of its pages changed (a SQLite-shaped file: header, 4 KiB
// pages), with no policy; then forget --keep-last 100 and prune, timed,
// with the store's size on disk sampled throughout. The target: after the
// forget, at most 1.2x one copy plus 100 tasks' changed pages.
func w13Retention(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	const keep, pageSize = 100, 4096
	tasks, dbBytes := 10_000, int64(64<<20)
	if cfg.quick {
		tasks, dbBytes = 1000, 16<<20
	}
	dir := filepath.Join(cfg.work, "retention", "store")
	seed := [32]byte{13}
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		return nil, err
	}
	closed := false
	defer func() {
		if !closed {
			rt.Close()
		}
	}()
	pages := int(dbBytes / pageSize)
	db := make([]byte, dbBytes)
	rng := rand.New(rand.NewPCG(13, 13))
	for i := range db {
		db[i] = byte(rng.Uint32())
	}
	copy(db, "SQLite format 3\x00")
	binary.BigEndian.PutUint16(db[16:18], pageSize)
	perTask := max(pages/100, 1)
	t0 := time.Now()
	for i := range tasks {
		if i > 0 {
			for range perTask {
				p := 1 + rng.IntN(pages-1) // page 0 holds the header
				off := p*pageSize + rng.IntN(pageSize-8)
				binary.LittleEndian.PutUint64(db[off:], rng.Uint64())
			}
		}
		if _, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: fmt.Sprint("t", i)}, func(ctx context.Context, tx *runtime.Tx) error {
			return tx.Put(ctx, "memory.db", db)
		}); err != nil {
			return nil, fmt.Errorf("task %d: %w", i, err)
		}
	}
	taskTime := time.Since(t0)
	if err := rt.Close(); err != nil {
		return nil, err
	}
	closed = true
	before, err := diskUsage(dir)
	if err != nil {
		return nil, err
	}
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		return nil, err
	}
	// Sample the size on disk while forget and prune run.
	var peak atomic.Int64
	peak.Store(before)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if n, err := diskUsage(dir); err == nil && n > peak.Load() {
					peak.Store(n)
				}
			}
		}
	}()
	t1 := time.Now()
	rep, ferr := r.Forget(ctx, "lumen", repo.Policy{Last: keep}, false)
	forgetTime := time.Since(t1)
	close(stop)
	wg.Wait()
	if cerr := r.Close(); ferr == nil {
		ferr = cerr
	}
	if ferr != nil {
		return nil, ferr
	}
	after, err := diskUsage(dir)
	if err != nil {
		return nil, err
	}
	ideal := dbBytes + int64(keep)*int64(perTask)*pageSize
	name := fmt.Sprintf("%d tasks on a %s memory.db (1%% pages each), then forget --keep-last %d", tasks, fmtBytes(dbBytes), keep)
	return []row{
		{id: "13a", name: name, as: fmtBytes(after), git: fmtBytes(before), ratio: ratio(float64(after), float64(ideal)),
			target: "<= 1.2x copy+100 tasks", verdict: verdictMax(float64(after), 1.2*float64(ideal)),
			note: fmt.Sprintf("git column: the same store before the forget (no policy). One copy plus %d tasks' changed pages = %s; the tasks took %s (%s each); forget cut %d operations and %d commits, deleted %d blocks (%s)",
				keep, fmtBytes(ideal), fmtDur(taskTime), fmtDur(taskTime/time.Duration(tasks)), rep.CutOps, rep.CutCommits, rep.GC.Deleted, fmtBytes(rep.GC.BytesFreed))},
		{id: "13b", name: "  forget + prune: time; extra disk space while it ran", as: fmtDur(forgetTime), git: fmtBytes(max(peak.Load()-before, 0)),
			note: "git column: the peak size on disk during forget and prune (sampled every 20 ms) minus the size before"},
	}, nil
}
