package snapshot_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentstate/agentstate/ens"
	"github.com/agentstate/agentstate/ens/enstest"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/walrus/localstore"
)

// TestENSPointerBinding runs push and restore through the ENS pointer on the
// real ENS contracts (simulated chain): push writes agent-snapshot and
// agent-snapshot-binding, restore checks them, and a pair that disagrees, a
// missing binding or a malformed one is refused with HEAD unchanged.
func TestENSPointerBinding(t *testing.T) {
	ctx := context.Background()
	chain := enstest.NewChain(t)
	owner := chain.NewAccount(t)
	chain.Register(t, "lumen.eth", enstest.Address(owner))
	client, err := ens.Dial(ctx, chain.URL, chain.Registry)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	names := func(string) (string, error) { return "lumen.eth", nil }
	ptr := ens.SnapshotPointer{Client: client, Names: names, Signer: owner}
	ls, _ := localstore.Open(t.TempDir())
	r := newRepo(t)
	p := &snapshot.Pipeline{Repo: r, Cipher: testKey(t), Blobs: ls, Pointer: ptr}

	// No records yet.
	if _, err := p.Restore(ctx, "lumen", snapshot.RestoreOptions{}); !errors.Is(err, snapshot.ErrNoPointer) {
		t.Fatalf("no records: %v", err)
	}
	c1 := commitBrain(t, r, "lumen", map[string]string{"system.md": "v1"}, []string{"system.md"})
	v1, err := p.Push(ctx, "lumen", c1)
	if err != nil {
		t.Fatal(err)
	}
	c2 := commitBrain(t, r, "lumen", map[string]string{"system.md": "v2", "skills/a.md": "a"}, []string{"system.md", "skills/a.md"})
	v2, err := p.Push(ctx, "lumen", c2)
	if err != nil {
		t.Fatal(err)
	}
	if got := chain.Text(t, "lumen.eth", ens.PointerKey); got != string(v2.BlobID) {
		t.Fatalf("%s = %q, want %s", ens.PointerKey, got, v2.BlobID)
	}
	b, err := snapshot.ParseBinding(chain.Text(t, "lumen.eth", ens.BindingKey))
	if err != nil {
		t.Fatal(err)
	}
	if b.Blob != v2.BlobID || b.Commit != c2 || b.Tree != v2.Tree || b.Bundle.String() != v2.BundleHash || b.Size != v2.Size {
		t.Fatalf("binding %+v for push %+v", b, v2)
	}

	// Restore from the name alone into a fresh store.
	r2 := newRepo(t)
	got, err := (&snapshot.Pipeline{Repo: r2, Cipher: testKey(t), Blobs: ls, Pointer: ptr}).Restore(ctx, "lumen", snapshot.RestoreOptions{})
	if err != nil || got.Tree != v2.Tree {
		t.Fatalf("restore: %+v %v", got, err)
	}

	refused := func(what string, target error) {
		t.Helper()
		head, _ := r.Refs.Head(ctx, "lumen")
		n, _ := r.Refs.Entries(ctx, "lumen")
		if _, err := p.Restore(ctx, "lumen", snapshot.RestoreOptions{}); !errors.Is(err, target) {
			t.Fatalf("%s: want %v, got %v", what, target, err)
		} else {
			t.Logf("%s: %v", what, err)
		}
		unmoved(t, r, "lumen", head.Commit, len(n))
	}
	// The blob id rolled back to v1 without its binding (or a torn
	// update): the pair disagrees and is refused, never v1 restored.
	chain.SetText(t, owner, "lumen.eth", ens.PointerKey, string(v1.BlobID))
	refused("pair that disagrees", snapshot.ErrTornPointer)
	// The binding written first, the blob id not yet: refused too.
	chain.SetText(t, owner, "lumen.eth", ens.PointerKey, string(v2.BlobID))
	v1b, err := ptr.Read(ctx, "lumen")
	if err != nil {
		t.Fatal(err)
	}
	chain.SetText(t, owner, "lumen.eth", ens.BindingKey, func() string { x := v1b; x.Blob = v1.BlobID; return x.String() }())
	refused("binding ahead of the blob id", snapshot.ErrTornPointer)
	// An old-format name: a blob id and no binding.
	chain.SetText(t, owner, "lumen.eth", ens.BindingKey, "")
	refused("no binding", snapshot.ErrUnbound)
	chain.SetText(t, owner, "lumen.eth", ens.BindingKey, "agentstate-binding/1 nonsense")
	refused("malformed binding", snapshot.ErrBadBinding)

	// Pushing again repairs the pair.
	if _, err := p.Push(ctx, "lumen", c2); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Restore(ctx, "lumen", snapshot.RestoreOptions{}); err != nil {
		t.Fatalf("after a new push: %v", err)
	}
}
