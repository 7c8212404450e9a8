package badger

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
)

// TestHeadRecordsSkipOlderVersions: listing the agents' HEAD records reads
// the newest version of each and does not step over the older versions
// Badger still holds (a HEAD moved 3000 times in one process leaves 3000
// in its level-0 table): before, the listing read and decompressed every
// block holding them, for each log's decorations.
func TestHeadRecordsSkipOlderVersions(t *testing.T) {
	// The blocks read are counted through the block cache's metrics: a
	// cache for this test's stores.
	defer func(n int64) { blockCacheSize = n }(blockCacheSize)
	blockCacheSize = 32 << 20
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	s, err := Create(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	moves := map[string]int{"a": 3000, "b": 2, "c": 1}
	for _, agent := range []string{"a", "b", "c"} {
		for i := range moves[agent] {
			v := []byte(fmt.Sprintf("%s record %06d %s", agent, i, strings.Repeat("x", 80)))
			if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(headKey(agent), v) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m := s.db.BlockCacheMetrics()
	before := m.Hits() + m.Misses()
	var got []string
	for r, err := range s.HeadRecords(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Agent+"="+string(r.Data[:len(r.Agent)+14]))
	}
	blocks := m.Hits() + m.Misses() - before
	if m == nil || blocks == 0 {
		t.Fatal("no block read was counted")
	}
	want := []string{"a=a record 002999", "b=b record 000001", "c=c record 000000"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("HEAD records %q, want %q", got, want)
	}
	// Each agent's newest record and the seek past its older ones: a few
	// blocks, where the 3000 versions of a's take more than 15.
	t.Logf("listing read %d blocks", blocks)
	if blocks > 8 {
		t.Errorf("listing 3 HEAD records read %d blocks", blocks)
	}
}
