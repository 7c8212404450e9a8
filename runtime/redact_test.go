package runtime_test

import (
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
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
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
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if vr, err := r.Verify(ctx); err != nil || len(vr.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, vr.Problems)
	}
}
