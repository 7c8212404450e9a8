package export_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// putCounter counts the blocks handed to Put: each is a lookup in a store
// on disk.
type putCounter struct {
	objects.BlockStore
	mu  sync.Mutex
	put int
}

func (c *putCounter) Put(ctx context.Context, blocks ...objects.Block) error {
	c.mu.Lock()
	c.put += len(blocks)
	c.mu.Unlock()
	return c.BlockStore.Put(ctx, blocks...)
}

// A memory database with a few pages rewritten is imported without handing
// the store its unchanged pages again: they are the previous version's,
// known stored (objects.StoredChunks), so the store looks up only what
// changed, not every page of the file.
func TestImportDirChangedDatabaseWritesOnlyChangedPages(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const pages, pageSize = 2048, 4096 // 8 MiB: over the chunking threshold
	db := make([]byte, pages*pageSize)
	var key [32]byte
	rand.NewChaCha8(key).Read(db)
	copy(db, "SQLite format 3\x00")
	binary.BigEndian.PutUint16(db[16:18], pageSize)
	writeFile(t, dir, "memory.db", db, 0)
	bs := &putCounter{BlockStore: memstore.New()}
	cache := &metaMap{}
	if _, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache}); err != nil {
		t.Fatal(err)
	}
	if bs.put < pages {
		t.Fatalf("first import stored %d blocks for %d pages", bs.put, pages)
	}
	for _, p := range []int{3, 700, 1500, 2040} { // 4 pages rewritten
		copy(db[p*pageSize+100:], "a row rewritten by the task")
	}
	writeFile(t, dir, "memory.db", db, time.Minute)
	bs.put = 0
	res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if res.Read != 1 {
		t.Fatalf("read %d files, want 1", res.Read)
	}
	if bs.put > 64 { // 4 pages, the list nodes above them, the tree
		t.Fatalf("4 changed pages of %d: %d blocks handed to the store", pages, bs.put)
	}
	if want := fresh(t, dir); res.Tree != want {
		t.Fatalf("tree %s, a fresh import gives %s", res.Tree, want)
	}
	tr, _ := objects.LoadTree(ctx, bs, res.Tree)
	v, _, _ := tr.Get(ctx, "memory.db")
	if got, err := objects.ReadValue(ctx, bs, v); err != nil || !bytes.Equal(got, db) {
		t.Fatalf("memory.db read back: %v", err)
	}
}

// A file that grows between the scan and its read is stored whole, below
// and past the chunking threshold: the read buffer is sized from the scan
// but never cuts a file short.
func TestStoreFilesFileGrewSinceScan(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	writeFile(t, dir, "small", []byte("abc"), 0)
	writeFile(t, dir, "big", []byte("abc"), 0)
	files, _, err := export.Scan(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	grown := map[string][]byte{
		"small": bytes.Repeat([]byte("grown "), 1000),
		"big":   bytes.Repeat([]byte("grown past the threshold "), objects.ChunkThreshold/10),
	}
	for k, v := range grown {
		if err := os.WriteFile(filepath.Join(dir, k), v, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bs := memstore.New()
	vals := map[string]objects.CID{}
	err = export.StoreFiles(ctx, bs, files, func(i int, v objects.CID) error {
		vals[files[i].Key] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range grown {
		got, err := objects.ReadValue(ctx, bs, vals[k])
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: stored %d bytes (%v), want %d", k, len(got), err, len(want))
		}
	}
}
