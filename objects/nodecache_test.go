package objects_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// cachingStore is a counting store with a node cache, as a repository's
// block store has.
type cachingStore struct {
	countingStore
	nodes *objects.NodeCache
}

func (c *cachingStore) Nodes() *objects.NodeCache { return c.nodes }

// A tree read through a store with a node cache reads each node from the
// store once; what it reads is the same; a forgotten node is read again;
// and the cache keeps to its bound.
func TestNodeCache(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(4, 2))
	m := randomKeys(r, 3000)
	bs := memstore.New()
	root := build(t, bs, m, keysOf(m))
	cs := &cachingStore{countingStore: countingStore{BlockStore: bs}, nodes: objects.NewNodeCache(1 << 20)}
	get := func(k string) {
		t.Helper()
		tr, err := objects.LoadTree(ctx, cs, root)
		if err != nil {
			t.Fatal(err)
		}
		v, ok, err := tr.Get(ctx, k)
		if err != nil || !ok || v != val(m[k]) {
			t.Fatalf("%s: %v %v %v", k, v, ok, err)
		}
	}
	keys := keysOf(m)
	get(keys[1234])
	first := cs.gets
	if first < 2 {
		t.Fatalf("the first read read %d nodes; the tree is too small for this test", first)
	}
	for range 5 {
		get(keys[1234])
	}
	if cs.gets != first {
		t.Fatalf("the same key read again read %d more nodes from the store", cs.gets-first)
	}
	// Every key, twice: the same answers, and the second pass from memory.
	for _, k := range keys {
		get(k)
	}
	all := cs.gets
	for _, k := range keys {
		get(k)
	}
	if cs.gets != all {
		t.Fatalf("a second pass over every key read %d nodes from the store", cs.gets-all)
	}
	cs.nodes.Forget(root)
	get(keys[0])
	if cs.gets != all+1 {
		t.Fatalf("after forgetting the root, a read read %d nodes, want 1", cs.gets-all)
	}

	// A cache smaller than the tree keeps to its bound and still answers.
	small := &cachingStore{countingStore: countingStore{BlockStore: bs}, nodes: objects.NewNodeCache(8 << 10)}
	for _, k := range keys {
		tr, err := objects.LoadTree(ctx, small, root)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok, err := tr.Get(ctx, k); err != nil || !ok || v != val(m[k]) {
			t.Fatalf("%s through a small cache: %v %v %v", k, v, ok, err)
		}
	}
	if n := small.nodes.Size(); n > 8<<10 {
		t.Fatalf("the cache holds %d bytes, over its bound of %d", n, 8<<10)
	}
}

// keyAt returns the first key "k<n>" at layer l.
func keyAt(t *testing.T, l int, after int) (string, int) {
	t.Helper()
	for n := after; n < 1<<20; n++ {
		k := fmt.Sprintf("k%07d", n)
		if objects.KeyLayer(k) == l {
			return k, n
		}
	}
	t.Fatalf("no key at layer %d", l)
	return "", 0
}

// A tree whose keys sit at the wrong layer is refused whether its nodes come
// from the store or from the node cache, which keeps each node's layer: a
// node read correctly as one tree's root, then linked at another depth by a
// hostile tree, is refused from memory as from the store.
func TestTreeRefusesMisplacedKeys(t *testing.T) {
	ctx := context.Background()
	v := val("v")
	k0, n := keyAt(t, 0, 0)
	k0b, _ := keyAt(t, 0, n+1)
	k1, _ := keyAt(t, 1, 0)
	k2, _ := keyAt(t, 2, 0)
	put := func(bs objects.BlockStore, data []byte) objects.CID {
		t.Helper()
		id := objects.Sum(objects.CodecDagCBOR, data)
		if err := bs.Put(ctx, objects.Block{CID: id, Data: data}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	read := func(bs objects.BlockStore, root objects.CID, key string) error {
		tr, err := objects.LoadTree(ctx, bs, root)
		if err != nil {
			return err
		}
		_, _, err = tr.Get(ctx, key)
		return err
	}
	sorted := func(ks ...string) []string { slices.Sort(ks); return ks }

	bs := memstore.New()
	// One node of layer-0 keys, a canonical tree on its own.
	leaf := put(bs, objects.EncodeNodeForTest(objects.CID{}, sorted(k0, k0b), v))
	// A root of keys of two layers.
	mixed := put(bs, objects.EncodeNodeForTest(objects.CID{}, sorted(k0, k1), v))
	// A layer-2 root whose left subtree, expected at layer 1, is the leaf.
	deep := put(bs, objects.EncodeNodeForTest(leaf, []string{k2}, v))
	if min(k0, k0b) > k2 {
		t.Fatalf("the layer-0 keys %q, %q sort after the layer-2 key %q: pick others", k0, k0b, k2)
	}

	for _, c := range []struct {
		name string
		bs   objects.BlockStore
	}{
		{"store", bs},
		{"cache", &cachingStore{countingStore: countingStore{BlockStore: bs}, nodes: objects.NewNodeCache(1 << 20)}},
	} {
		for pass := range 2 {
			if err := read(c.bs, leaf, k0); err != nil {
				t.Fatalf("%s pass %d: the canonical leaf: %v", c.name, pass, err)
			}
			if err := read(c.bs, mixed, k0); !errors.Is(err, objects.ErrNonCanonical) {
				t.Fatalf("%s pass %d: a root of keys of two layers: %v, want ErrNonCanonical", c.name, pass, err)
			}
			if err := read(c.bs, deep, min(k0, k0b)); !errors.Is(err, objects.ErrNonCanonical) {
				t.Fatalf("%s pass %d: layer-0 keys linked at layer 1: %v, want ErrNonCanonical", c.name, pass, err)
			}
		}
	}
}

// The nodes a tree flushes go into its store's node cache: a writer that
// changes a key and then reads the new tree (the next task, a diff against
// the tree before) reads none of the nodes it wrote back from the store,
// and sees what a read of the stored blocks sees.
func TestNodeCacheKeepsFlushedNodes(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 3))
	m := randomKeys(r, 2000)
	bs := memstore.New()
	root := build(t, bs, m, keysOf(m))
	cs := &cachingStore{countingStore: countingStore{BlockStore: bs}, nodes: objects.NewNodeCache(1 << 20)}
	keys := keysOf(m)
	slices.Sort(keys)
	for i, k := range []string{keys[17], keys[1500], "skills/new-one.md"} {
		tr, err := objects.LoadTree(ctx, cs, root)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Put(ctx, k, val(fmt.Sprint("changed ", i))); err != nil {
			t.Fatal(err)
		}
		next, err := tr.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		m[k] = fmt.Sprint("changed ", i)
		before := cs.gets
		nt, err := objects.LoadTree(ctx, cs, next)
		if err != nil {
			t.Fatal(err)
		}
		if v, ok, err := nt.Get(ctx, k); err != nil || !ok || v != val(m[k]) {
			t.Fatalf("%s in the new tree: %v %v %v", k, v, ok, err)
		}
		for ch, err := range objects.DiffTrees(ctx, cs, root, next) {
			if err != nil {
				t.Fatal(err)
			}
			if ch.Path != k {
				t.Fatalf("diff names %q, want only %q", ch.Path, k)
			}
		}
		if n := cs.gets - before; n != 0 {
			t.Fatalf("reading the tree just written read %d nodes back from the store", n)
		}
		// What the cache answered is what the stored blocks hold.
		fresh, err := objects.LoadTree(ctx, bs, next)
		if err != nil {
			t.Fatal(err)
		}
		var want, got []objects.Entry
		for e, err := range fresh.Entries(ctx, "") {
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, e)
		}
		for e, err := range nt.Entries(ctx, "") {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, e)
		}
		if !slices.Equal(want, got) || len(got) != len(m) {
			t.Fatalf("the tree read through the cache has %d entries, the stored one %d (want %d)", len(got), len(want), len(m))
		}
		root = next
	}
}
