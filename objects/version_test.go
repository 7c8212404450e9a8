package objects_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// orderedStore checks what WriteVersion hands it: a chunk node's links are
// stored before it or earlier in the same Put (children before parents),
// and no block the store held before the write is handed to it again. It
// counts the list nodes read.
type orderedStore struct {
	*memstore.Store
	t      *testing.T
	before map[objects.CID]bool
	mu     sync.Mutex
	again  int
	gets   int
}

func (s *orderedStore) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	s.mu.Lock()
	s.gets++
	s.mu.Unlock()
	return s.Store.Get(ctx, c)
}

func (s *orderedStore) Put(ctx context.Context, blocks ...objects.Block) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	here := map[objects.CID]bool{}
	for _, b := range blocks {
		if s.before[b.CID] {
			s.again++
		}
		if b.CID.Codec() == objects.CodecDagCBOR {
			links, err := objects.ChunkLinks(b.Data)
			if err != nil {
				s.t.Errorf("put %s: %v", b.CID, err)
			}
			for _, l := range links {
				if ok, _ := s.Store.Has(ctx, l); !ok && !here[l] {
					s.t.Errorf("node %s handed to the store before its link %s", b.CID, l)
				}
			}
		}
		here[b.CID] = true
	}
	return s.Store.Put(ctx, blocks...)
}

// TestWriteVersion: a new version written over the previous one has the
// CID NewFileValue gives it and is whole in the store, every node after
// the blocks it links, none of the previous version's blocks handed to the
// store again; when a few pages changed, only a few of the previous
// version's list nodes are read. Page rewrites, a database grown and cut
// short, every page rewritten, and content cut at content-defined points
// with bytes inserted.
func TestWriteVersion(t *testing.T) {
	ctx := context.Background()
	const pages, pageSize = 16384, 512 // 8 MiB: three levels of list nodes
	base := fakeSQLite(pages, pageSize, 21)
	rewrite := func(b []byte, ps ...int) []byte {
		b = bytes.Clone(b)
		for _, p := range ps {
			copy(b[p*pageSize+40:], fmt.Sprintf("page %d rewritten", p))
		}
		return b
	}
	all := make([]int, pages)
	for i := range all {
		all[i] = i
	}
	cdc := randBytes(6<<20, 5)
	cdcNext := append(append(bytes.Clone(cdc[:3<<20]), []byte("inserted in the middle")...), cdc[3<<20:]...)
	cases := []struct {
		name      string
		old, next []byte
		fewReads  bool
	}{
		{"4 pages", base, rewrite(base, 2, 5000, 9000, 16380), true},
		{"first and last", base, rewrite(base, 1, pages-1), true},
		{"grown", base, append(bytes.Clone(base), fakeSQLite(300, pageSize, 22)...), true},
		{"cut short", base, base[:(pages-700)*pageSize], true},
		{"every page", base, rewrite(base, all...), false},
		{"unchanged", base, base, true},
		{"content-defined, bytes inserted", cdc, cdcNext, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old, blocks := objects.NewFileValue(tc.old)
			inner := memstore.New()
			if err := inner.Put(ctx, blocks...); err != nil {
				t.Fatal(err)
			}
			before := map[objects.CID]bool{}
			lists := 0
			for _, b := range blocks {
				before[b.CID] = true
				if b.CID.Codec() == objects.CodecDagCBOR {
					lists++
				}
			}
			bs := &orderedStore{Store: inner, t: t, before: before}
			k := objects.NewKnown(ctx)
			k.AddVersion(bs, old)
			v, n, err := objects.WriteVersion(ctx, bs, bytes.NewReader(tc.next), k, old)
			k.Stop()
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := objects.NewFileValue(tc.next); v != want || n != uint64(len(tc.next)) {
				t.Fatalf("value %s (%d bytes), NewFileValue gives %s (%d bytes)", v, n, want, len(tc.next))
			}
			got, err := objects.ReadValue(ctx, inner, v)
			if err != nil || !bytes.Equal(got, tc.next) {
				t.Fatalf("the new version read back: %v", err)
			}
			if bs.again > 0 {
				t.Fatalf("%d blocks of the previous version handed to the store again", bs.again)
			}
			if tc.fewReads && bs.gets > lists/4 {
				t.Fatalf("%d list nodes read of the previous version's %d", bs.gets, lists)
			}
			t.Logf("%d of %d list nodes read", bs.gets, lists)
		})
	}
}

// TestWriteVersionPreviousUnreadable: when the previous version's lists
// cannot be read (not in this store), the new version is written whole.
func TestWriteVersionPreviousUnreadable(t *testing.T) {
	ctx := context.Background()
	content := fakeSQLite(8192, 512, 31)
	old, _ := objects.NewFileValue(content)
	bs := memstore.New()
	k := objects.NewKnown(ctx)
	k.AddVersion(bs, old)
	v, _, err := objects.WriteVersion(ctx, bs, bytes.NewReader(content), k, old)
	k.Stop()
	if err != nil || v != old {
		t.Fatalf("value %s (%v), want %s", v, err, old)
	}
	if got, err := objects.ReadValue(ctx, bs, v); err != nil || !bytes.Equal(got, content) {
		t.Fatalf("read back: %v", err)
	}
}
