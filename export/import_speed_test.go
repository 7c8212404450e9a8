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
	get int
}

func (c *putCounter) Get(ctx context.Context, cid objects.CID) ([]byte, error) {
	c.mu.Lock()
	c.get++
	c.mu.Unlock()
	return c.BlockStore.Get(ctx, cid)
}

func (c *putCounter) Put(ctx context.Context, blocks ...objects.Block) error {
	c.mu.Lock()
	c.put += len(blocks)
	c.mu.Unlock()
	return c.BlockStore.Put(ctx, blocks...)
}

// A memory database with a few pages rewritten is imported without handing
// the store its unchanged pages again: they are the previous version's,
// known stored (objects.Known), so the store looks up only what changed,
// not every page of the file; of the previous version's list nodes only
// those above the pages' own and those over the changed pages are read.
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
	bs.put, bs.get = 0, 0
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
	// The previous version's list nodes above the bottom ones, the bottom
	// ones over the 4 pages, the tree: not the previous version's every list
	// node (some 140), each a lookup in a store on disk.
	if bs.get > 48 {
		t.Fatalf("4 changed pages of %d: %d blocks read from the store", pages, bs.get)
	}
	t.Logf("%d blocks read, %d handed to the store", bs.get, bs.put)
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

// The blocks an import skips are only those read from the store it writes
// to: a stat cache naming a version of memory.db that this store does not
// hold (its tree is there, the value is not) gets the file stored whole,
// file node included, even when the file, touched but unchanged, hashes to
// exactly that version.
func TestImportDirSkipsOnlyBlocksReadFromTheStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const pages, pageSize = 2048, 4096
	db := make([]byte, pages*pageSize)
	var key [32]byte
	key[0] = 9
	rand.NewChaCha8(key).Read(db)
	copy(db, "SQLite format 3\x00")
	binary.BigEndian.PutUint16(db[16:18], pageSize)
	writeFile(t, dir, "memory.db", db, 0)
	writeFile(t, dir, "skills/a.md", []byte("a skill"), 0)
	first := memstore.New()
	cache := &metaMap{}
	res, err := export.ImportDir(ctx, first, dir, export.ImportOptions{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := objects.LoadTree(ctx, first, res.Tree)
	v, _, _ := tr.Get(ctx, "memory.db")
	value := objects.StoredChunks(ctx, first, v)
	if len(value) < pages {
		t.Fatalf("memory.db has %d blocks, want one per page at least", len(value))
	}
	// A second store with every block of the first but memory.db's.
	second := memstore.New()
	for c, err := range first.AllCIDs(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := value[c]; ok {
			continue
		}
		data, err := first.Get(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := second.Put(ctx, objects.Block{CID: c, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, dir, "memory.db", db, time.Minute) // touched: read again
	res2, err := export.ImportDir(ctx, second, dir, export.ImportOptions{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if res2.Read != 1 || res2.Tree != res.Tree {
		t.Fatalf("read %d files, tree %s; want 1 and %s", res2.Read, res2.Tree, res.Tree)
	}
	if got, err := objects.ReadValue(ctx, second, v); err != nil || !bytes.Equal(got, db) {
		t.Fatalf("memory.db read back from the store it was imported into: %v", err)
	}
}
