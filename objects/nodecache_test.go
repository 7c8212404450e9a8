package objects_test

import (
	"context"
	"math/rand/v2"
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
