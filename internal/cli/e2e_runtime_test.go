package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/runtime"
)

// run runs the CLI in-process and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), append([]string{"agentstate"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestReceiptsFromRuntime: tasks run through the runtime, then the CLI lists
// and verifies their receipts from the store, and catches a forged one.
func TestReceiptsFromRuntime(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	_, key, _ := ed25519.GenerateKey(nil)
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: key})
	if err != nil {
		t.Fatal(err)
	}
	for i, body := range []string{"one", "two", "three"} {
		_, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: "t-" + body}, func(ctx context.Context, tx *runtime.Tx) error {
			return tx.Put(ctx, "notes/n.md", []byte(body))
		})
		if err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "--store", dir, "--agent", "lumen", "receipts", "--verify")
	if code != 0 || strings.Count(out, " ok") != 3 || !strings.Contains(out, "3 receipt(s) verified") {
		t.Fatalf("receipts --verify: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, _ = runCLI(t, "--store", dir, "--agent", "lumen", "oplog", "--json")
	if code != 0 || strings.Count(out, `"task": "t-`) != 3 {
		t.Fatalf("oplog does not carry the task ids:\n%s", out)
	}
	// Forge: append a receipt line signed by nobody we trust.
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nd, _ := r.Tape.NDJSON(ctx, "lumen")
	lines := strings.Split(strings.TrimSpace(string(nd)), "\n")
	forged := strings.Replace(lines[0], `"t-one"`, `"t-evil"`, 1)
	if _, err := r.Tape.Append(ctx, "lumen", []byte(forged)); err != nil {
		t.Fatal(err)
	}
	r.Close()
	code, out, stderr = runCLI(t, "--store", dir, "--agent", "lumen", "receipts", "--verify")
	if code != 1 || !strings.Contains(out+stderr, "t-evil") {
		t.Fatalf("forged receipt not caught: exit %d\n%s\n%s", code, out, stderr)
	}
}

// TestStoreInUse: while one process (here: this test) has the store open,
// commands fail at once with a clear "in use" error and change nothing.
func TestStoreInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	val := filepath.Join(t.TempDir(), "v.txt")
	if err := os.WriteFile(val, []byte("v"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "--store", dir, "init"); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := runCLI(t, "--store", dir, "--agent", "a", "put", "k", val); code != 0 {
		t.Fatal(stderr)
	}
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Commands wait for the lock a bounded time (AGENTSTATE_LOCK_TIMEOUT),
	// then fail with "in use".
	t.Setenv("AGENTSTATE_LOCK_TIMEOUT", "300ms")
	for _, args := range [][]string{{"log"}, {"put", "k2", val}, {"verify"}} {
		start := time.Now()
		code, _, stderr := runCLI(t, append([]string{"--store", dir, "--agent", "a"}, args...)...)
		if code != 1 || !strings.Contains(stderr, "in use") || strings.Count(stderr, "\n") != 1 {
			t.Fatalf("%v while the store is open elsewhere: exit %d, %q", args, code, stderr)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%v took %s to fail: it should give up after AGENTSTATE_LOCK_TIMEOUT", args, d)
		}
	}
	r.Close()
	if code, out, _ := runCLI(t, "--store", dir, "--agent", "a", "ls"); code != 0 || out != "k\n" {
		t.Fatalf("after the holder closed: exit %d %q", code, out)
	}
}
