package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"io"
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

// Workloads 10-12: the store held by a server ('agentstate serve', or a
// runtime embedded in a Go program), the agentstate command handing its
// command line to that server.

// serve starts 'agentstate --store dir serve' in the background and waits
// until its socket accepts a connection; stop ends it with SIGTERM.
func serve(ctx context.Context, cfg *config, r *runner, dir string) (stop func(), err error) {
	cmd := exec.CommandContext(ctx, cfg.bin, "--store", dir, "serve")
	cmd.Env = r.env
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stop = func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case <-done:
			return nil, fmt.Errorf("agentstate serve on %s exited: %s", dir, tail(errb.String()))
		default:
		}
		if c, err := remote.Dial(ctx, remote.SocketPath(dir), remote.DialOptions{}); err == nil {
			c.Close()
			return stop, nil
		}
	}
	stop()
	return nil, fmt.Errorf("agentstate serve on %s did not answer within 20s: %s", dir, tail(errb.String()))
}

// timed is one measured operation; i counts from 0, and run 0 is an
// untimed warm-up (a server's first command fills its caches, git's first
// fills the page cache).
type timed func(i int) (time.Duration, error)

// pair runs a and g alternately, one warm-up each then cfg.reps timed
// runs, and returns their medians.
func pair(cfg *config, a, g timed) (am, gm time.Duration, err error) {
	return pairN(cfg.reps, a, g)
}

// startReps is how many times pairN runs the commands that take a few
// milliseconds (a served get or log, git cat-file or log, a hello-world
// program): on a
// small shared machine one such run varies by a quarter or more, and a
// median of a handful cannot tell a few per cent apart.
func startReps(cfg *config) int {
	if cfg.quick {
		return max(cfg.reps, 60)
	}
	return max(cfg.reps, 300)
}

// pairN is pair with n timed runs of each.
func pairN(n int, a, g timed) (am, gm time.Duration, err error) {
	var as, gs []time.Duration
	for i := range n + 1 {
		da, err := a(i)
		if err != nil {
			return 0, 0, err
		}
		var dg time.Duration
		if g != nil {
			if dg, err = g(i); err != nil {
				return 0, 0, err
			}
		}
		if i > 0 {
			as, gs = append(as, da), append(gs, dg)
		}
	}
	return median(as), median(gs), nil
}

// inProcess runs one command line the way a server does (cliexec.Exec on
// an open repository), output discarded: the server's part of a served
// command.
func inProcess(ctx context.Context, rp *repo.Repo, dir string, args ...string) (time.Duration, error) {
	var errb bytes.Buffer
	req := remote.ExecRequest{Args: append([]string{"agentstate"}, args...), Dir: dir}
	t0 := time.Now()
	code := cliexec.Exec(ctx, rp, req, bytes.NewReader(nil), io.Discard, &errb)
	d := time.Since(t0)
	if code != 0 {
		return d, fmt.Errorf("in-process agentstate %v: exit %d: %s", args, code, tail(errb.String()))
	}
	return d, nil
}

// w10Served: log, get and put through the front end against a store held
// by 'agentstate serve', each against git; the same commands unserved (the
// engine opening the store); the server's own part of each; start-up.
func w10Served(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	h, err := prepHistory(ctx, cfg, r)
	if err != nil {
		return nil, err
	}
	// fast-import left the git repository without index or work tree: give
	// it both, as a user's repository has, before git add and git commit.
	if _, _, err := r.run(ctx, h.git, nil, "git", "reset", "-q", "--hard"); err != nil {
		return nil, err
	}
	key := keyName(cfg.keyCommits - 1) // a 50-byte value
	valFile := filepath.Join(cfg.work, "put-value")
	const gitFile = "bench-put"
	putKey := "bench/put"
	base := []string{"--store", h.store, "--agent", h.agent}
	asRun := func(args ...string) (time.Duration, error) {
		_, d, err := r.run(ctx, cfg.work, nil, cfg.bin, append(slices.Clone(base), args...)...)
		return d, err
	}
	putN := 0 // every put writes a new value
	newValue := func() ([]byte, error) {
		putN++
		body := []byte("value " + strconv.Itoa(putN) + "\n")
		return body, os.WriteFile(valFile, body, 0o644)
	}
	asLog := func(int) (time.Duration, error) {
		out, d, err := r.run(ctx, cfg.work, nil, cfg.bin, append(slices.Clone(base), "log", "--oneline")...)
		if err == nil && bytes.Count([]byte(out), []byte("\n")) < cfg.keyCommits {
			err = fmt.Errorf("served log printed %d lines, want at least %d", bytes.Count([]byte(out), []byte("\n")), cfg.keyCommits)
		}
		return d, err
	}
	asGet := func(int) (time.Duration, error) { return asRun("get", key) }
	asPut := func(int) (time.Duration, error) {
		if _, err := newValue(); err != nil {
			return 0, err
		}
		return asRun("put", putKey, valFile)
	}
	gitLog := func(int) (time.Duration, error) {
		_, d, err := r.run(ctx, h.git, nil, "git", "log", "--oneline")
		return d, err
	}
	gitGet := func(int) (time.Duration, error) {
		_, d, err := r.run(ctx, h.git, nil, "git", "cat-file", "-p", "HEAD:"+key)
		return d, err
	}
	gitPut := func(int) (time.Duration, error) {
		body := []byte("value " + strconv.Itoa(putN) + " git\n")
		if err := os.WriteFile(filepath.Join(h.git, gitFile), body, 0o644); err != nil {
			return 0, err
		}
		return r.seq(ctx, h.git, nil, []string{"git", "add", gitFile}, []string{"git", "commit", "-q", "-m", "put " + gitFile})
	}

	// Not served: the front end starts the engine, which opens the store.
	ugA, ugG, err := pair(cfg, asGet, gitGet)
	if err != nil {
		return nil, fmt.Errorf("unserved get: %w", err)
	}
	upA, upG, err := pair(cfg, asPut, gitPut)
	if err != nil {
		return nil, fmt.Errorf("unserved put: %w", err)
	}
	// The floor of 10g: Badger alone (internal/cmd/bench/badgerfloor) opening
	// a copy of the same store writable, setting one key and closing it,
	// against git and against the unserved put, each alternately.
	floorStore := filepath.Join(cfg.work, "put-floor-store")
	os.RemoveAll(floorStore)
	if _, _, err := r.run(ctx, cfg.work, nil, "cp", "-a", h.store, floorStore); err != nil {
		return nil, err
	}
	bfloor, err := buildFloor(ctx, cfg, "badgerfloor")
	if err != nil {
		return nil, err
	}
	floorPut := func(int) (time.Duration, error) {
		if _, err := newValue(); err != nil {
			return 0, err
		}
		_, d, err := r.run(ctx, cfg.work, nil, bfloor, floorStore, hex.EncodeToString([]byte("mbench-floor")), valFile)
		return d, err
	}
	fpA, fpG, err := pair(cfg, floorPut, gitPut)
	if err != nil {
		return nil, fmt.Errorf("put floor: %w", err)
	}
	upF, fpF, err := pair(cfg, asPut, floorPut)
	if err != nil {
		return nil, fmt.Errorf("put floor: %w", err)
	}
	os.RemoveAll(floorStore)

	// The server's part: the same command lines run in-process on an open
	// repository, as the server runs them.
	rp, err := repo.Open(h.store, repo.Options{})
	if err != nil {
		return nil, err
	}
	inArgs := func(args ...string) timed {
		return func(int) (time.Duration, error) {
			return inProcess(ctx, rp, cfg.work, append(slices.Clone(base), args...)...)
		}
	}
	ipLog, _, err := pair(cfg, inArgs("log", "--oneline"), nil)
	var ipGet, ipPut time.Duration
	if err == nil {
		ipGet, _, err = pair(cfg, inArgs("get", key), nil)
	}
	if err == nil {
		ipPut, _, err = pair(cfg, func(i int) (time.Duration, error) {
			if _, err := newValue(); err != nil {
				return 0, err
			}
			return inArgs("put", putKey, valFile)(i)
		}, nil)
	}
	if cerr := rp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("in-process: %w", err)
	}

	// Served.
	stop, err := serve(ctx, cfg, r, h.store)
	if err != nil {
		return nil, err
	}
	defer stop()
	sLog, gLog, err := pairN(startReps(cfg), asLog, gitLog)
	if err != nil {
		return nil, fmt.Errorf("served log: %w", err)
	}
	sGet, gGet, err := pairN(startReps(cfg), asGet, gitGet)
	if err != nil {
		return nil, fmt.Errorf("served get: %w", err)
	}
	sPut, gPut, err := pair(cfg, asPut, gitPut)
	if err != nil {
		return nil, fmt.Errorf("served put: %w", err)
	}
	// Start-up: the served get against a hello-world Go program.
	hello, err := helloWorld(ctx, cfg)
	if err != nil {
		return nil, err
	}
	helloRun := func(int) (time.Duration, error) {
		_, d, err := r.run(ctx, cfg.work, nil, hello)
		return d, err
	}
	stGet, hw, err := pairN(startReps(cfg), asGet, helloRun)
	if err != nil {
		return nil, err
	}
	stop()

	size := func(p string) string {
		if fi, err := os.Stat(p); err == nil {
			return fmtBytes(fi.Size())
		}
		return "?"
	}
	part := func(id string, in, total time.Duration) row {
		return row{id: id, name: "  the server's part (cliexec.Exec in-process)", as: fmtDur(in),
			ratio: fmt.Sprintf("%.0f%% of served", 100*float64(in)/float64(total))}
	}
	n := cfg.keyCommits
	return []row{
		ratioRow("10a", fmt.Sprintf("served log --oneline over %d commits", n), sLog, gLog, 0.5),
		part("10as", ipLog, sLog),
		ratioRow("10b", "served get of one key vs git cat-file -p HEAD:file", sGet, gGet, 1),
		part("10bs", ipGet, sGet),
		ratioRow("10c", "served put of one key vs git add + git commit", sPut, gPut, 0.5),
		part("10cs", ipPut, sPut),
		{id: "10d", name: "start-up: served get vs hello-world Go program", as: fmtDur(stGet), git: fmtDur(hw),
			ratio: ratio(float64(stGet), float64(hw)),
			note: fmt.Sprintf("git column: a hello-world Go program (static, stripped, %s), timed alternately with the served get; git cat-file -p HEAD:file (row 10b) took %s, %s the hello-world program",
				size(hello), fmtDur(gGet), ratio(float64(gGet), float64(hw)))},
		{id: "10e", name: "front end binary size", as: size(cfg.bin), git: size(hello), ratio: ratio(float64(fileSize(cfg.bin)), float64(fileSize(hello))),
			note: fmt.Sprintf("git column: the hello-world program; the engine beside the front end is %s", size(filepath.Join(filepath.Dir(cfg.bin), "agentstate-engine")))},
		{id: "10f", name: "not served: get of one key vs git cat-file", as: fmtDur(ugA), git: fmtDur(ugG), ratio: ratio(float64(ugA), float64(ugG)),
			note: "no server: the front end execs the engine, which opens the store read-only"},
		{id: "10g", name: "not served: put of one key vs git add + commit", as: fmtDur(upA), git: fmtDur(upG), ratio: ratio(float64(upA), float64(upG)),
			note: "no server: the front end execs the engine, which opens, writes and closes the store"},
		{id: "10h", name: "  floor of 10g: a program linking only Badger: writable open, one key set, close, vs git add + commit", as: fmtDur(fpA), git: fmtDur(fpG), ratio: ratio(float64(fpA), float64(fpG)),
			note: fmt.Sprintf("on a copy of the same store, with the store's Badger options (internal/cmd/bench/badgerfloor); timed alternately with it, the unserved put took %s against its %s (%s)", fmtDur(upF), fmtDur(fpF), ratio(float64(upF), float64(fpF)))},
	}, nil
}

func fileSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}

func ratioRow(id, name string, a, g time.Duration, limit float64) row {
	return row{id: id, name: name, as: fmtDur(a), git: fmtDur(g), ratio: ratio(float64(a), float64(g)),
		target: fmt.Sprintf("<= %gx git", limit), verdict: verdictMax(float64(a)/float64(g), limit)}
}

// helloWorld builds a hello-world Go program in the work directory, static
// and stripped as the front end is.
func helloWorld(ctx context.Context, cfg *config) (string, error) {
	dir := filepath.Join(cfg.work, "hello")
	bin := filepath.Join(dir, "hello")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.22\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nimport \"os\"\n\nfunc main() { os.Stdout.WriteString(\"hello\\n\") }\n"), 0o644); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building hello world: %v\n%s", err, out)
	}
	return bin, nil
}

// w11ServedScale: a one-key put into a served 100k-key brain against the
// same put into a served 1k-key brain (and both unserved, for comparison).
func w11ServedScale(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	const big = 100_000
	val := filepath.Join(cfg.work, "scale-value")
	puts := 0
	put := func(dir string) timed {
		return func(int) (time.Duration, error) {
			puts++
			if err := os.WriteFile(val, fmt.Appendf(nil, "value %d\n", puts), 0o644); err != nil {
				return 0, err
			}
			_, d, err := r.run(ctx, cfg.work, nil, cfg.bin, "--store", dir, "put", keyName(puts%1000), val)
			return d, err
		}
	}
	served, unserved, inproc := map[int]time.Duration{}, map[int]time.Duration{}, map[int]time.Duration{}
	for _, keys := range []int{1000, big} {
		dir := filepath.Join(cfg.work, fmt.Sprintf("served-%d", keys))
		os.RemoveAll(dir)
		t0 := time.Now()
		rp, err := repo.Init(dir, repo.Options{})
		if err != nil {
			return nil, err
		}
		if err := buildKeys(ctx, rp, "main", keys); err != nil {
			rp.Close()
			return nil, err
		}
		fmt.Fprintf(cfg.log, "bench: built a %d-key brain in %s\n", keys, time.Since(t0).Round(time.Millisecond))
		// The server's part: the put command line run in-process on an open
		// repository, as the server runs it (its caches warm after the first).
		inproc[keys], _, err = pair(cfg, func(int) (time.Duration, error) {
			puts++
			if err := os.WriteFile(val, fmt.Appendf(nil, "value %d\n", puts), 0o644); err != nil {
				return 0, err
			}
			return inProcess(ctx, rp, cfg.work, "--store", dir, "put", keyName(puts%1000), val)
		}, nil)
		if cerr := rp.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		if unserved[keys], _, err = pair(cfg, put(dir), nil); err != nil {
			return nil, err
		}
		stop, err := serve(ctx, cfg, r, dir)
		if err != nil {
			return nil, err
		}
		served[keys], _, err = pair(cfg, put(dir), nil)
		stop()
		if err != nil {
			return nil, err
		}
	}
	a, b := served[big], served[1000]
	ua, ub := unserved[big], unserved[1000]
	return []row{
		{id: "11", name: fmt.Sprintf("served one-key put at %s vs 1k keys", keysLabel(big)), as: fmtDur(a) + " vs " + fmtDur(b),
			ratio: ratio(float64(a), float64(b)), target: "<= 2x", verdict: verdictMax(float64(a)/float64(b), 2),
			note: "agentstate put KEY FILE, a new value each time, into brains built with the repository API and then served"},
		{id: "11s", name: "  the server's part (cliexec.Exec in-process)", as: fmtDur(inproc[big]) + " vs " + fmtDur(inproc[1000]),
			ratio: ratio(float64(inproc[big]), float64(inproc[1000]))},
		{id: "11u", name: "  the same puts, not served (engine opens the store)", as: fmtDur(ua) + " vs " + fmtDur(ub),
			ratio: ratio(float64(ua), float64(ub))},
	}, nil
}

// readerResult is what one window of landing tasks beside CLI readers gave.
type readerResult struct {
	alone, with float64 // tasks/s
	ok, failed  int
	cmdRate     float64 // reader commands/s
	p50, p99    time.Duration
}

// runReaders opens a runtime on a new store (serving it in-process with
// cliexec.Exec when withExec, else through the repository API only), lands
// tasks for a window alone, then for a window beside 8 agentstate
// processes looping over read commands (each pausing pause between
// commands).
func runReaders(ctx context.Context, cfg *config, r *runner, name string, withExec bool, pause, window time.Duration) (*readerResult, error) {
	dir := filepath.Join(cfg.work, "readers-"+name)
	os.RemoveAll(dir)
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, err
	}
	opts := runtime.Options{Store: dir, Signer: key, Sync: true}
	if withExec {
		opts.Serve.Exec = cliexec.Exec
	}
	rt, err := runtime.Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	const agent = "lumen"
	tasks := 0
	land := func(d time.Duration) (int, error) {
		n := 0
		for t0 := time.Now(); time.Since(t0) < d; n++ {
			tasks++
			i := tasks
			_, err := rt.RunTask(ctx, agent, runtime.Task{ID: fmt.Sprintf("t%d", i)}, func(ctx context.Context, tx *runtime.Tx) error {
				return tx.Put(ctx, fmt.Sprintf("notes/%d.md", i%500), fmt.Appendf(nil, "task %d: the agent learned something\n", i))
			})
			if err != nil {
				return n, err
			}
		}
		return n, nil
	}
	if _, err := land(500 * time.Millisecond); err != nil { // warm up; writes notes/1.md
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
				args := append([]string{"--store", dir, "--agent", agent}, cmds[i%len(cmds)]...)
				out, d, err := r.run(ctx, cfg.work, nil, cfg.bin, args...)
				if err != nil {
					if failed.Add(1) <= 5 {
						fmt.Fprintf(cfg.log, "bench: reader: %v\n%s\n", err, tail(out))
					}
				} else {
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
				if pause > 0 {
					time.Sleep(pause)
				}
			}
		}()
	}
	t0 := time.Now()
	with, lerr := land(window)
	took := time.Since(t0)
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
	return &readerResult{alone: float64(alone) / window.Seconds(), with: float64(with) / took.Seconds(),
		ok: len(lat), failed: int(failed.Load()), cmdRate: float64(len(lat)) / took.Seconds(), p50: pct(0.5), p99: pct(0.99)}, nil
}

// w12Readers: a runtime in this process landing tasks (one durable put
// each) alone, then beside 8 CLI readers; with the runtime serving command
// lines in-process (cliexec.Exec), with readers pausing between commands,
// and with the runtime serving only the repository API.
func w12Readers(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	window := 10 * time.Second
	if cfg.quick {
		window = 3 * time.Second
	}
	type variant struct {
		id, id2, name, label string
		exec                 bool
		pause                time.Duration
		target               bool
	}
	variants := []variant{
		{"12a", "12b", "exec", "runtime tasks/s with 8 CLI readers looping vs alone", true, 0, true},
		{"12c", "12d", "paced", "  the same, each reader pausing 100ms between commands", true, 100 * time.Millisecond, false},
		{"12e", "12f", "api", "  the same, runtime serving the repository API only (no Exec)", false, 0, false},
	}
	var rows []row
	for _, v := range variants {
		fmt.Fprintf(cfg.log, "bench: workload 12: %s (%s windows)\n", v.name, window)
		res, err := runReaders(ctx, cfg, r, v.name, v.exec, v.pause, window)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.name, err)
		}
		q := res.with / res.alone
		tr := row{id: v.id, name: v.label, as: fmt.Sprintf("%.0f/s", res.with), git: fmt.Sprintf("%.0f/s", res.alone), ratio: fmt.Sprintf("%.2fx", q)}
		if v.target {
			tr.target, tr.verdict = ">= 0.8x alone", verdictMin(q, 0.8)
			tr.note = "git column: the runtime alone (runtime.RunTask, one tx.Put per task, Sync); readers: agentstate log -n 5 --oneline, get KEY, show HEAD, status in turn"
		}
		failVerdict := "met"
		if res.failed > 0 {
			failVerdict = fmt.Sprintf("MISSED: %d failed", res.failed)
		}
		rows = append(rows, tr, row{id: v.id2, name: "  their reader commands: ok, failed; p50, p99",
			as:    fmt.Sprintf("%d ok, %d failed", res.ok, res.failed),
			ratio: fmt.Sprintf("p50 %s, p99 %s", fmtDur(res.p50), fmtDur(res.p99)), target: "0 failed", verdict: failVerdict,
			note: fmt.Sprintf("%.0f reader commands/s", res.cmdRate)})
	}
	return rows, nil
}
