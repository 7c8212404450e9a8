package objects

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// cachingStore is a BlockStore in memory with a NodeCache, for the tests
// of what a tree leaves in the cache.
type cachingStore struct {
	blocks map[CID][]byte
	nodes  *NodeCache
}

func (s *cachingStore) Get(_ context.Context, c CID) ([]byte, error) {
	if b, ok := s.blocks[c]; ok {
		return b, nil
	}
	return nil, errors.New("not found")
}

func (s *cachingStore) Has(_ context.Context, c CID) (bool, error) {
	_, ok := s.blocks[c]
	return ok, nil
}

func (s *cachingStore) Put(_ context.Context, blocks ...Block) error {
	for _, b := range blocks {
		s.blocks[b.CID] = b.Data
	}
	return nil
}

func (s *cachingStore) Nodes() *NodeCache { return s.nodes }

// Every node a tree flushes is cached with the layer its keys are at, as a
// node read from the store would be (entriesLayer), through random puts and
// deletes that grow the tree, split and merge its nodes and empty it again.
func TestFlushedLayers(t *testing.T) {
	ctx := context.Background()
	bs := &cachingStore{blocks: map[CID][]byte{}, nodes: NewNodeCache(64 << 20)}
	rnd := rand.New(rand.NewPCG(1, 2))
	root := EmptyTreeCID
	val := NewValue([]byte("v")).CID
	for round := range 60 {
		tr, err := LoadTree(ctx, bs, root)
		if err != nil {
			t.Fatal(err)
		}
		for range 1 + rnd.IntN(200) {
			k := fmt.Sprintf("k/%04d", rnd.IntN(3000))
			if round > 40 || rnd.IntN(3) == 0 {
				_, err = tr.Delete(ctx, k)
			} else {
				_, err = tr.Put(ctx, k, val)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if root, err = tr.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if len(bs.nodes.entries) < 50 {
		t.Fatalf("only %d nodes cached", len(bs.nodes.entries))
	}
	for id, n := range bs.nodes.entries {
		if want := entriesLayer(n.entries); n.layer != want {
			t.Errorf("node %s cached at layer %d, its keys are at %d", id, n.layer, want)
		}
	}
}
