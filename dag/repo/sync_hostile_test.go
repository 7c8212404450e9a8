package repo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/objectstest"
	"github.com/agentstate/agentstate/refs"
)

// hostileSender is a store that offers h.
func hostileSender(t *testing.T, h objectstest.Hostile) *repo.Repo {
	t.Helper()
	ms := memory.New()
	if err := ms.Put(context.Background(), h.Blocks...); err != nil {
		t.Fatal(err)
	}
	return repo.New(ms)
}

// receiver is a store with an agent "a" of a few commits.
func receiver(t *testing.T) *repo.Repo {
	t.Helper()
	dst := repo.New(memory.New())
	for i := range 3 {
		mustPut(t, dst, "a", fmt.Sprintf("k%d", i), "v")
	}
	return dst
}

// refusedFetch fetches h into dst and checks that it is refused and that
// nothing changed: HEAD where it was, the commit not there (so no later
// fetch takes it as held), verify clean.
func refusedFetch(t *testing.T, dst *repo.Repo, h objectstest.Hostile, want error) {
	t.Helper()
	ctx := context.Background()
	before := headOf(t, dst, "a")
	_, err := dst.Fetch(ctx, hostileSender(t, h), h.Head)
	if !errors.Is(err, want) {
		t.Fatalf("fetch: %v, want %v", err, want)
	}
	if _, err := dst.Integrate(ctx, "a", h.Head, false, refs.OpPull, ""); err == nil {
		t.Fatal("a refused history was integrated")
	}
	if headOf(t, dst, "a") != before {
		t.Fatal("HEAD moved")
	}
	if ok, _ := dst.Blocks.Has(ctx, h.Head); ok {
		t.Fatal("the refused commit was stored")
	}
	verifyClean(t, dst)
}

// Trees and chunked values the store's readers refuse are refused by a
// fetch (pull, clone, and a served store's pull in its server), and nothing
// changes.
func TestFetchRefusesWhatTheReaderRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		h    objectstest.Hostile
		want error
	}{
		{"empty root with a subtree", objectstest.EmptyRootWithSubtree(), objects.ErrNonCanonical},
		{"key at the wrong layer", objectstest.MisplacedLayer(), objects.ErrNonCanonical},
		{"key outside its range", objectstest.MisplacedRange(), objects.ErrNonCanonical},
		{"1000 nested chunk lists", objectstest.NestedChunks(1000), objects.ErrBadObject},
		{"deep chain", objectstest.DeepChain(1000), objects.ErrNonCanonical},
	} {
		t.Run(c.name, func(t *testing.T) {
			refusedFetch(t, receiver(t), c.h, c.want)
		})
	}
}

// A chain of tree nodes far deeper than any tree is refused without a
// stack as deep as it: run with the largest stack a goroutine may have
// lowered to 16 MiB, a walk that recursed once per node (as the copy did)
// dies with "stack overflow" long before the chain's end.
func TestFetchDeepChainDoesNotRecurse(t *testing.T) {
	h := objectstest.DeepChain(300_000)
	dst := receiver(t)
	defer debug.SetMaxStack(debug.SetMaxStack(16 << 20))
	refusedFetch(t, dst, h, objects.ErrNonCanonical)
}

// A hostile tree may link a node the receiver already holds, whole and
// sound in its own tree, where the reader refuses it: the fetch checks that
// it fits there.
func TestFetchRefusesAHeldNodeMisplaced(t *testing.T) {
	ctx := context.Background()
	dst := repo.New(memory.New())
	low := objectstest.KeyAt("a", 0)
	mustPut(t, dst, "a", low, "v")
	cm, err := dst.Commit(ctx, headOf(t, dst, "a"))
	if err != nil {
		t.Fatal(err)
	}
	held := cm.Tree // one node of a layer-0 key
	v := objects.NewValue([]byte("x"))
	for name, root := range map[string]objects.Block{
		"a layer too high": objectstest.TreeNode(held, objectstest.Entry{Key: objectstest.KeyAt("z", 2), Value: v.CID}),
		// a layer-1 key "0…" sorts before the held node's "a…": its left
		// subtree holds only keys below it
		"outside its range": objectstest.TreeNode(held, objectstest.Entry{Key: objectstest.KeyAt("0", 1), Value: v.CID}),
	} {
		t.Run(name, func(t *testing.T) {
			h := objectstest.Hostile{Blocks: []objects.Block{v, root}}
			c := objectstest.Commit(root.CID, name)
			h.Head, h.Blocks = c.CID, append(h.Blocks, c)
			refusedFetch(t, dst, h, objects.ErrNonCanonical)
		})
	}
}

// A store that holds such a tree already (imported before these checks)
// is reported by verify, where the reader would refuse it.
func TestVerifyReportsWhatTheReaderRefuses(t *testing.T) {
	ctx := context.Background()
	for _, h := range []objectstest.Hostile{
		objectstest.EmptyRootWithSubtree(), objectstest.MisplacedLayer(), objectstest.MisplacedRange(),
		objectstest.NestedChunks(1000), objectstest.DeepChain(100),
	} {
		ms := memory.New()
		if err := ms.Put(ctx, h.Blocks...); err != nil {
			t.Fatal(err)
		}
		r := repo.New(ms)
		if _, err := r.Refs.Move(ctx, refs.Move{Agent: "a", New: h.Head, Op: refs.OpPull, Time: 1}); err != nil {
			t.Fatal(err)
		}
		rep, err := r.Verify(ctx)
		if err != nil || len(rep.Problems) == 0 {
			t.Fatalf("verify of %s: %v, no problem reported", h.Blocks[len(h.Blocks)-1].CID, err)
		}
	}
}

// A store that took in a deep chain of tree nodes before these checks
// (an older version's import) has verify report it and du refuse it, each
// with a bounded stack: 16 MiB is far less than a recursion down the chain
// would take.
func TestDeepChainInAStoreDoesNotRecurse(t *testing.T) {
	ctx := context.Background()
	h := objectstest.DeepChain(300_000)
	ms := memory.New()
	if err := ms.Put(ctx, h.Blocks...); err != nil {
		t.Fatal(err)
	}
	r := repo.New(ms)
	if _, err := r.Refs.Move(ctx, refs.Move{Agent: "a", New: h.Head, Op: refs.OpImport, Time: 1}); err != nil {
		t.Fatal(err)
	}
	defer debug.SetMaxStack(debug.SetMaxStack(16 << 20))
	rep, err := r.Verify(ctx)
	if err != nil || len(rep.Problems) == 0 {
		t.Fatalf("verify: %v, problems %v", err, rep.Problems)
	}
	if _, err := r.DiskUsage(ctx, "a"); !errors.Is(err, objects.ErrNonCanonical) {
		t.Fatalf("du: %v, want ErrNonCanonical", err)
	}
}

// A hostile tree may name as a value a chunk list node the receiver holds
// (part of one of its chunked values): the reader refuses a list node as a
// value, and so does the fetch.
func TestFetchRefusesAHeldListAsAValue(t *testing.T) {
	ctx := context.Background()
	dst := repo.New(memory.New())
	content := make([]byte, 8<<20) // 8 MiB, about 128 chunks: list nodes under the file node
	rand.NewChaCha8([32]byte{7}).Read(content)
	v, blocks := objects.NewFileValue(content)
	var list objects.CID
	for _, b := range blocks {
		if b.CID.Codec() == objects.CodecDagCBOR && b.CID != v {
			list = b.CID
			break
		}
	}
	if list.IsZero() {
		t.Fatal("the value has no list node: make it larger")
	}
	mustPut(t, dst, "a", "other", "x")
	if _, err := dst.Edit(ctx, repo.EditRequest{Agent: "a", Message: "big", Blocks: blocks, Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) {
		return tr.Put(ctx, "big.bin", v)
	}}); err != nil {
		t.Fatal(err)
	}
	root := objectstest.TreeNode(objects.CID{}, objectstest.Entry{Key: "f", Value: list})
	c := objectstest.Commit(root.CID, "a list as a value")
	refusedFetch(t, dst, objectstest.Hostile{Head: c.CID, Blocks: []objects.Block{root, c}}, objects.ErrBadObject)
}
