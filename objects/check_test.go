package objects_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
	"github.com/agentstate/agentstate/objects/objectstest"
)

// hostileTree stores h and returns its tree's root.
func hostileTree(t *testing.T, h objectstest.Hostile) (objects.BlockStore, objects.CID) {
	t.Helper()
	bs := memstore.New()
	if err := bs.Put(context.Background(), h.Blocks...); err != nil {
		t.Fatal(err)
	}
	cm, err := objects.DecodeCommit(h.Blocks[len(h.Blocks)-1].Data)
	if err != nil {
		t.Fatal(err)
	}
	return bs, cm.Tree
}

// checkWhole runs the one check over a whole tree, as the walks do: every
// node where its tree puts it, every value read as the reader reads it.
func checkWhole(ctx context.Context, bs objects.BlockStore, root objects.CID) error {
	stack := []objects.TreeSpot{objects.RootSpot(root)}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		data, err := bs.Get(ctx, s.CID)
		if err != nil {
			return err
		}
		subs, vals, err := objects.CheckTreeNode(s, data)
		if err != nil {
			return err
		}
		stack = append(stack, subs...)
		for _, v := range vals {
			if err := objects.CheckValue(ctx, bs, v, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// readAll reads every key and value of a tree as ls and get do.
func readAll(ctx context.Context, bs objects.BlockStore, root objects.CID) error {
	tr, err := objects.LoadTree(ctx, bs, root)
	if err != nil {
		return err
	}
	for e, err := range tr.Entries(ctx, "") {
		if err != nil {
			return err
		}
		if _, ok, err := tr.Get(ctx, e.Key); err != nil || !ok {
			return fmt.Errorf("key %q listed but not found: %v", e.Key, err)
		}
		if _, err := objects.ReadValue(ctx, bs, e.Value); err != nil {
			return err
		}
	}
	return nil
}

// The trees a hostile sender offers are refused by the reader and by the
// check the walks run, with the same kind of error; a canonical tree passes
// both.
func TestCheckRefusesWhatTheReaderRefuses(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		h    objectstest.Hostile
		want error
	}{
		{"deep chain", objectstest.DeepChain(1000), objects.ErrNonCanonical},
		{"empty root with a subtree", objectstest.EmptyRootWithSubtree(), objects.ErrNonCanonical},
		{"key at the wrong layer", objectstest.MisplacedLayer(), objects.ErrNonCanonical},
		{"key outside its range", objectstest.MisplacedRange(), objects.ErrNonCanonical},
		{"1000 nested chunk lists", objectstest.NestedChunks(1000), objects.ErrBadObject},
		{"9 nested chunk lists", objectstest.NestedChunks(objects.MaxChunkDepth + 1), objects.ErrBadObject},
	} {
		t.Run(c.name, func(t *testing.T) {
			bs, root := hostileTree(t, c.h)
			if err := readAll(ctx, bs, root); !errors.Is(err, c.want) {
				t.Errorf("reader: %v, want %v", err, c.want)
			}
			if err := checkWhole(ctx, bs, root); !errors.Is(err, c.want) || !objects.IsShapeError(err) {
				t.Errorf("check: %v, want %v", err, c.want)
			}
		})
	}
	// Nesting up to the bound reads and checks.
	bs, root := hostileTree(t, objectstest.NestedChunks(objects.MaxChunkDepth))
	if err := readAll(ctx, bs, root); err != nil {
		t.Fatalf("reader, %d nested lists: %v", objects.MaxChunkDepth, err)
	}
	if err := checkWhole(ctx, bs, root); err != nil {
		t.Fatalf("check, %d nested lists: %v", objects.MaxChunkDepth, err)
	}
	// A canonical tree, with chunked values, passes both.
	r := rand.New(rand.NewPCG(1, 5))
	bs = memstore.New()
	tr := objects.NewTree(bs)
	for i := range 2000 {
		content := []byte(fmt.Sprintf("value %d", i))
		if i%500 == 0 {
			content = bytes.Repeat(content, 300_000)
		}
		v, blocks := objects.NewFileValue(content)
		if err := bs.Put(ctx, blocks...); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Put(ctx, fmt.Sprintf("k/%x", r.Uint64()), v); err != nil {
			t.Fatal(err)
		}
	}
	root, err := tr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkWhole(ctx, bs, root); err != nil {
		t.Fatalf("check of a canonical tree: %v", err)
	}
	if err := readAll(ctx, bs, root); err != nil {
		t.Fatalf("reader of a canonical tree: %v", err)
	}
}

// A chunked value whose list node records the wrong size, or whose file
// node records another sha256, is refused by the check as by the reader.
func TestCheckValueSizesAndHash(t *testing.T) {
	ctx := context.Background()
	a, b := objects.NewValue([]byte("hello ")), objects.NewValue([]byte("world"))
	sum := func(s string) []byte { h := sha256Of(s); return h[:] }
	for _, c := range []struct {
		name   string
		blocks []objects.Block
		want   error
	}{
		{"list size lies", func() []objects.Block {
			l := objectstest.ChunkNode([]objects.CID{a.CID, b.CID}, 12, nil)
			return []objects.Block{l, objectstest.ChunkNode([]objects.CID{l.CID}, 11, sum("hello world"))}
		}(), objects.ErrBadObject},
		{"file size lies", []objects.Block{objectstest.ChunkNode([]objects.CID{a.CID, b.CID}, 10, sum("hello world"))}, objects.ErrBadObject},
		{"sha256 lies", []objects.Block{objectstest.ChunkNode([]objects.CID{a.CID, b.CID}, 11, sum("hello there"))}, objects.ErrHashMismatch},
		{"list as a value", []objects.Block{objectstest.ChunkNode([]objects.CID{a.CID, b.CID}, 11, nil)}, objects.ErrBadObject},
		{"file in a file", func() []objects.Block {
			in := objectstest.ChunkNode([]objects.CID{a.CID, b.CID}, 11, sum("hello world"))
			return []objects.Block{in, objectstest.ChunkNode([]objects.CID{in.CID}, 11, sum("hello world"))}
		}(), objects.ErrBadObject},
	} {
		t.Run(c.name, func(t *testing.T) {
			bs := memstore.New()
			if err := bs.Put(ctx, append([]objects.Block{a, b}, c.blocks...)...); err != nil {
				t.Fatal(err)
			}
			v := c.blocks[len(c.blocks)-1].CID
			if _, err := objects.ReadValue(ctx, bs, v); !errors.Is(err, c.want) {
				t.Errorf("reader: %v, want %v", err, c.want)
			}
			if err := objects.CheckValue(ctx, bs, v, nil); !errors.Is(err, c.want) {
				t.Errorf("check: %v, want %v", err, c.want)
			}
		})
	}
}

// A subtree checked where it was first met fits, or not, another place:
// TreeRanges finds its layer and key range from its edges.
func TestTreeRangesFits(t *testing.T) {
	ctx := context.Background()
	bs := memstore.New()
	tr := objects.NewTree(bs)
	v := val("v")
	for i := range 3000 {
		if _, err := tr.Put(ctx, fmt.Sprintf("k%05d", i), v); err != nil {
			t.Fatal(err)
		}
	}
	root, err := tr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := bs.Get(ctx, root)
	subs, _, err := objects.CheckTreeNode(objects.RootSpot(root), data)
	if err != nil || len(subs) < 2 {
		t.Fatalf("root: %d subtrees, %v", len(subs), err)
	}
	rg := objects.NewTreeRanges(bs)
	for _, s := range subs {
		if err := rg.Fits(ctx, s); err != nil {
			t.Fatalf("a subtree at its own place: %v", err)
		}
		wrongLayer := s
		wrongLayer.Layer++
		if err := rg.Fits(ctx, wrongLayer); !errors.Is(err, objects.ErrNonCanonical) {
			t.Fatalf("a subtree a layer up: %v", err)
		}
	}
	// The first subtree where the second belongs: its keys are out of range.
	moved := subs[1]
	moved.CID = subs[0].CID
	if err := rg.Fits(ctx, moved); !errors.Is(err, objects.ErrNonCanonical) {
		t.Fatalf("a subtree outside its range: %v", err)
	}
}

func sha256Of(s string) [32]byte { return sha256.Sum256([]byte(s)) }
