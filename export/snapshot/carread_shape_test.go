package snapshot_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
	"github.com/agentstate/agentstate/objects/objectstest"
)

// hostileCAR frames h as a CAR whose root is its commit.
func hostileCAR(h objectstest.Hostile) []byte {
	var frames []carFrame
	for i := len(h.Blocks) - 1; i >= 0; i-- { // the commit first, as WriteCAR orders
		frames = append(frames, carFrame{h.Blocks[i].CID, h.Blocks[i].Data})
	}
	return joinCAR(objects.CARHeader(h.Head), frames...)
}

// Trees and chunked values the store's readers refuse are refused by a CAR
// import (import, restore --history), and nothing is written: a deep chain
// of tree nodes, a root with no entries but a subtree, a key at the wrong
// layer or outside its range, 1000 nested chunk lists.
func TestReadCARRefusesWhatTheReaderRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		h    objectstest.Hostile
		want error
	}{
		{"deep chain", objectstest.DeepChain(100_000), objects.ErrNonCanonical},
		{"empty root with a subtree", objectstest.EmptyRootWithSubtree(), objects.ErrNonCanonical},
		{"key at the wrong layer", objectstest.MisplacedLayer(), objects.ErrNonCanonical},
		{"key outside its range", objectstest.MisplacedRange(), objects.ErrNonCanonical},
		{"1000 nested chunk lists", objectstest.NestedChunks(1000), objects.ErrBadObject},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := seeded(t)
			mustRefuse(t, r, hostileCAR(c.h), snapshot.CAROptions{}, c.want)
			verifyOK(t, r)
		})
	}
}

// An incremental CAR may link a tree node the store holds, but only where
// the reader accepts it: a node of layer-0 keys the store holds, linked as
// the left subtree of a layer-2 key, is refused.
func TestReadCARRefusesAHeldNodeMisplaced(t *testing.T) {
	ctx := context.Background()
	r := seeded(t)
	h, err := r.Refs.Head(ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	cm, err := r.Commit(ctx, h.Commit)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := objects.LoadTree(ctx, r.Blocks, cm.Tree)
	if err != nil {
		t.Fatal(err)
	}
	v, _, _ := tr.Get(ctx, "note.md")
	if objects.KeyLayer("note.md") != 0 {
		t.Fatal("note.md is not a layer-0 key: pick another")
	}
	root := objectstest.TreeNode(cm.Tree, objectstest.Entry{Key: objectstest.KeyAt("z", 2), Value: v})
	c := objectstest.Commit(root.CID, "held node misplaced")
	in := joinCAR(objects.CARHeader(c.CID), carFrame{c.CID, c.Data}, carFrame{root.CID, root.Data})
	mustRefuse(t, r, in, snapshot.CAROptions{}, objects.ErrNonCanonical)
	verifyOK(t, r)
}

func verifyOK(t *testing.T, r *repo.Repo) {
	t.Helper()
	rep, err := r.Verify(context.Background())
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}

// MaxStaged counts what a block costs in memory, not its bytes alone: a
// sound CAR of 20,000 values of 4 bytes (80 KB of content) is refused under
// a 2 MiB bound (its CIDs and per-block entries take more), and nothing is
// written; the same CAR imports under a bound its Staged figure meets.
func TestReadCARCountsPerBlockCost(t *testing.T) {
	ctx := context.Background()
	ms := memstore.New()
	tr := objects.NewTree(ms)
	for i := range 20_000 {
		v := objects.NewValue(binary.BigEndian.AppendUint32(nil, uint32(i)))
		if err := ms.Put(ctx, v); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Put(ctx, fmt.Sprintf("k/%05d", i), v.CID); err != nil {
			t.Fatal(err)
		}
	}
	root, err := tr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := objectstest.Commit(root, "many tiny values")
	if err := ms.Put(ctx, c); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := snapshot.WriteCAR(ctx, &buf, ms, c.CID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes > 2<<20 {
		t.Fatalf("the CAR has %d bytes: the test wants one under 2 MiB", st.Bytes)
	}
	r := seeded(t)
	err = mustRefuse(t, r, buf.Bytes(), snapshot.CAROptions{MaxStaged: 2 << 20}, snapshot.ErrCARLimit)
	t.Log(err)
	if _, err := snapshot.ReadCAR(ctx, bytes.NewReader(buf.Bytes()), r.Blocks, snapshot.CAROptions{MaxStaged: st.Staged()}); err != nil {
		t.Fatalf("under its Staged figure, %d: %v", st.Staged(), err)
	}
	verifyOK(t, r)
}
