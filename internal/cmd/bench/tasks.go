package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/runtime"
)

// w15Tasks: a runtime lands 10,000 tasks (1,000 with -quick), each two
// puts (a note of its own and a shared counter), every tenth a second
// attempt of the task before it; then 'agentstate log --tasks' (one entry
// per landed task, read from the task records the store keeps with each
// receipt) is timed, and with --verify (each receipt's signature and bundle
// hash checked), through a server holding the store, and on a copy of the
// store without its task records (as a store written before them: the
// history walked and every receipt parsed), alternately with the first.
// The target: log --tasks over 10,000 tasks in at most 0.5 s.
func w15Tasks(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	tasks := 10_000
	if cfg.quick {
		tasks = 1_000
	}
	store := filepath.Join(cfg.work, "tasks", "store")
	seed := [32]byte{15}
	rt, err := runtime.Open(ctx, runtime.Options{Store: store, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	for i := 1; i <= tasks; i++ {
		task := runtime.Task{ID: "task-" + strconv.Itoa(i), Attempt: "1", Model: "bench"}
		if i%10 == 0 {
			task = runtime.Task{ID: "task-" + strconv.Itoa(i-1), Attempt: "2", Model: "bench"}
		}
		if _, err := rt.RunTask(ctx, "lumen", task, func(ctx context.Context, tx *runtime.Tx) error {
			if err := tx.Put(ctx, fmt.Sprintf("notes/%02d/task-%05d.md", i%100, i), []byte(fmt.Sprintf("# task %d\n", i))); err != nil {
				return err
			}
			return tx.Put(ctx, "state/counter", []byte(strconv.Itoa(i)))
		}); err != nil {
			rt.Close()
			return nil, err
		}
	}
	if err := rt.Close(); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.log, "bench: %d tasks landed in %s\n", tasks, time.Since(t0).Round(time.Millisecond))
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	once := func(store string, args ...string) (string, time.Duration, error) {
		out, d, err := r.run(ctx, cfg.work, nil, cfg.bin, append([]string{"--store", store, "--agent", "lumen", "log", "--tasks"}, args...)...)
		if err != nil {
			return "", 0, err
		}
		if n := strings.Count("\n"+out, "\ntask "); n != tasks {
			return "", 0, fmt.Errorf("log --tasks %v listed %d tasks, want %d", args, n, tasks)
		}
		if strings.Contains(strings.Join(args, " "), "--verify") && strings.Count(out, "Receipt: verified") != tasks {
			return "", 0, fmt.Errorf("log --tasks --verify verified %d of %d receipts", strings.Count(out, "Receipt: verified"), tasks)
		}
		return out, d, nil
	}
	time1 := func(args ...string) (time.Duration, error) {
		var ds []time.Duration
		for range cfg.reps {
			_, d, err := once(store, args...)
			if err != nil {
				return 0, err
			}
			ds = append(ds, d)
		}
		return median(ds), nil
	}
	// The same store without task records (as one written before them):
	// the listing walks the history and parses every receipt. Timed
	// alternately with the records' listing, so that both see the same
	// load; the two print the same bytes.
	walkStore := store + "-walk"
	if _, _, err := r.run(ctx, cfg.work, nil, "cp", "-a", store, walkStore); err != nil {
		return nil, err
	}
	wr, err := repo.Open(walkStore, repo.Options{})
	if err != nil {
		return nil, err
	}
	derr := wr.Storage.DeleteMetaPrefix(ctx, repo.TaskRecordPrefix)
	if cerr := wr.Close(); derr == nil {
		derr = cerr
	}
	if derr != nil {
		return nil, derr
	}
	// Each also by its CPU time (wall time on this shared machine moves
	// with the other processes' load; CPU time much less).
	var plains, walks, plainCPU, walkCPU []time.Duration
	for range cfg.reps {
		out, d, cpu, err := runCPU(ctx, cfg, r, store)
		if err != nil {
			return nil, err
		}
		wout, wd, wcpu, err := runCPU(ctx, cfg, r, walkStore)
		if err != nil {
			return nil, err
		}
		if n := strings.Count("\n"+out, "\ntask "); n != tasks {
			return nil, fmt.Errorf("log --tasks listed %d tasks, want %d", n, tasks)
		}
		if wout != out {
			return nil, fmt.Errorf("log --tasks from the task records and by the walk differ")
		}
		plains, walks = append(plains, d), append(walks, wd)
		plainCPU, walkCPU = append(plainCPU, cpu), append(walkCPU, wcpu)
	}
	plain, walked := median(plains), median(walks)
	verified, err := time1("--verify")
	if err != nil {
		return nil, err
	}
	// The same store held by a server (as a runtime holds its brain): its
	// caches are warm after the first command, which is not timed.
	stopServe, err := serve(ctx, cfg, r, store)
	if err != nil {
		return nil, err
	}
	if _, err := time1(); err != nil { // warm-up
		stopServe()
		return nil, err
	}
	served, err := time1()
	stopServe()
	if err != nil {
		return nil, err
	}
	return []row{
		{id: "15", name: fmt.Sprintf("log --tasks over %d tasks (%d commits)", tasks, 2*tasks), as: fmtDur(plain),
			target: "<= 0.5 s", verdict: verdictMax(plain.Seconds(), 0.5)},
		{id: "15w", name: "  the same listing walking the history (a store without task records)", as: fmtDur(walked),
			note: fmt.Sprintf("the history walked and every receipt parsed, as before task records; timed alternately with row 15: records %.2fx the walk in wall time; CPU (user+system, median) %s from the records against %s walking (%.2fx)",
				plain.Seconds()/walked.Seconds(), fmtDur(median(plainCPU)), fmtDur(median(walkCPU)), median(plainCPU).Seconds()/median(walkCPU).Seconds())},
		{id: "15", name: fmt.Sprintf("log --tasks --verify over %d tasks", tasks), as: fmtDur(verified), note: "every receipt's signature and bundle hash checked"},
		{id: "15", name: fmt.Sprintf("log --tasks over %d tasks, served", tasks), as: fmtDur(served), target: "<= 0.5 s", verdict: verdictMax(served.Seconds(), 0.5),
			note: "agentstate serve holds the store; the first command (untimed) fills its caches"},
	}, nil
}

// runCPU runs log --tasks on store once and returns its output, wall
// time and CPU time (user + system).
func runCPU(ctx context.Context, cfg *config, r *runner, store string) (string, time.Duration, time.Duration, error) {
	cmd := exec.CommandContext(ctx, cfg.bin, "--store", store, "--agent", "lumen", "log", "--tasks")
	cmd.Dir, cmd.Env = cfg.work, r.env
	outf, err := os.CreateTemp("", "bench-out-")
	if err != nil {
		return "", 0, 0, err
	}
	defer os.Remove(outf.Name())
	defer outf.Close()
	cmd.Stdout = outf
	t0 := time.Now()
	err = cmd.Run()
	d := time.Since(t0)
	if err != nil {
		return "", d, 0, fmt.Errorf("log --tasks on %s: %w", store, err)
	}
	out, err := os.ReadFile(outf.Name())
	ps := cmd.ProcessState
	return string(out), d, ps.UserTime() + ps.SystemTime(), err
}
