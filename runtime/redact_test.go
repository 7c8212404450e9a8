package runtime_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/runtime"
)

// TestRuntimeRedact: a platform redacts what an agent wrote; the receipts
// of the tasks that wrote it still verify, and the store verifies clean.
func TestRuntimeRedact(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rt := openOperated(t, dir)
	put := func(id, v string) *runtime.Receipt {
		rc, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: id}, func(ctx context.Context, tx *runtime.Tx) error {
			return tx.Put(ctx, "skills/deploy.md", []byte(v))
		})
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	first := put("t1", "token=SECRET\n")
	put("t2", "token from the environment\n")
	rep, err := rt.Redact(ctx, repo.RedactRequest{Agent: "lumen", Key: "skills/deploy.md", At: first.Commit, Reason: "leaked"})
	if err != nil || rep.Removed != 1 {
		t.Fatalf("Redact: %+v %v", rep, err)
	}
	if _, err := rt.Redact(ctx, repo.RedactRequest{Agent: "lumen", Key: "nope.md", All: true, Reason: "x"}); err == nil {
		t.Fatal("a key that never existed was redacted")
	}
	rcs, err := rt.Receipts(ctx, "lumen")
	if err != nil || len(rcs) != 2 {
		t.Fatalf("receipts: %v %v", rcs, err)
	}
	for _, rc := range rcs {
		if err := rc.Verify(rt.PublicKey()); err != nil {
			t.Fatal(err)
		}
	}
	closeAndVerify(t, rt, dir)
}

// A task that writes a new version of a chunked value whose current version
// was redacted stores every chunk it needs: the redacted version's list
// nodes are still there and name its chunks, but those chunks are gone, so
// they do not count as stored. The store verifies clean and the new
// version reads back whole.
func TestPutOverARedactedChunkedValue(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rt := openOperated(t, dir)
	// A 2 MiB "database" of 4 KiB pages: chunked, every page its own chunk.
	db := make([]byte, 2<<20)
	copy(db, "SQLite format 3\x00")
	db[16], db[17] = 0x10, 0x00 // page size 4096
	for i := 100; i < len(db); i++ {
		db[i] = byte(i*7 + i/4096)
	}
	put := func(id string, v []byte) *runtime.Receipt {
		t.Helper()
		rc, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: id}, func(ctx context.Context, tx *runtime.Tx) error {
			return tx.Put(ctx, "memory.db", v)
		})
		if err != nil {
			t.Fatal(err)
		}
		return rc
	}
	first := put("t1", db)
	red, err := rt.Redact(ctx, repo.RedactRequest{Agent: "lumen", Key: "memory.db", At: first.Commit, Reason: "leaked"})
	if err != nil || red.Removed < 200 {
		t.Fatalf("Redact: %+v %v; want its distinct pages removed", red, err)
	}
	next := bytes.Clone(db)
	next[5000] ^= 1 // one page of 512 changed: the other 511 are the redacted version's
	put("t2", next)
	v, err := rt.View(ctx, "lumen", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Get(ctx, "memory.db")
	if err != nil || !bytes.Equal(got, next) {
		t.Fatalf("the new version reads back %d bytes (%v), want %d", len(got), err, len(next))
	}
	closeAndVerify(t, rt, dir)
}

// openOperated opens a runtime on dir signing with an operator key (what a
// redaction needs), closed when the test ends if it is still open.
func openOperated(t *testing.T, dir string) *runtime.Runtime {
	t.Helper()
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(context.Background(), runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// closeAndVerify closes the runtime and verifies its store clean.
func closeAndVerify(t *testing.T, rt *runtime.Runtime, dir string) {
	t.Helper()
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if vr, err := r.Verify(context.Background()); err != nil || len(vr.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, vr.Problems)
	}
}
