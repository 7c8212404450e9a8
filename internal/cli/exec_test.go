package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
)

// A server runs many clients' command lines at once in one process: writes
// and reads interleave on one Repo, every write lands (compare-and-swap),
// and every command sees its own client's directory and environment. Run
// under -race, this is also the check that commands share no mutable state.
func TestExecConcurrent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r, err := repo.Init(dir+"/.agentstate", repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	exec := func(stdin string, env []string, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Exec(ctx, r, remote.ExecRequest{Args: append([]string{"agentstate"}, args...), Dir: dir, Env: env},
			strings.NewReader(stdin), &out, &errb)
		return code, out.String(), errb.String()
	}
	for _, v := range []string{"seed 1", "seed 2"} { // readers diff HEAD~1
		if code, _, stderr := exec(v, nil, "put", "seed", "-"); code != 0 {
			t.Fatal(stderr)
		}
	}
	const writers, readers, each = 4, 4, 10
	var wg sync.WaitGroup
	errs := make(chan string, (writers+readers)*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				key := fmt.Sprintf("w%d/k%d", w, i)
				if code, _, stderr := exec(key, []string{"AGENTSTATE_AGENT=main"}, "put", key, "-"); code != 0 {
					errs <- "put " + key + ": " + stderr
				}
			}
		}()
	}
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for _, args := range [][]string{{"log", "--oneline", "-n", "3"}, {"get", "seed"}, {"show", "HEAD"}, {"ls", "--json"}, {"diff", "--json", "HEAD~1"}, {"status"}} {
					if code, _, stderr := exec("", nil, args...); code != 0 {
						errs <- strings.Join(args, " ") + ": " + stderr
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	code, out, _ := exec("", nil, "ls")
	if code != 0 || strings.Count(out, "\n") != 1+writers*each {
		t.Fatalf("ls after %d concurrent puts: exit %d, %d keys:\n%s", writers*each, code, strings.Count(out, "\n"), out)
	}
	// The client's agent from its environment, and a relative path from its directory.
	if code, _, stderr := exec("x", []string{"AGENTSTATE_AGENT=nova"}, "put", "k", "-"); code != 0 {
		t.Fatal(stderr)
	}
	if code, out, _ := exec("", nil, "agents"); code != 0 || !strings.Contains(out, "nova") {
		t.Fatalf("agents: %s", out)
	}
	if code, out, stderr := exec("", nil, "verify"); code != 0 || !strings.HasPrefix(out, "ok: 2 agents") {
		t.Fatalf("verify: %d %s %s", code, out, stderr)
	}
}

// benchExec opens a new store for a benchmark and returns a function that
// runs a command line on it as a server runs a client's (Exec).
func benchExec(b *testing.B) func(stdin string, args ...string) {
	ctx := context.Background()
	dir := b.TempDir()
	r, err := repo.Init(dir+"/.agentstate", repo.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return func(stdin string, args ...string) {
		var errb bytes.Buffer
		if code := Exec(ctx, r, remote.ExecRequest{Args: append([]string{"agentstate"}, args...), Dir: dir},
			strings.NewReader(stdin), io.Discard, &errb); code != 0 {
			b.Fatal(errb.String())
		}
	}
}

// BenchmarkExecGet is the server's part of a served 'get': the command line
// parsed and run in-process against an open repository.
func BenchmarkExecGet(b *testing.B) {
	run := benchExec(b)
	run("hello\n", "put", "k", "-")
	b.ReportAllocs()
	for b.Loop() {
		run("", "get", "k")
	}
}

// A served command names the store it runs on by any path to it: the
// served directory's own path, a relative one or a link to it; any other
// store is refused, naming both.
func TestExecNamesTheServedStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	served := filepath.Join(dir, "a", ".agentstate")
	r, err := repo.Init(served, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	other := filepath.Join(dir, "b", ".agentstate")
	o, err := repo.Init(other, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	if err := os.Symlink(served, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	exec := func(stdin string, args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := Exec(ctx, r, remote.ExecRequest{Args: append([]string{"agentstate"}, args...), Dir: dir},
			strings.NewReader(stdin), &out, &errb)
		return code, out.String() + errb.String()
	}
	if code, out := exec("v", "put", "k", "-"); code != 0 {
		t.Fatal(out)
	}
	for _, p := range []string{served, "a/.agentstate", "link", "a/../a/.agentstate"} {
		if code, out := exec("", "--store", p, "get", "k"); code != 0 || out != "v" {
			t.Fatalf("--store %s: exit %d: %s", p, code, out)
		}
	}
	code, out := exec("", "--store", other, "get", "k")
	if code != 1 || !strings.Contains(out, "this server serves "+served+", not "+other) {
		t.Fatalf("--store of another store: exit %d: %s", code, out)
	}
}

// BenchmarkExecLog is the server's part of a served 'log --oneline' over
// 1000 commits (bench row 10as): the walk over commits the server has
// cached, and the lines written.
func BenchmarkExecLog(b *testing.B) {
	run := benchExec(b)
	for i := range 1000 {
		run(fmt.Sprintf("value %d\n", i), "put", fmt.Sprintf("memory/%03d", i), "-")
	}
	b.ReportAllocs()
	for b.Loop() {
		run("", "log", "--oneline")
	}
}
