package badger_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
	dgbadger "github.com/dgraph-io/badger/v4"
)

// manifestTables is the tables a closed store's MANIFEST lists.
func manifestTables(t *testing.T, dir string) map[uint64]dgbadger.TableManifest {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, dgbadger.ManifestFilename))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, _, err := dgbadger.ReplayManifestFile(f, 0, dgbadger.DefaultOptions(dir))
	if err != nil {
		t.Fatal(err)
	}
	return m.Tables
}

// levelZero counts the level-0 tables a closed store's MANIFEST lists.
func levelZero(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	for _, tb := range manifestTables(t, dir) {
		if tb.Level == 0 {
			n++
		}
	}
	return n
}

// Short processes that each write and close leave their memtable as a
// level-0 table (keys spread over the key space, as a commit's do), and the close of a store opened with CompactL0At of them
// merges level 0 down: level 0 never holds more than CompactL0At tables
// between processes, most closes skip the merge, and everything written
// reads back.
func TestShortWritesCompactLevelZero(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := badger.Create(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	var blocks []objects.Block
	var counts []int
	for i := range 3 * (badger.CompactL0At + 1) {
		s, err := badger.Open(dir, badger.Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Several blocks, as a commit writes: their hashes spread over the
		// key space, so the tables' key ranges overlap as real ones do.
		var bs []objects.Block
		for j := range 8 {
			bs = append(bs, objects.NewValue([]byte(fmt.Sprint("value ", i, " ", j))))
		}
		if err := s.Put(ctx, bs...); err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		counts = append(counts, levelZero(t, dir))
	}
	merged, kept := 0, 0
	for i, n := range counts {
		if n > badger.CompactL0At {
			t.Fatalf("after process %d level 0 holds %d tables (all: %v)", i, n, counts)
		}
		if n == 0 {
			merged++
		} else {
			kept++
		}
	}
	if merged < 2 || kept < 2*badger.CompactL0At {
		t.Fatalf("level-0 tables after each process: %v; want a merge every %d closes", counts, badger.CompactL0At+1)
	}
	s, err = badger.Open(dir, badger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, b := range blocks {
		if got, err := s.Get(ctx, b.CID); err != nil || string(got) != string(b.Data) {
			t.Fatalf("%s: %q, %v", b.CID, got, err)
		}
	}
}
