package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/objects"
)

// A served put of a value larger than the chunking threshold streams: the
// value's chunks are in the store before the client's stdin has ended, so
// the server never holds the whole value. The value is the one an in-memory
// write gives the same bytes, and get returns it.
func TestPutStreamsStdin(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r, err := repo.Init(filepath.Join(dir, ".agentstate"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	content := make([]byte, 24<<20)
	rand.NewChaCha8(sha256.Sum256([]byte("put streams"))).Read(content)
	want, blocks := objects.NewFileValue(content)
	stored := -1 // chunks of the value in the store when stdin reached its last MiB
	in := &watchReader{r: bytes.NewReader(content), at: len(content) - 1<<20, fn: func() {
		stored = 0
		for _, b := range blocks[:len(blocks)-1] {
			if ok, _ := r.Blocks.Has(ctx, b.CID); ok {
				stored += len(b.Data)
			}
		}
	}}
	exec := func(stdin io.Reader, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Exec(ctx, r, remote.ExecRequest{Args: append([]string{"agentstate"}, args...), Dir: dir}, stdin, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, stderr := exec(in, "put", "big", "-"); code != 0 {
		t.Fatal(stderr)
	}
	if stored < 16<<20 {
		t.Fatalf("%d bytes of the value were in the store when stdin reached its last MiB, want most of its %d", stored, len(content))
	}
	code, out, stderr := exec(nil, "ls", "--json")
	if code != 0 || !strings.Contains(out, want.String()) {
		t.Fatalf("ls after the put (exit %d, %s): want value %s in\n%s", code, stderr, want, out)
	}
	if code, out, stderr := exec(nil, "get", "big"); code != 0 || out != string(content) {
		t.Fatalf("get big: exit %d, %d bytes back of %d (%s)", code, len(out), len(content), stderr)
	}
	// From a file: the same value; a small one is unchanged.
	if err := os.WriteFile(filepath.Join(dir, "f"), content, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := exec(nil, "put", "fromfile", "f"); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := exec(strings.NewReader("small"), "put", "small"); code != 0 {
		t.Fatal(stderr)
	}
	code, out, _ = exec(nil, "ls", "--json")
	if code != 0 || strings.Count(out, want.String()) != 2 || !strings.Contains(out, objects.NewValue([]byte("small")).CID.String()) {
		t.Fatalf("ls: %s", out)
	}
	// Not a regular file: refused, nothing read.
	if code, _, stderr := exec(nil, "put", "d", "."); code == 0 || !strings.Contains(stderr, "not a regular file") {
		t.Fatalf("put of a directory: exit %d, %s", code, stderr)
	}
	// The server does not read a stream a client names: /dev/stdin there
	// is the server's own.
	if code, _, stderr := exec(nil, "put", "d", "/dev/stdin"); code == 0 || !strings.Contains(stderr, "put KEY - <") {
		t.Fatalf("served put of /dev/stdin: exit %d, %s", code, stderr)
	}
}

// watchReader calls fn once when its reader has delivered at bytes.
type watchReader struct {
	r    io.Reader
	n    int
	at   int
	fn   func()
	done bool
}

func (w *watchReader) Read(p []byte) (int, error) {
	if !w.done && w.n >= w.at {
		w.done = true
		w.fn()
	}
	if !w.done && w.n+len(p) > w.at {
		p = p[:w.at-w.n]
	}
	n, err := w.r.Read(p)
	w.n += n
	return n, err
}

// Sizes in ls and diff --stat, and a patch's "large values differ", come
// from a value's file node: with a chunk of the value gone from the store
// they still answer, reading no chunk past the first (whose header says
// whether the value is a SQLite database, shown by table).
func TestSizesReadNoChunk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r, err := repo.Init(filepath.Join(dir, ".agentstate"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	exec := func(stdin io.Reader, args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Exec(ctx, r, remote.ExecRequest{Args: append([]string{"agentstate"}, args...), Dir: dir}, stdin, &out, &errb)
		return code, out.String(), errb.String()
	}
	content := make([]byte, 3<<20)
	rand.NewChaCha8(sha256.Sum256([]byte("sizes"))).Read(content)
	for i, v := range [][]byte{content[:2<<20], content} {
		if code, _, stderr := exec(bytes.NewReader(v), "put", "big", "-"); code != 0 {
			t.Fatalf("put %d: %s", i, stderr)
		}
	}
	_, blocks := objects.NewFileValue(content)
	if len(blocks) < 3 {
		t.Fatalf("%d chunks: the test wants a value of several", len(blocks))
	}
	if err := r.Storage.(objects.BlockDeleter).Delete(ctx, blocks[1].CID); err != nil {
		t.Fatal(err)
	}
	if code, out, stderr := exec(nil, "ls", "--long", "--bytes"); code != 0 || !strings.Contains(out, " 3145728 big") {
		t.Fatalf("ls --long: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := exec(nil, "diff", "--stat", "HEAD~1", "HEAD"); code != 0 || !strings.Contains(out, "2.0 MiB -> 3.0 MiB") {
		t.Fatalf("diff --stat: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := exec(nil, "diff", "-p", "HEAD~1", "HEAD"); code != 0 || !strings.Contains(out, "large values differ (2.0 MiB -> 3.0 MiB)") {
		t.Fatalf("diff -p: exit %d\n%s%s", code, out, stderr)
	}
}
