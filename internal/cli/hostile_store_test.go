package cli

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// cliBin returns a path that runs this test binary as the agentstate command
// (TestMain dispatches on the program name), so a test can run many real
// processes without building the command.
func cliBin(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := "agentstate"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	bin := filepath.Join(t.TempDir(), name)
	if err := os.Symlink(exe, bin); err != nil {
		t.Skipf("cannot link the test binary as agentstate: %v", err)
	}
	return bin
}

type cliResult struct {
	code           int
	stdout, stderr string
}

func execCLI(t *testing.T, bin, storeDir string, stdin []byte, args ...string) cliResult {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--store", storeDir}, args...)...)
	cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1700000000", "NO_COLOR=1")
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := cliResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running agentstate %v: %v", args, err)
	}
	if strings.Contains(r.stderr, "SIGBUS") || strings.Contains(r.stderr, "goroutine ") || strings.Contains(r.stderr, "fatal error") {
		t.Fatalf("agentstate %v crashed (exit %d):\n%.2000s", args, r.code, r.stderr)
	}
	if r.code != 0 && r.code != 1 {
		t.Fatalf("agentstate %v: exit %d, want 0 or 1:\n%s", args, r.code, r.stderr)
	}
	return r
}

// Ten parallel puts of different keys all land: each waits for the store
// lock instead of failing at once with "in use" (issue 13, finding 7c).
func TestParallelPuts(t *testing.T) {
	bin := cliBin(t)
	dir := filepath.Join(t.TempDir(), "store")
	if r := execCLI(t, bin, dir, nil, "init"); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	const n = 10
	var wg sync.WaitGroup
	res := make([]cliResult, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = execCLI(t, bin, dir, []byte(fmt.Sprintf("value %d\n", i)), "put", fmt.Sprintf("k%02d", i), "-")
		}()
	}
	wg.Wait()
	for i, r := range res {
		if r.code != 0 {
			t.Errorf("put k%02d: exit %d: %s", i, r.code, r.stderr)
		}
	}
	r := execCLI(t, bin, dir, nil, "ls")
	if got := strings.Fields(r.stdout); len(got) != n {
		t.Fatalf("ls after %d parallel puts lists %d keys:\n%s", n, len(got), r.stdout)
	}
}

// A bad AGENTSTATE_LOCK_TIMEOUT is a usage error.
func TestLockTimeoutEnv(t *testing.T) {
	t.Setenv("AGENTSTATE_LOCK_TIMEOUT", "soon")
	if _, err := (&env{getenv: os.Getenv}).lockTimeout(); err == nil || !strings.Contains(err.Error(), "AGENTSTATE_LOCK_TIMEOUT") {
		t.Fatalf("bad value: %v", err)
	}
	for v, want := range map[string]string{"": "0s", "0": "-1ns", "2.5": "2.5s", "750ms": "750ms"} {
		t.Setenv("AGENTSTATE_LOCK_TIMEOUT", v)
		if d, err := (&env{getenv: os.Getenv}).lockTimeout(); err != nil || d.String() != want {
			t.Errorf("AGENTSTATE_LOCK_TIMEOUT=%q: %v %v, want %s", v, d, err, want)
		}
	}
}

func randomFile(t *testing.T, dir string, i, n int) (string, []byte) {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, fmt.Sprintf("v%d", i))
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p, b
}
