package sqlitedb_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// sizedStore is batchStore over a store that keeps list size records.
type sizedStore struct {
	*batchStore
	lr objects.ListSizeReader
}

func (s *sizedStore) ListSizes(ctx context.Context, cids []objects.CID, fn func(int, uint64)) error {
	return s.lr.ListSizes(ctx, cids, fn)
}

// listNodes is the set of a value's list nodes (not its file node).
func listNodes(t *testing.T, content []byte) map[objects.CID]bool {
	t.Helper()
	v, blocks := objects.NewFileValue(content)
	out := map[objects.CID]bool{}
	for _, b := range blocks {
		if b.CID.Codec() == objects.CodecDagCBOR && b.CID != v {
			out[b.CID] = true
		}
	}
	return out
}

// diffReads diffs two versions stored in bs (read through a counting
// wrapper, with the store's list size records when sized) and returns the
// pages found and the list nodes read.
func diffReads(t *testing.T, bs objects.BlockStore, sized bool, a, b []byte) ([]int64, map[objects.CID]int, error) {
	t.Helper()
	ctx := context.Background()
	va, vb, _ := storeVersions(t, bs, a, b)
	count := &batchStore{BlockStore: bs, gets: map[objects.CID]int{}}
	var under objects.BlockStore = count
	if sized {
		under = &sizedStore{count, bs.(objects.ListSizeReader)}
	}
	pa, pb := openVersions(t, dag.WithCommitCache(under, 16), va, vb)
	sqlitedb.ReadAheadDiff(ctx, pa, pb)
	got, err := sqlitedb.ChangedPages(ctx, pa, pb)
	count.mu.Lock()
	defer count.mu.Unlock()
	lists := listNodes(t, a)
	for c := range listNodes(t, b) {
		lists[c] = true
	}
	reads := map[objects.CID]int{}
	for c, k := range count.gets {
		if lists[c] {
			reads[c] = k
		}
	}
	return got, reads, err
}

// With the store's list size records, a diff reads no list node both
// versions link: their sizes number the pages after them. Without records
// (the same versions over a store that keeps none) it reads them, and the
// pages found are the same.
func TestDiffReadsNoSharedListNode(t *testing.T) {
	a, b := fixedVersions(t)
	inA, inB := listNodes(t, a), listNodes(t, b)
	shared := 0
	for c := range inA {
		if inB[c] {
			shared++
		}
	}
	want := pagesDiffer(a, b, 4096)
	if len(want) < 10 || shared < 20 {
		t.Fatalf("%d changed pages, %d shared list nodes: not a test of anything", len(want), shared)
	}

	st, err := badger.Create(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	got, reads, err := diffReads(t, st, true, a, b)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("with records: changed pages %v (%v), want %v", got, err, want)
	}
	for c := range reads {
		if inA[c] && inB[c] {
			t.Fatalf("with records, list node %s both versions link was read (%d list nodes read, %d shared)", c, len(reads), shared)
		}
	}

	got, plain, err := diffReads(t, memstore.New(), false, a, b)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("without records: changed pages %v (%v), want %v", got, err, want)
	}
	sharedRead := 0
	for c := range plain {
		if inA[c] && inB[c] {
			sharedRead++
		}
	}
	if sharedRead == 0 {
		t.Fatal("without records no shared list node was read: the test shows nothing")
	}
	t.Logf("list nodes read: %d with records, %d without (%d of them shared by both versions)", len(reads), len(plain), sharedRead)
}

// A record that does not decode is passed over (the node is read); a
// record that decodes but gives a size other than the node's makes the
// diff fail as corrupt, never number pages wrongly.
func TestDiffListSizeRecordsChecked(t *testing.T) {
	a, b := fixedVersions(t)
	want := pagesDiffer(a, b, 4096)
	inA, inB := listNodes(t, a), listNodes(t, b)
	var shared []objects.CID
	for c := range inA {
		if inB[c] {
			shared = append(shared, c)
		}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		rec  func(c objects.CID) []byte
		bad  bool
	}{
		{"garbled", func(c objects.CID) []byte { return []byte{0x80, 1, 2, 3, 4} }, false},
		{"checksum", func(c objects.CID) []byte {
			r := badger.EncodeListSize(c, 4096)
			r[len(r)-1] ^= 1
			return r
		}, false},
		{"lying", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := badger.Create(t.TempDir(), badger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			if _, _, err := objects.WriteValue(ctx, st, bytes.NewReader(a)); err != nil {
				t.Fatal(err)
			}
			for _, c := range shared {
				var rec []byte
				if tc.bad {
					size, ok := listSizeOf(t, st, c)
					if !ok {
						t.Fatalf("no record of list node %s", c)
					}
					rec = badger.EncodeListSize(c, size+4096)
				} else {
					rec = tc.rec(c)
				}
				if err := st.SetMeta(ctx, badger.ListSizePrefix+string(c.Bytes()), rec); err != nil {
					t.Fatal(err)
				}
			}
			got, reads, err := diffReads(t, st, true, a, b)
			if tc.bad {
				if !errors.Is(err, sqlitedb.ErrCorrupt) {
					t.Fatalf("records giving wrong sizes: pages %v, error %v; want ErrCorrupt", got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("changed pages %v (%v), want %v", got, err, want)
			}
			if len(reads) == 0 {
				t.Fatal("no list node read although no record could be used")
			}
		})
	}
}

// listSizeOf is the size st's record of list node c gives, if any.
func listSizeOf(t *testing.T, st *badger.Store, c objects.CID) (size uint64, ok bool) {
	t.Helper()
	if err := st.ListSizes(context.Background(), []objects.CID{c}, func(_ int, s uint64) { size, ok = s, true }); err != nil {
		t.Fatal(err)
	}
	return size, ok
}

// fixedVersions is a database of about 2000 pages with deterministic
// content, so that both versions' chunk trees have the same height (three
// levels of list nodes), and a version of it with about 60 pages changed.
func fixedVersions(t *testing.T) (a, b []byte) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "memory.db")
	sqlite3(t, file, `PRAGMA page_size=4096;
CREATE TABLE messages(id INTEGER PRIMARY KEY, role TEXT NOT NULL, body TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<60000)
INSERT INTO messages SELECT x, 'user', 'message ' || x || ' ' || hex(x*2654435761 % 4294967291) || hex(x*40503) FROM c;`)
	a, _ = os.ReadFile(file)
	sqlite3(t, file, `UPDATE messages SET body = 'edited ' || id WHERE id % 2999 = 0;`)
	b, _ = os.ReadFile(file)
	return a, b
}

// ChangedPages finds exactly the pages whose bytes differ, over stores
// with and without list size records, for random edits of a database-
// shaped value: single pages, runs of neighbours, pages added at the end
// and cut from it.
func TestChangedPagesRandomEdits(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	shaped := func(n int) []byte {
		b := make([]byte, n*4096)
		copy(b, "SQLite format 3\x00")
		binary.BigEndian.PutUint16(b[16:], 4096)
		for i := 1; i < n; i++ {
			binary.BigEndian.PutUint64(b[i*4096:], rng.Uint64())
		}
		return b
	}
	st, err := badger.Create(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for round := range 12 {
		a := shaped(1500 + rng.IntN(1500))
		b := append([]byte(nil), a...)
		for range 1 + rng.IntN(40) {
			at, run := 1+rng.IntN(len(b)/4096-1), 1+rng.IntN(6)
			for p := at; p < min(at+run, len(b)/4096); p++ {
				binary.BigEndian.PutUint32(b[p*4096+100:], rng.Uint32())
			}
		}
		switch round % 3 {
		case 1:
			b = append(b, shaped(1 + rng.IntN(200))[4096:]...)
		case 2:
			b = b[:len(b)-4096*(1+rng.IntN(200))]
		}
		want := pagesDiffer(a, b, 4096)
		for _, bs := range []objects.BlockStore{memstore.New(), st} {
			va, vb, _ := storeVersions(t, bs, a, b)
			pa, pb := openVersions(t, dag.WithCommitCache(bs, 16), va, vb)
			sqlitedb.ReadAheadDiff(ctx, pa, pb)
			got, err := sqlitedb.ChangedPages(ctx, pa, pb)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("round %d (%T): changed pages %v (%v), want %v", round, bs, got, err, want)
			}
		}
	}
}
