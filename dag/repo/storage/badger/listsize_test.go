package badger_test

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

// sqliteShaped is n pages of 4096 bytes that start as a SQLite database
// does, so the value is cut at every page; page i holds i.
func sqliteShaped(n int) []byte {
	b := make([]byte, n*4096)
	copy(b, "SQLite format 3\x00")
	binary.BigEndian.PutUint16(b[16:], 4096)
	for i := 1; i < n; i++ {
		binary.BigEndian.PutUint32(b[i*4096:], uint32(i))
	}
	return b
}

// listNodesOf returns the list nodes of a value's blocks and their sizes.
func listNodesOf(t *testing.T, blocks []objects.Block) map[objects.CID]uint64 {
	t.Helper()
	out := map[objects.CID]uint64{}
	for _, b := range blocks {
		if b.CID.Codec() != objects.CodecDagCBOR {
			continue
		}
		cn, err := objects.DecodeChunkNode(b.Data)
		if err != nil {
			t.Fatal(err)
		}
		if cn.SHA256 == nil {
			out[b.CID] = cn.Size
		}
	}
	return out
}

func sizesOf(t *testing.T, s *badger.Store, cids []objects.CID) map[objects.CID]uint64 {
	t.Helper()
	got := map[objects.CID]uint64{}
	if err := s.ListSizes(context.Background(), cids, func(i int, size uint64) {
		if _, dup := got[cids[i]]; dup {
			t.Fatalf("size of %s given twice", cids[i])
		}
		got[cids[i]] = size
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// Every chunk list node the store writes gets a size record in the same
// write (held with it when the write is deferred), none of its other
// blocks do, and deleting the node deletes its record.
func TestListSizeRecords(t *testing.T) {
	ctx := context.Background()
	for _, deferred := range []bool{false, true} {
		s, _ := createSync(t)
		v, blocks := objects.NewFileValue(sqliteShaped(600))
		lists := listNodesOf(t, blocks)
		if len(lists) < 5 {
			t.Fatalf("%d list nodes: not a test", len(lists))
		}
		wctx := ctx
		if deferred {
			wctx = badger.Deferred(ctx)
		}
		if err := s.Put(wctx, blocks...); err != nil {
			t.Fatal(err)
		}
		var all []objects.CID
		for _, b := range blocks {
			all = append(all, b.CID)
		}
		got := sizesOf(t, s, all)
		if len(got) != len(lists) {
			t.Fatalf("deferred %v: %d sizes for %d list nodes (file node %s)", deferred, len(got), len(lists), v)
		}
		for c, size := range lists {
			if got[c] != size {
				t.Fatalf("deferred %v: list node %s: size %d, want %d", deferred, c, got[c], size)
			}
		}
		var gone objects.CID
		for c := range lists {
			gone = c
			break
		}
		if err := s.Delete(ctx, gone); err != nil {
			t.Fatal(err)
		}
		if got := sizesOf(t, s, []objects.CID{gone}); len(got) != 0 {
			t.Fatalf("deferred %v: the record of deleted node %s is still read", deferred, gone)
		}
		n := 0
		if err := s.MetaPrefix(ctx, badger.ListSizePrefix, func(string, []byte) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if n != len(lists)-1 {
			t.Fatalf("deferred %v: %d records after deleting one of %d nodes", deferred, n, len(lists))
		}
		// Rebuilding writes the same records, and one for a node stored
		// with none.
		if err := s.DeleteMetaPrefix(ctx, badger.ListSizePrefix+string(blocks[len(blocks)-2].CID.Bytes())); err != nil {
			t.Fatal(err)
		}
		if w, err := s.RebuildListSizes(ctx); err != nil || w != len(lists)-1 {
			t.Fatalf("rebuild wrote %d records (%v), want %d", w, err, len(lists)-1)
		}
		got = sizesOf(t, s, all)
		if len(got) != len(lists)-1 {
			t.Fatalf("after rebuild %d sizes, want %d", len(got), len(lists)-1)
		}
		s.Close()
	}
}

// A record binds the size to the node's CID: read for another CID, or
// with a byte changed, it is no record.
func TestListSizeRecordChecks(t *testing.T) {
	_, blocks := objects.NewFileValue(sqliteShaped(600))
	lists := listNodesOf(t, blocks)
	var a, b objects.CID
	for c := range lists {
		if a.IsZero() {
			a = c
		} else {
			b = c
			break
		}
	}
	rec := badger.EncodeListSize(a, lists[a])
	if size, ok := badger.DecodeListSize(a, rec); !ok || size != lists[a] {
		t.Fatalf("record of %s decodes to %d, %v", a, size, ok)
	}
	if _, ok := badger.DecodeListSize(b, rec); ok {
		t.Fatal("a record decodes for another node")
	}
	for i := range rec {
		bad := append([]byte(nil), rec...)
		bad[i] ^= 0x10
		if _, ok := badger.DecodeListSize(a, bad); ok {
			t.Fatalf("a record with byte %d changed decodes", i)
		}
	}
	for _, short := range [][]byte{nil, rec[:4], append(append([]byte{}, rec...), 0)} {
		if _, ok := badger.DecodeListSize(a, short); ok {
			t.Fatalf("%x decodes", short)
		}
	}
}

// The record of docs/format.md "List sizes".
func TestListSizeVector(t *testing.T) {
	_, blocks := objects.NewFileValue(sqliteShaped(600))
	first := blocks[0]
	for _, b := range blocks {
		if _, ok := listNodesOf(t, []objects.Block{b})[b.CID]; ok {
			first = b
			break
		}
	}
	size, _ := objects.ListNodeSize(first.Data)
	rec := badger.EncodeListSize(first.CID, size)
	// Checked apart from this code: CRC-32C (Castagnoli) of the CID bytes
	// 017112201f60451e…72f172 and the uvarint 80c002, computed bit by bit.
	const wantCID, wantSize, wantRec = "bafyreia7mbcr4eodlut4zjw76gsova7quuenphvqygsbt3kuaipuw4xroi", 40960, "80c002c2cada41"
	t.Logf("list node %s (%d bytes) size %d record %s", first.CID, len(first.Data), size, hex.EncodeToString(rec))
	if first.CID.String() != wantCID || size != wantSize || hex.EncodeToString(rec) != wantRec {
		t.Fatalf("vector: node %s size %d record %x", first.CID, size, rec)
	}
}

// A store holding no list size record (written before they were kept)
// answers none without looking each up; once one is written, by this
// process or found at open, lookups find them, few (one by one) or many
// (one pass).
func TestListSizesNoneThenSome(t *testing.T) {
	ctx := context.Background()
	s, dir := createSync(t)
	_, blocks := objects.NewFileValue(sqliteShaped(600))
	lists := listNodesOf(t, blocks)
	var all []objects.CID
	for c := range lists {
		all = append(all, c)
	}
	if got := sizesOf(t, s, all); len(got) != 0 {
		t.Fatalf("%d sizes before any node was stored", len(got))
	}
	if err := s.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	for _, ask := range [][]objects.CID{all[:3], all} {
		if got := sizesOf(t, s, ask); len(got) != len(ask) {
			t.Fatalf("%d sizes for %d list nodes stored by this process", len(got), len(ask))
		}
	}
	s.Close()
	r, err := badger.Open(dir, badger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, ask := range [][]objects.CID{all[:3], all} {
		if got := sizesOf(t, r, ask); len(got) != len(ask) {
			t.Fatalf("after reopening: %d sizes for %d list nodes", len(got), len(ask))
		}
	}
}
