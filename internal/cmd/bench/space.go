package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// spaceStore is the store of workloads 25 and 26: one agent whose first
// commit holds baseKeys small values (the tree nodes above them) and whose
// history then changes a few keys per commit, with a 3 MiB chunked value
// rewritten every 200 commits; about 607k blocks in a full run.
type spaceStore struct {
	dir      string
	blocks   int   // blocks stored
	bytes    int64 // their bytes
	chunked  int64 // the content bytes of the distinct chunked values (verify hashes each whole)
	commits  int
	building time.Duration
}

var sharedSpace *spaceStore

const spaceAgent = "space"

func prepSpace(ctx context.Context, cfg *config) (*spaceStore, error) {
	if sharedSpace != nil {
		return sharedSpace, nil
	}
	baseKeys, history := 526_000, 2000
	if cfg.quick {
		baseKeys, history = 50_000, 300
	}
	s := &spaceStore{dir: filepath.Join(cfg.work, "space", "store")}
	os.RemoveAll(filepath.Dir(s.dir))
	t0 := time.Now()
	r, err := repo.Init(s.dir, repo.Options{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fixedTime(r)
	if err := buildKeys(ctx, r, spaceAgent, baseKeys); err != nil {
		return nil, err
	}
	rnd := newRand(25)
	big := make([]byte, 3<<20)
	for i := range history {
		var blocks []objects.Block
		type kv struct {
			k string
			v objects.CID
		}
		var puts []kv
		for j := range 5 {
			k := keyName(rnd.IntN(baseKeys))
			v := objects.NewValue(fmt.Appendf(nil, "fact %s rewritten at step %d.%d: %x\n", k, i, j, rnd.Uint64()))
			blocks = append(blocks, v)
			puts = append(puts, kv{k, v.CID})
		}
		if i%200 == 0 {
			fill(big, uint64(1000+i))
			v, bs := objects.NewFileValue(big)
			blocks = append(blocks, bs...)
			puts = append(puts, kv{"notes/big.txt", v})
			s.chunked += int64(len(big))
		}
		_, err := r.Edit(ctx, repo.EditRequest{Agent: spaceAgent, Message: fmt.Sprint("step ", i), Blocks: blocks,
			Edit: func(ctx context.Context, t *objects.Tree) (bool, error) {
				for _, p := range puts {
					if _, err := t.Put(ctx, p.k, p.v); err != nil {
						return false, err
					}
				}
				return true, nil
			}})
		if err != nil {
			return nil, err
		}
	}
	s.commits = history + 1
	sc, ok := r.Storage.(objects.BlockScanner)
	if !ok {
		return nil, fmt.Errorf("the store cannot be scanned")
	}
	if err := sc.ScanBlocks(ctx, func(objects.CID) bool { return false }, func(_ objects.CID, size int64, _ []byte) error {
		s.blocks++
		s.bytes += size
		return nil
	}); err != nil {
		return nil, err
	}
	s.building = time.Since(t0)
	fmt.Fprintf(cfg.log, "bench: built a store of %d blocks (%s, %d commits) in %s\n", s.blocks, fmtBytes(s.bytes), s.commits, s.building.Round(time.Millisecond))
	sharedSpace = s
	return s, nil
}

// timedRSS runs the agentstate CLI and returns its stdout, wall time, peak
// resident set and CPU time (user and system: on a shared machine the
// figure load moves least).
//
// The peak is the process's own high-water mark (VmHWM in
// /proc/PID/status, read every 5 ms while it runs; the last reading is
// kept) where the system has one. The rusage figure is not: a child
// started from this process's address space (Go's vfork) inherits this
// process's peak at its exec, so it reported the harness's size after a
// large workload. Without /proc the rusage figure is all there is.
func timedRSS(ctx context.Context, cfg *config, args ...string) (string, time.Duration, int64, time.Duration, error) {
	cmd := exec.CommandContext(ctx, cfg.bin, args...)
	var out strings.Builder
	var errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	d, peak, err := waitPeak(cmd)
	if err != nil {
		return "", d, 0, 0, fmt.Errorf("agentstate %s: %w\n%s", strings.Join(args, " "), err, tail(errb.String()))
	}
	return out.String(), d, peak, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// waitPeak starts cmd, waits for it and returns its wall time and its peak
// resident set: its own high-water mark (VmHWM in /proc/PID/status, read
// every 5 ms while it runs; the last reading is kept) where the system has
// one, else the rusage figure (see timedRSS for why that one is not
// trusted).
func waitPeak(cmd *exec.Cmd) (time.Duration, int64, error) {
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, 0, err
	}
	var hwm atomic.Int64
	stop := make(chan struct{})
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if n, ok := readHWM(status); ok {
				hwm.Store(max(hwm.Load(), n))
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	err := cmd.Wait()
	d := time.Since(t0)
	close(stop)
	<-polled
	if err != nil {
		return d, 0, err
	}
	peak := hwm.Load()
	if peak == 0 {
		peak = maxRSS(cmd.ProcessState)
	}
	return d, peak, nil
}

// readHWM is the VmHWM line of a /proc/PID/status file, in bytes.
func readHWM(status string) (int64, bool) {
	data, err := os.ReadFile(status)
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					return n << 10, true
				}
			}
		}
	}
	return 0, false
}

// w25Du: du of the space store, unserved (a process that opens it).
func w25Du(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	s, err := prepSpace(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var ds, cs []time.Duration
	var rss int64
	for range cfg.reps {
		out, d, peak, cpu, err := timedRSS(ctx, cfg, "--store", s.dir, "--agent", spaceAgent, "du", "--bytes")
		if err != nil {
			return nil, err
		}
		if !strings.Contains(out, fmt.Sprintf("in %d blocks", s.blocks)) {
			return nil, fmt.Errorf("du did not count %d blocks:\n%s", s.blocks, tail(out))
		}
		ds, cs, rss = append(ds, d), append(cs, cpu), max(rss, peak)
	}
	d := median(ds)
	label := fmt.Sprintf("du of a store of %dk blocks, %d commits", s.blocks/1000, s.commits)
	return []row{{id: "25", name: label, as: fmtDur(d) + ", " + fmtBytes(rss) + " RSS", target: "<= 10s",
		verdict: verdictMax(d.Seconds(), 10),
		note: fmt.Sprintf("the CLI, unserved; the store holds %s of blocks; peak RSS of the process (its VmHWM, not the harness's); CPU time (user+system) %s",
			fmtBytes(s.bytes), fmtDur(median(cs)))}}, nil
}

// w26Verify: verify of the space store against sha256 of the bytes it
// must hash, timed in the same run: every stored block once, and the
// content of each distinct chunked value once more (its file node's
// sha256 is of the whole content).
func w26Verify(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	s, err := prepSpace(ctx, cfg)
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 1<<20)
	fill(buf, 26)
	floor := func(n int64) time.Duration {
		t0 := time.Now()
		h := sha256.New()
		for ; n > 0; n -= int64(len(buf)) {
			h.Write(buf[:min(n, int64(len(buf)))])
		}
		h.Sum(nil)
		return time.Since(t0)
	}
	var vs, fs, fb, scans, cs []time.Duration
	var rss int64
	for range cfg.reps {
		out, d, peak, cpu, err := timedRSS(ctx, cfg, "--store", s.dir, "verify")
		if err != nil {
			return nil, err
		}
		rss = max(rss, peak)
		if !strings.HasPrefix(out, "ok:") {
			return nil, fmt.Errorf("verify: %s", tail(out))
		}
		vs, cs = append(vs, d), append(cs, cpu)
		fb = append(fb, floor(s.bytes))
		fs = append(fs, floor(s.bytes+s.chunked))
		sc, err := scanOnly(ctx, s.dir)
		if err != nil {
			return nil, err
		}
		scans = append(scans, sc)
	}
	v, f, f0, sc := median(vs), median(fs), median(fb), median(scans)
	return []row{
		{id: "26", name: fmt.Sprintf("verify of %dk blocks vs sha256 of the bytes it hashes", s.blocks/1000), as: fmtDur(v), git: fmtDur(f),
			ratio: ratio(float64(v), float64(f)), target: "<= 1.5x sha256", verdict: verdictMax(float64(v)/float64(f), 1.5),
			note: fmt.Sprintf("the CLI, unserved; sha256 (one core, this process) of %s: every block once (%s) and each chunked value's content again (%s)",
				fmtBytes(s.bytes+s.chunked), fmtBytes(s.bytes), fmtBytes(s.chunked))},
		{id: "26b", name: "  the same vs sha256 of the stored bytes alone", as: fmtDur(v), git: fmtDur(f0), ratio: ratio(float64(v), float64(f0))},
		{id: "26c", name: "  the same vs reading every block (ScanBlocks) and sha256 of what verify hashes", as: fmtDur(v), git: fmtDur(sc + f), ratio: ratio(float64(v), float64(sc+f)),
			note: fmt.Sprintf("the read alone (open, ScanBlocks: key ranges read on every core, values copied, no hashing, this process) took %s; verify's CPU time (user+system, 2 cores) %s, its peak RSS %s", fmtDur(sc), fmtDur(median(cs)), fmtBytes(rss))},
	}, nil
}

// scanOnly opens the store read-only and reads every block once in key
// order, hashing nothing: the storage's own floor under verify.
func scanOnly(ctx context.Context, dir string) (time.Duration, error) {
	t0 := time.Now()
	r, err := repo.Open(dir, repo.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	sc, ok := r.Storage.(objects.BlockScanner)
	if !ok {
		return 0, fmt.Errorf("the store cannot be scanned")
	}
	var n int64
	err = sc.ScanBlocks(ctx, nil, func(_ objects.CID, size int64, data []byte) error {
		n += int64(len(data))
		return nil
	})
	return time.Since(t0), err
}
