package badger_test

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
	"github.com/dgraph-io/badger/v4/options"
)

// tableCompressions counts the tables a closed store's MANIFEST lists by
// how each was compressed.
func tableCompressions(t *testing.T, dir string) map[options.CompressionType]int {
	t.Helper()
	n := map[options.CompressionType]int{}
	for _, tb := range manifestTables(t, dir) {
		n[tb.Compression]++
	}
	return n
}

// TestTablesOfAnotherCompression: a store whose tables older builds wrote
// compressed (ZSTD, then Snappy) opens and reads in full with this build's
// uncompressed tables written beside them, and after a compaction has
// rewritten them all uncompressed.
func TestTablesOfAnotherCompression(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	blocks := func(n int) []objects.Block {
		bs := make([]objects.Block, n)
		for i := range bs {
			data := make([]byte, 4096)
			rand.Read(data[:1024]) // the rest zeros: it compresses
			bs[i] = objects.NewValue(data)
		}
		return bs
	}
	check := func(s *badger.Store, bs []objects.Block) {
		t.Helper()
		for _, b := range bs {
			got, err := s.Get(ctx, b.CID)
			if err != nil || string(got) != string(b.Data) {
				t.Fatalf("block %s: %v (%d bytes back)", b.CID, err, len(got))
			}
		}
	}
	write := func(bs []objects.Block) {
		t.Helper()
		open := badger.Open
		if _, err := os.Stat(dir); err != nil {
			open = badger.Create
		}
		s, err := open(dir, badger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, bs...); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}

	var written [][]objects.Block
	for _, older := range []options.CompressionType{options.ZSTD, options.Snappy} {
		bs := blocks(300)
		restore := badger.SetTableCompression(older)
		write(bs)
		restore()
		written = append(written, bs)
		if n := tableCompressions(t, dir); n[older] == 0 || n[options.None] != 0 {
			t.Fatalf("the older builds' tables: %v, want %v among them and none uncompressed", n, older)
		}
	}
	young := blocks(300)
	write(young)
	written = append(written, young)
	if n := tableCompressions(t, dir); n[options.ZSTD] == 0 || n[options.Snappy] == 0 || n[options.None] == 0 {
		t.Fatalf("tables after a write by this build: %v, want all three", n)
	}
	checkAll := func() {
		t.Helper()
		s, err := badger.Open(dir, badger.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, bs := range written {
			check(s, bs)
		}
	}
	checkAll()

	s, err := badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Reclaim() // compacts every level into one
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := tableCompressions(t, dir); n[options.ZSTD] != 0 || n[options.Snappy] != 0 || n[options.None] == 0 {
		t.Fatalf("tables after a compaction: %v, want uncompressed only", n)
	}
	checkAll()
}
