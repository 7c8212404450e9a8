package objects_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// benchTrees caches one stored tree per size: building the 1M-key tree
// takes seconds, so it is built once per benchmark binary run.
var benchTrees sync.Map // int -> *benchTree

type benchTree struct {
	once sync.Once
	bs   *memstore.Store
	root objects.CID
}

func benchKey(i int) string { return fmt.Sprintf("memory/%03d/%07d", i%100, i) }

func treeOf(b *testing.B, n int) (*memstore.Store, objects.CID) {
	v, _ := benchTrees.LoadOrStore(n, &benchTree{})
	bt := v.(*benchTree)
	bt.once.Do(func() {
		ctx := context.Background()
		bt.bs = memstore.New()
		t := objects.NewTree(bt.bs)
		val := objects.NewValue([]byte("v"))
		for i := range n {
			if _, err := t.Put(ctx, benchKey(i), val.CID); err != nil {
				b.Fatal(err)
			}
		}
		root, err := t.Commit(ctx)
		if err != nil {
			b.Fatal(err)
		}
		bt.root = root
	})
	return bt.bs, bt.root
}

// BenchmarkTreePut is one key write on a stored tree: load the root, put,
// encode and hash the changed path. Compare keys=1k with keys=1M.
func BenchmarkTreePut(b *testing.B) {
	for _, n := range []int{1_000, 1_000_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			ctx := context.Background()
			bs, root := treeOf(b, n)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				t, err := objects.LoadTree(ctx, bs, root)
				if err != nil {
					b.Fatal(err)
				}
				v := objects.NewValue(fmt.Appendf(nil, "value %d", i))
				if _, err := t.Put(ctx, benchKey((i*7919)%n), v.CID); err != nil {
					b.Fatal(err)
				}
				if _, blocks := t.Flush(); len(blocks) == 0 {
					b.Fatal("no node changed")
				}
			}
		})
	}
}

// BenchmarkDiffOneChange diffs two trees of 1M keys that differ in one.
func BenchmarkDiffOneChange(b *testing.B) {
	ctx := context.Background()
	const n = 1_000_000
	bs, root := treeOf(b, n)
	t, err := objects.LoadTree(ctx, bs, root)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := t.Put(ctx, benchKey(n/2), objects.NewValue([]byte("changed")).CID); err != nil {
		b.Fatal(err)
	}
	root2, err := t.Commit(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		changes := 0
		for _, err := range objects.DiffTrees(ctx, bs, root, root2) {
			if err != nil {
				b.Fatal(err)
			}
			changes++
		}
		if changes != 1 {
			b.Fatalf("%d changes, want 1", changes)
		}
	}
}

// BenchmarkNewFileValue hashes (and for large content chunks) a value.
func BenchmarkNewFileValue(b *testing.B) {
	for _, c := range []struct {
		name    string
		content []byte
	}{
		{"raw-1KiB", randBytes(1<<10, 1)},
		{"raw-1MiB", randBytes(1<<20, 2)},
		{"sqlite-16MiB", fakeSQLite(4096, 4096, 3)},
		{"cdc-16MiB", randBytes(16<<20, 4)},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(c.content)))
			b.ReportAllocs()
			for b.Loop() {
				objects.NewFileValue(c.content)
			}
		})
	}
}

// BenchmarkReadChunkedValue reads a 16 MiB chunked value back (re-hashing
// every chunk and the whole).
func BenchmarkReadChunkedValue(b *testing.B) {
	ctx := context.Background()
	content := fakeSQLite(4096, 4096, 5)
	bs := memstore.New()
	c, blocks := objects.NewFileValue(content)
	storeAll(b, bs, blocks)
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := objects.ReadValue(ctx, bs, c); err != nil {
			b.Fatal(err)
		}
	}
}
