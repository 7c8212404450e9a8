package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/runtime"
	"github.com/agentstate/agentstate/runtime/cliexec"
)

// serve starts 'agentstate --store dir serve' and waits until it answers.
func serve(ctx context.Context, cfg *config, dir string) (stop func(), err error) {
	cmd := exec.CommandContext(ctx, cfg.bin, "--store", dir, "serve")
	cmd.Stderr = cfg.log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop = func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := remote.Dial(ctx, remote.SocketPath(dir), remote.DialOptions{}); err == nil {
			c.Close()
			return stop, nil
		}
	}
	stop()
	return nil, fmt.Errorf("agentstate serve on %s did not answer within 20s", dir)
}

// w10Served: the CLI against a store held by 'agentstate serve', against git.
func w10Served(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	h, err := prepHistory(ctx, cfg, r)
	if err != nil {
		return nil, err
	}
	stop, err := serve(ctx, cfg, h.store)
	if err != nil {
		return nil, err
	}
	defer stop()
	as := func(args ...string) []string {
		return append([]string{cfg.bin, "--store", h.store, "--agent", h.agent}, args...)
	}
	var rows []row
	// log --oneline over the history.
	var a, g []time.Duration
	for range cfg.reps {
		_, d, err := r.run(ctx, cfg.work, nil, as("log", "--oneline")[0], as("log", "--oneline")[1:]...)
		if err != nil {
			return nil, err
		}
		_, dg, err := r.run(ctx, h.git, nil, "git", "log", "--oneline")
		if err != nil {
			return nil, err
		}
		a, g = append(a, d), append(g, dg)
	}
	rows = append(rows, ratioRow("10a", fmt.Sprintf("served log --oneline over %d commits", cfg.keyCommits), median(a), median(g), 0.5))
	// get of one key vs git cat-file.
	key := keyName(cfg.keyCommits - 1)
	a, g = nil, nil
	for range cfg.reps {
		cmd := as("get", key)
		_, d, err := r.run(ctx, cfg.work, nil, cmd[0], cmd[1:]...)
		if err != nil {
			return nil, err
		}
		_, dg, err := r.run(ctx, h.git, nil, "git", "cat-file", "-p", "HEAD:"+key)
		if err != nil {
			return nil, err
		}
		a, g = append(a, d), append(g, dg)
	}
	getMed := median(a)
	rows = append(rows, ratioRow("10b", "served get of one key vs git cat-file -p HEAD:file", getMed, median(g), 1))
	// put of one key (a new value each time) vs git add + git commit.
	val := filepath.Join(cfg.work, "put-value")
	gitFile := filepath.Join(h.git, "bench-put")
	a, g = nil, nil
	for i := range cfg.reps {
		body := []byte("value " + strconv.Itoa(i) + " " + time.Now().String())
		if err := os.WriteFile(val, body, 0o644); err != nil {
			return nil, err
		}
		cmd := as("put", "bench/put", val)
		_, d, err := r.run(ctx, cfg.work, nil, cmd[0], cmd[1:]...)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(gitFile, body, 0o644); err != nil {
			return nil, err
		}
		dg, err := r.seq(ctx, h.git, nil, []string{"git", "add", "bench-put"}, []string{"git", "commit", "-q", "-m", "put"})
		if err != nil {
			return nil, err
		}
		a, g = append(a, d), append(g, dg)
	}
	rows = append(rows, ratioRow("10c", "served put of one key vs git add + git commit", median(a), median(g), 0.5))
	// start-up: a served get against a hello-world Go program.
	hello, err := helloWorld(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var hw []time.Duration
	for range cfg.reps {
		_, d, err := r.run(ctx, cfg.work, nil, hello)
		if err != nil {
			return nil, err
		}
		hw = append(hw, d)
	}
	rw := row{id: "10d", name: "served get vs a hello-world Go program (start-up)", as: fmtDur(getMed), git: fmtDur(median(hw)),
		ratio: ratio(float64(getMed), float64(median(hw))), note: "git column: a hello-world Go program"}
	if fi, err := os.Stat(cfg.bin); err == nil {
		rw.note += fmt.Sprintf("; the front end binary is %s", fmtBytes(fi.Size()))
	}
	rows = append(rows, rw)
	return rows, nil
}

func ratioRow(id, name string, a, g time.Duration, limit float64) row {
	return row{id: id, name: name, as: fmtDur(a), git: fmtDur(g), ratio: ratio(float64(a), float64(g)),
		target: fmt.Sprintf("<= %gx git", limit), verdict: verdictMax(float64(a)/float64(g), limit)}
}

// helloWorld builds a hello-world Go program in the work directory.
func helloWorld(ctx context.Context, cfg *config) (string, error) {
	dir := filepath.Join(cfg.work, "hello")
	bin := filepath.Join(dir, "hello")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\ngo 1.22\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"hello\\n\") }\n"), 0o644)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building hello world: %v\n%s", err, out)
	}
	return bin, nil
}

// w11ServedScale: one-key put into a served 100k-key brain against a 1k-key one.
func w11ServedScale(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	n := 100_000
	if cfg.quick {
		n = 20_000
	}
	times := map[int]time.Duration{}
	for _, keys := range []int{1000, n} {
		dir := filepath.Join(cfg.work, fmt.Sprintf("served-%d", keys))
		os.RemoveAll(dir)
		rp, err := repo.Init(dir, repo.Options{})
		if err != nil {
			return nil, err
		}
		if err := buildKeys(ctx, rp, "main", keys); err != nil {
			rp.Close()
			return nil, err
		}
		rp.Close()
		stop, err := serve(ctx, cfg, dir)
		if err != nil {
			return nil, err
		}
		val := filepath.Join(cfg.work, "scale-value")
		var ds []time.Duration
		for i := range cfg.reps + 1 {
			os.WriteFile(val, []byte(fmt.Sprintf("v%d %d", i, time.Now().UnixNano())), 0o644)
			_, d, err := r.run(ctx, cfg.work, nil, cfg.bin, "--store", dir, "put", "bench/one", val)
			if err != nil {
				stop()
				return nil, err
			}
			if i > 0 { // the first put warms the server's caches
				ds = append(ds, d)
			}
		}
		stop()
		times[keys] = median(ds)
	}
	a, b := times[n], times[1000]
	return []row{{id: "11", name: fmt.Sprintf("served one-key put at %s vs 1k keys", keysLabel(n)), as: fmtDur(a), git: fmtDur(b),
		ratio: ratio(float64(a), float64(b)), target: "<= 2x", verdict: verdictMax(float64(a)/float64(b), 2),
		note: "git column: the same put into the 1k-key brain"}}, nil
}

// w12Readers: a runtime landing tasks while 8 CLI clients read in a loop.
func w12Readers(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	window := 10 * time.Second
	if cfg.quick {
		window = 3 * time.Second
	}
	dir := filepath.Join(cfg.work, "readers")
	os.RemoveAll(dir)
	_, key, _ := ed25519.GenerateKey(nil)
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: key, Sync: true, Serve: runtime.ServeOptions{Exec: cliexec.Exec}})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	land := func(d time.Duration) (int, error) {
		n := 0
		for t0 := time.Now(); time.Since(t0) < d; n++ {
			_, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: fmt.Sprintf("t%d", n)}, func(ctx context.Context, tx *runtime.Tx) error {
				return tx.Put(ctx, fmt.Sprintf("notes/%d.md", n%500), []byte(fmt.Sprintf("task %d at %d", n, time.Now().UnixNano())))
			})
			if err != nil {
				return n, err
			}
		}
		return n, nil
	}
	if _, err := land(500 * time.Millisecond); err != nil { // warm up
		return nil, err
	}
	alone, err := land(window)
	if err != nil {
		return nil, err
	}
	var (
		stopFlag atomic.Bool
		failed   atomic.Int64
		mu       sync.Mutex
		lat      []time.Duration
		wg       sync.WaitGroup
	)
	cmds := [][]string{{"log", "-n", "5", "--oneline"}, {"get", "notes/1.md"}, {"show", "HEAD"}, {"status"}}
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; !stopFlag.Load(); i++ {
				args := append([]string{"--store", dir, "--agent", "lumen"}, cmds[i%len(cmds)]...)
				cmd := exec.CommandContext(ctx, cfg.bin, args...)
				t0 := time.Now()
				out, err := cmd.CombinedOutput()
				d := time.Since(t0)
				if err != nil {
					failed.Add(1)
					fmt.Fprintf(cfg.log, "bench: reader: agentstate %v: %v: %s\n", args, err, tail(string(out)))
					continue
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	with, lerr := land(window)
	stopFlag.Store(true)
	wg.Wait()
	if lerr != nil {
		return nil, lerr
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(p*float64(len(lat))))]
	}
	ra, rw := float64(alone)/window.Seconds(), float64(with)/window.Seconds()
	return []row{
		{id: "12a", name: "runtime tasks/s (Sync) with 8 CLI readers vs alone", as: fmt.Sprintf("%.0f/s", rw), git: fmt.Sprintf("%.0f/s", ra),
			ratio: fmt.Sprintf("%.2fx", rw/ra), target: ">= 0.8x", verdict: verdictMin(rw/ra, 0.8),
			note: "git column: the runtime alone; readers loop over log -n 5, get, show HEAD, status"},
		{id: "12b", name: "CLI reader commands beside the runtime", as: fmt.Sprintf("%d ok, %d failed", len(lat), failed.Load()),
			ratio: fmt.Sprintf("p50 %s, p99 %s", fmtDur(pct(0.5)), fmtDur(pct(0.99))), target: "0 failed",
			verdict: map[bool]string{true: "met", false: fmt.Sprintf("MISSED: %d failed", failed.Load())}[failed.Load() == 0]},
	}, nil
}
