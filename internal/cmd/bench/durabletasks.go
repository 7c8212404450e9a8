package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentstate/agentstate/runtime"
)

// w24DurableTasks: one writer lands tasks on a runtime with Options.Sync,
// each one tx.Put of a note (500 notes, the brain of workload 12), and
// every RunTask is timed: tasks/s, p50 and p99 latency. In the same run:
// the same tasks without Sync (what the task costs without the disk) and
// the machine's floor for one durable write (a 1-byte write and an fsync
// of a file on the same file system, as many times). Target: >= 1000
// tasks/s.
func w24DurableTasks(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	tasks := 5000
	if cfg.quick {
		tasks = 1000
	}
	base := filepath.Join(cfg.work, "durable")
	type result struct {
		rate     float64
		p50, p99 time.Duration
	}
	run := func(name string, sync bool) (result, error) {
		store := filepath.Join(base, name)
		os.RemoveAll(store)
		seed := [32]byte{24}
		rt, err := runtime.Open(ctx, runtime.Options{Store: store, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true, Sync: sync})
		if err != nil {
			return result{}, err
		}
		defer rt.Close()
		put := func(i int) func(context.Context, *runtime.Tx) error {
			return func(ctx context.Context, tx *runtime.Tx) error {
				return tx.Put(ctx, fmt.Sprintf("notes/%d.md", i%500), fmt.Appendf(nil, "task %d: the agent learned something\n", i))
			}
		}
		for i := range 500 { // the brain, untimed
			if _, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: fmt.Sprintf("seed%d", i)}, put(i)); err != nil {
				return result{}, err
			}
		}
		lat := make([]time.Duration, 0, tasks)
		t0 := time.Now()
		for i := range tasks {
			t := time.Now()
			if _, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: fmt.Sprintf("t%d", i)}, put(500+i)); err != nil {
				return result{}, err
			}
			lat = append(lat, time.Since(t))
		}
		total := time.Since(t0)
		slices.Sort(lat)
		return result{rate: float64(tasks) / total.Seconds(), p50: lat[len(lat)/2], p99: lat[len(lat)*99/100]}, nil
	}
	// The floor: one small durable write, fsync'd, as many times as tasks.
	floor := func() (float64, error) {
		if err := os.MkdirAll(base, 0o755); err != nil {
			return 0, err
		}
		f, err := os.Create(filepath.Join(base, "fsync-floor"))
		if err != nil {
			return 0, err
		}
		defer os.Remove(f.Name())
		defer f.Close()
		t0 := time.Now()
		for i := range tasks {
			if _, err := f.WriteAt([]byte{byte(i)}, int64(i%4096)*64); err != nil {
				return 0, err
			}
			if err := f.Sync(); err != nil {
				return 0, err
			}
		}
		return float64(tasks) / time.Since(t0).Seconds(), nil
	}
	f1, err := floor()
	if err != nil {
		return nil, err
	}
	durable, err := run("sync", true)
	if err != nil {
		return nil, err
	}
	plain, err := run("nosync", false)
	if err != nil {
		return nil, err
	}
	f2, err := floor()
	if err != nil {
		return nil, err
	}
	fl := (f1 + f2) / 2
	return []row{
		{id: "24", name: fmt.Sprintf("runtime, %d tasks of one durable write, one writer (Sync)", tasks), as: fmt.Sprintf("%.0f tasks/s", durable.rate),
			ratio: fmt.Sprintf("p50 %s, p99 %s", fmtDur(durable.p50), fmtDur(durable.p99)), target: ">= 1000 tasks/s", verdict: verdictMin(durable.rate, 1000),
			note: fmt.Sprintf("floor in the same run: %.0f fsync'd 1-byte writes/s on the same file system (before %.0f, after %.0f); one task is one fsync'd store write (its commit, landing and the previous receipt)", fl, f1, f2)},
		{id: "24n", name: "  the same without Sync", as: fmt.Sprintf("%.0f tasks/s", plain.rate),
			ratio: fmt.Sprintf("p50 %s, p99 %s", fmtDur(plain.p50), fmtDur(plain.p99))},
		{id: "24f", name: "  floor: fsync'd 1-byte writes, one at a time", as: fmt.Sprintf("%.0f/s", fl), ratio: ratio(fl, durable.rate),
			note: "ratio: how many durable tasks/s the disk alone would allow, over the runtime's"},
	}, nil
}
