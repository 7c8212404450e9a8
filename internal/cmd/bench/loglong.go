package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
)

// w19LogLong: one agent's history of 100,000 commits (20,000 with -quick),
// each changing one of 100 notes (an agent rewriting its memory files),
// made through the library as a runtime makes them, and the same history
// in git through fast-import. Then, unserved, 'agentstate log --oneline'
// against 'git log --oneline', and 'agentstate log --json' (every field of
// every commit, with its bundle hash) against 'git log --pretty=raw' (every
// field of every commit object). Each is timed to its first line of output
// (a streaming log prints before its walk ends) and to its end, with its
// peak resident set. Targets: --oneline in at most 1 s, streaming; --json
// in at most 2 s and 200 MB.
func w19LogLong(ctx context.Context, cfg *config, m *machineFigures) ([]row, error) {
	n := 100_000
	if cfg.quick {
		n = 20_000
	}
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(cfg.work, "loglong")
	store, gitDir := filepath.Join(base, "store"), filepath.Join(base, "git")
	t0 := time.Now()
	if err := longHistory(ctx, store, n); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.log, "bench: %d commits made in %s\n", n, time.Since(t0).Round(time.Millisecond))
	if err := gitLongHistory(ctx, r, gitDir, n); err != nil {
		return nil, err
	}
	measure := func(dir, want string, lines int, name string, args ...string) (total, first time.Duration, rss int64, err error) {
		var ts, fs []time.Duration
		var rs []float64
		for range cfg.reps {
			res, err := r.runStream(ctx, dir, name, args...)
			if err != nil {
				return 0, 0, 0, err
			}
			if lines > 0 && res.lines != lines {
				return 0, 0, 0, fmt.Errorf("%s %s printed %d lines, want %d", filepath.Base(name), strings.Join(args, " "), res.lines, lines)
			}
			if want != "" && !strings.HasPrefix(res.head, want) {
				return 0, 0, 0, fmt.Errorf("%s %s began %q, want %q", filepath.Base(name), strings.Join(args, " "), res.head, want)
			}
			ts, fs, rs = append(ts, res.total), append(fs, res.first), append(rs, float64(res.rss))
		}
		return median(ts), median(fs), int64(medianF(rs)), nil
	}
	as := func(args ...string) []string {
		return append([]string{"--store", store, "--agent", "long"}, args...)
	}
	aT, aF, aR, err := measure(base, "", n, cfg.bin, as("log", "--oneline")...)
	if err != nil {
		return nil, err
	}
	gT, gF, gR, err := measure(gitDir, "", n, "git", "log", "--oneline")
	if err != nil {
		return nil, err
	}
	jT, jF, jR, err := measure(base, "[\n  {", 0, cfg.bin, as("log", "--json")...)
	if err != nil {
		return nil, err
	}
	grT, grF, grR, err := measure(gitDir, "commit ", 0, "git", "log", "--pretty=raw")
	if err != nil {
		return nil, err
	}
	mb := func(b int64) string {
		if b == 0 {
			return "peak RSS not measured"
		}
		return fmt.Sprintf("%.0f MB", float64(b)/1e6)
	}
	fig := func(t, f time.Duration, rss int64) string {
		return fmt.Sprintf("%s (first line %s, %s)", fmtDur(t), fmtDur(f), mb(rss))
	}
	label := fmt.Sprintf("%dk commits", n/1000)
	jv := verdictMax(jT.Seconds(), 2)
	if jv == "met" && jR > 200e6 {
		jv = fmt.Sprintf("MISSED: %s > 200 MB", mb(jR))
	}
	ov := verdictMax(aT.Seconds(), 1)
	return []row{
		{id: "19a", name: "log --oneline over " + label + ", unserved", as: fig(aT, aF, aR), git: fig(gT, gF, gR),
			ratio: ratio(float64(aT), float64(gT)), target: "<= 1 s, streaming", verdict: ov,
			note: fmt.Sprintf("%d commits, each changing one of 100 notes; first line: from the start of the process to its first output", n)},
		{id: "19b", name: "log --json over " + label + ", unserved", as: fig(jT, jF, jR), git: fig(grT, grF, grR),
			ratio: ratio(float64(jT), float64(grT)), target: "<= 2 s, <= 200 MB", verdict: jv,
			note: "git column: git log --pretty=raw (every commit object's fields)"},
	}, nil
}

// longHistory makes n commits of agent "long" in a new store, each
// changing one of 100 keys, one second apart.
func longHistory(ctx context.Context, dir string, n int) error {
	os.RemoveAll(dir)
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		return err
	}
	defer r.Close()
	var now int64 = 1_700_000_000
	r.Now = func() int64 { return now }
	for i := range n {
		now++
		if _, err := commitKey(ctx, r, "long", longKey(i), keyValue(i)); err != nil {
			return err
		}
	}
	return nil
}

func longKey(i int) string { return fmt.Sprintf("notes/%02d.md", i%100) }

// gitLongHistory is longHistory in git, through fast-import.
func gitLongHistory(ctx context.Context, r *runner, dir string, n int) error {
	os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if _, _, err := r.run(ctx, dir, nil, "git", "init", "-q"); err != nil {
		return err
	}
	f := filepath.Join(dir, "..", "git.fi")
	fi, err := os.Create(f)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	for i := range n {
		msg, v := "put "+longKey(i), keyValue(i)
		fmt.Fprintf(&b, "commit refs/heads/main\ncommitter bench <bench@example.invalid> %d +0000\ndata %d\n%s\nM 100644 inline %s\ndata %d\n%s\n",
			1_700_000_001+i, len(msg), msg, longKey(i), len(v), v)
		if b.Len() > 1<<20 {
			if _, err := b.WriteTo(fi); err != nil {
				fi.Close()
				return err
			}
		}
	}
	if _, err := b.WriteTo(fi); err != nil {
		fi.Close()
		return err
	}
	if err := fi.Close(); err != nil {
		return err
	}
	_, _, err = r.run(ctx, dir, nil, "sh", "-c", "git fast-import --quiet < "+f)
	return err
}

type streamResult struct {
	total, first time.Duration
	rss          int64
	lines        int
	head         string
}

// runStream runs a command reading its output through a pipe as it comes:
// the time to its first byte, to its end, its line count and the start of
// its output, and its peak resident set (with its children's). The peak is
// GNU time's (-f %M): a process this one starts directly inherits this
// process's peak across exec (Go starts it sharing this process's memory
// until then), which after making the history is larger than the
// command's; time starts the command from its own small process. Without
// /usr/bin/time the peak is not reported (0).
func (r *runner) runStream(ctx context.Context, dir, name string, args ...string) (streamResult, error) {
	var res streamResult
	var rssFile string
	if _, err := os.Stat("/usr/bin/time"); err == nil {
		f, err := os.CreateTemp("", "bench-rss-")
		if err != nil {
			return res, err
		}
		f.Close()
		rssFile = f.Name()
		defer os.Remove(rssFile)
		args = append([]string{"-f", "%M", "-o", rssFile, name}, args...)
		name = "/usr/bin/time"
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, r.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return res, err
	}
	buf := make([]byte, 256<<10)
	var head []byte
	for {
		k, err := out.Read(buf)
		if k > 0 {
			if res.first == 0 {
				res.first = time.Since(t0)
			}
			if len(head) < 16 {
				head = append(head, buf[:min(k, 16)]...)
			}
			res.lines += bytes.Count(buf[:k], []byte{'\n'})
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			cmd.Wait()
			return res, err
		}
	}
	if err := cmd.Wait(); err != nil {
		return res, fmt.Errorf("%s %s: %w: %s", filepath.Base(name), strings.Join(args, " "), err, tail(stderr.String()))
	}
	res.total, res.head = time.Since(t0), string(head)
	if rssFile != "" {
		b, err := os.ReadFile(rssFile)
		if err != nil {
			return res, err
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return res, fmt.Errorf("peak RSS from time: %q: %w", b, err)
		}
		res.rss = kb << 10
	}
	return res, nil
}
