package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

func lookPath(name string) (string, error) { return exec.LookPath(name) }

// cmdEnv is the environment of every external command: no user or system
// git configuration, fixed identities and dates, no automatic gc.
func cmdEnv(home string) []string {
	env := []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"LANG=C",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.invalid",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.invalid",
		"GIT_AUTHOR_DATE=1700000000 +0000", "GIT_COMMITTER_DATE=1700000000 +0000",
		"RESTIC_PASSWORD=bench",
		"RESTIC_CACHE_DIR=" + filepath.Join(home, "restic-cache"),
	}
	return env
}

// runner runs external commands in one environment and times them.
type runner struct {
	env []string
}

func newRunner(cfg *config) (*runner, error) {
	home := filepath.Join(cfg.work, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	// gc.auto=0: git must not start packing in the background in the middle of a timing.
	gitconfig := "[gc]\n\tauto = 0\n[commit]\n\tgpgsign = false\n[init]\n\tdefaultBranch = main\n[core]\n\tfsmonitor = false\n"
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte(gitconfig), 0o644); err != nil {
		return nil, err
	}
	return &runner{env: cmdEnv(home)}, nil
}

// run runs one command in dir and returns its stdout and wall time. The
// command writes its output to files, not pipes: a pipe needs goroutines in
// this process to drain it, and on a small machine their wake-ups compete
// with the command being timed.
func (r *runner) run(ctx context.Context, dir string, extraEnv []string, name string, args ...string) (string, time.Duration, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), r.env...), extraEnv...)
	outf, err := os.CreateTemp("", "bench-out-")
	if err != nil {
		return "", 0, err
	}
	defer os.Remove(outf.Name())
	defer outf.Close()
	errf, err := os.CreateTemp("", "bench-err-")
	if err != nil {
		return "", 0, err
	}
	defer os.Remove(errf.Name())
	defer errf.Close()
	cmd.Stdout, cmd.Stderr = outf, errf
	t0 := time.Now()
	err = cmd.Run()
	d := time.Since(t0)
	out, rerr := os.ReadFile(outf.Name())
	if rerr != nil {
		return "", d, rerr
	}
	if err != nil {
		errb, _ := os.ReadFile(errf.Name())
		return string(out), d, fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, tail(string(errb)))
	}
	return string(out), d, nil
}

// seq runs commands one after the other and returns their total time.
func (r *runner) seq(ctx context.Context, dir string, extraEnv []string, cmds ...[]string) (time.Duration, error) {
	var total time.Duration
	for _, c := range cmds {
		_, d, err := r.run(ctx, dir, extraEnv, c[0], c[1:]...)
		total += d
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// diskUsage sums the allocated blocks of every file under dir (what du reports).
func diskUsage(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += allocated(fi)
		return nil
	})
	return n, err
}

// machineFigures are this machine's own limits, measured in the same run.
type machineFigures struct {
	cpus         int
	sha256MBs    float64
	diskWriteMBs float64
	fsyncMs      float64
	git, restic  string
}

func machine(ctx context.Context, cfg *config) (*machineFigures, error) {
	m := &machineFigures{cpus: runtime.NumCPU()}
	buf := make([]byte, 64<<20)
	fill(buf, 1)
	var rates []float64
	for range 3 {
		t0 := time.Now()
		sha256.Sum256(buf)
		rates = append(rates, float64(len(buf))/1e6/time.Since(t0).Seconds())
	}
	m.sha256MBs = medianF(rates)

	p := filepath.Join(cfg.work, "disk-probe")
	f, err := os.Create(p)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	for range 4 {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return nil, err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	m.diskWriteMBs = float64(4*len(buf)) / 1e6 / time.Since(t0).Seconds()
	var syncs []time.Duration
	for i := range 50 {
		if _, err := f.WriteAt([]byte{byte(i)}, int64(i)*4096); err != nil {
			f.Close()
			return nil, err
		}
		t := time.Now()
		if err := f.Sync(); err != nil {
			f.Close()
			return nil, err
		}
		syncs = append(syncs, time.Since(t))
	}
	f.Close()
	os.Remove(p)
	m.fsyncMs = float64(median(syncs)) / 1e6

	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	if out, _, err := r.run(ctx, cfg.work, nil, "git", "--version"); err == nil {
		m.git = strings.TrimSpace(out)
	}
	m.restic = "restic unavailable"
	if cfg.restic != "" {
		if out, _, err := r.run(ctx, cfg.work, nil, cfg.restic, "version"); err == nil {
			m.restic = strings.Join(strings.Fields(out)[:2], " ")
		}
	}
	return m, nil
}

// engineBin is the engine the front end (cfg.bin) starts when no server
// holds the store: agentstate-engine-lean when it is installed beside it,
// else agentstate-engine (internal/front).
func engineBin(cfg *config) string {
	dir := filepath.Dir(cfg.bin)
	if p := filepath.Join(dir, "agentstate-engine-lean"); isExecutableFile(p) {
		return p
	}
	return filepath.Join(dir, "agentstate-engine")
}

func isExecutableFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}
