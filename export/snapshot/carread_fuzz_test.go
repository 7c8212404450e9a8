package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// memCommit commits files (key → content) on top of parents into ms, with
// the given time and message, and returns the commit's CID.
func memCommit(t testing.TB, ms objects.BlockStore, base objects.CID, files map[string]string, del []string, time int64, msg string, parents ...objects.CID) objects.CID {
	t.Helper()
	ctx := context.Background()
	tr := objects.NewTree(ms)
	if !base.IsZero() {
		var err error
		if tr, err = objects.LoadTree(ctx, ms, base); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keysOf(files) {
		v, blocks := objects.NewFileValue([]byte(files[k]))
		if err := ms.Put(ctx, blocks...); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range del {
		if _, err := tr.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	root, err := tr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := (&objects.Commit{Tree: root, Parents: parents, Time: time, Message: msg}).Block()
	if err != nil {
		t.Fatal(err)
	}
	if err := ms.Put(ctx, b); err != nil {
		t.Fatal(err)
	}
	return b.CID
}

func keysOf(m map[string]string) []string { return keys(m, false) }

func commitOf(t testing.TB, bs objects.BlockStore, c objects.CID) *objects.Commit {
	t.Helper()
	cm, err := dag.ReadCommit(context.Background(), bs, c)
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func carOf(t testing.TB, bs objects.BlockStore, root objects.CID) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := snapshot.WriteCAR(context.Background(), &buf, bs, root); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// fuzzHistory is a small history in a memory store: base (already in the
// receiving store) and head on top of it.
func fuzzHistory(t testing.TB) (src *memstore.Store, base, head objects.CID) {
	src = memstore.New()
	base = memCommit(t, src, objects.CID{}, map[string]string{"a.md": "alpha\n", "b/c.md": "gamma\n", "d.json": "{}\n"}, nil, 1700000000, "base")
	head = memCommit(t, src, commitOf(t, src, base).Tree, map[string]string{"b/e.md": "epsilon\n"}, []string{"a.md"}, 1700000100, "head", base)
	return src, base, head
}

// FuzzReadCAR: whatever the bytes, ReadCAR never panics; a refusal is
// ErrBadCAR and leaves the store as it was; an accepted CAR leaves a root
// commit in the store from which a verifying walk finds no problem.
func FuzzReadCAR(f *testing.F) {
	src, base, head := fuzzHistory(f)
	full := carOf(f, src, head)
	hdr, frames := splitCAR(f, full)
	baseReach := reachOf(f, src, base)
	var incr []carFrame
	for _, fr := range frames {
		if _, ok := baseReach[fr.cid]; !ok {
			incr = append(incr, fr)
		}
	}
	f.Add(full)
	f.Add(carOf(f, src, base))
	f.Add(joinCAR(hdr, incr...))
	f.Add(full[:len(full)-7])
	f.Add(flipLast(full))
	for _, h := range hostileHeaders(head) {
		f.Add(joinCAR(h, frames...))
	}
	f.Add(append(joinCAR(hdr, frames...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f))
	f.Add(joinCAR(hdr, append(frames, frames[0])...))
	f.Add(mutateCommitCAR(f, src, head, nonMinimalTime))
	f.Add(mutateCommitCAR(f, src, head, swapTimeTree))

	baseBlocks := map[objects.CID][]byte{}
	for c := range baseReach {
		data, err := src.Get(context.Background(), c)
		if err != nil {
			f.Fatal(err)
		}
		baseBlocks[c] = data
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ctx := context.Background()
		bs := memstore.New()
		for c, data := range baseBlocks {
			if err := bs.Put(ctx, objects.Block{CID: c, Data: data}); err != nil {
				t.Fatal(err)
			}
		}
		imp, err := snapshot.ReadCAR(ctx, bytes.NewReader(in), bs, snapshot.CAROptions{MaxBlock: 1 << 16, MaxStaged: 1 << 20})
		if err != nil {
			if !errors.Is(err, snapshot.ErrBadCAR) {
				t.Fatalf("refusal is not ErrBadCAR: %v", err)
			}
			if bs.Len() != len(baseBlocks) {
				t.Fatalf("a refused CAR changed the store: %d blocks, had %d (%v)", bs.Len(), len(baseBlocks), err)
			}
			return
		}
		if ok, err := bs.Has(ctx, imp.Root); err != nil || !ok {
			t.Fatalf("accepted CAR, root %s not in the store", imp.Root)
		}
		if _, err := dag.ReadCommit(ctx, bs, imp.Root); err != nil {
			t.Fatalf("accepted CAR, root is not a commit: %v", err)
		}
		if _, problems, err := dag.Walk(ctx, bs, []objects.CID{imp.Root}, dag.WalkOptions{VerifyValues: true}); err != nil || len(problems) > 0 {
			t.Fatalf("accepted CAR, walk: %v %v", err, problems)
		}
		if bs.Len() != len(baseBlocks)+imp.New {
			t.Fatalf("store holds %d blocks, want %d + %d new", bs.Len(), len(baseBlocks), imp.New)
		}
	})
}
