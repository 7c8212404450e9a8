package sqlitedb_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// countingStore counts the block reads that reach the store.
type countingStore struct {
	objects.BlockStore
	mu   sync.Mutex
	gets map[objects.CID]int
}

func (s *countingStore) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	s.mu.Lock()
	s.gets[c]++
	s.mu.Unlock()
	return s.BlockStore.Get(ctx, c)
}

func (s *countingStore) reads() (n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.gets {
		n += k
	}
	clear(s.gets)
	return n
}

// twoVersions stores two versions of a memory.db one row apart, behind a
// counting store wrapped in a repository's cache (dag.CommitCache).
func twoVersions(t *testing.T, rows int) (bs *dag.CommitCache, count *countingStore, a, b []byte, va, vb objects.CID) {
	t.Helper()
	ctx := context.Background()
	file := memoryDB(t, rows)
	a, _ = os.ReadFile(file)
	sqlite3(t, file, "UPDATE messages SET body='changed' WHERE id=4000")
	b, _ = os.ReadFile(file)
	ms := memstore.New()
	va, ba := objects.NewFileValue(a)
	vb, bb := objects.NewFileValue(b)
	if err := ms.Put(ctx, append(ba, bb...)...); err != nil {
		t.Fatal(err)
	}
	count = &countingStore{BlockStore: ms, gets: map[objects.CID]int{}}
	return dag.WithCommitCache(count, 16), count, a, b, va, vb
}

// Pages over a repository's block store share the chunk nodes and pages
// they decode: after one version's pages are located, locating every page
// of a version one row apart reads only the few list nodes on the changed
// page's path (they were each read again before), and a page read before
// is not read (nor re-hashed) again. What is shared is the verified
// content: the pages read are the database's.
func TestPagesShareDecodedBlocks(t *testing.T) {
	ctx := context.Background()
	bs, count, _, b, va, vb := twoVersions(t, 20000)
	pa, err := sqlitedb.OpenPages(ctx, bs, va)
	if err != nil {
		t.Fatal(err)
	}
	defer pa.Close()
	for n := int64(1); n <= pa.PageCount(); n++ {
		if _, err := pa.PageCID(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	first := count.reads()
	if first < 20 {
		t.Fatalf("locating every page of a %d-page value read %d blocks: too few list nodes to show anything", pa.PageCount(), first)
	}
	pb, err := sqlitedb.OpenPages(ctx, bs, vb)
	if err != nil {
		t.Fatal(err)
	}
	defer pb.Close()
	for n := int64(1); n <= pb.PageCount(); n++ {
		if _, err := pb.PageCID(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	// The file node, page 1 (its header changed) and the list nodes above
	// the changed pages.
	second := count.reads()
	t.Logf("first version %d block reads, second %d", first, second)
	if second > 12 {
		t.Fatalf("locating every page of the second version read %d blocks (the first read %d): the list nodes both share were read again", second, first)
	}
	ps := int64(pa.PageSize())
	mid := pa.PageCount() / 2
	for _, n := range []int64{mid, mid + 1, 2} {
		if _, err := pa.Page(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	count.reads()
	for _, n := range []int64{mid, mid + 1, 2} {
		got, err := pb.Page(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b[(n-1)*ps:n*ps]) {
			t.Fatalf("page %d of the second version differs from its file", n)
		}
	}
	if r := count.reads(); r != 0 {
		t.Fatalf("pages the first version read, shared by the second, were read %d times again", r)
	}
}

// A shared decoded node is still checked where it is linked: a list node
// named as a value (where a file node, with its content's sha256, must be)
// is refused whether or not it was decoded before as a list node, and a
// deleted block that gc told the cache of is not served from it.
func TestSharedNodesCheckedWhereLinked(t *testing.T) {
	ctx := context.Background()
	bs, _, _, _, va, _ := twoVersions(t, 20000)
	pa, err := sqlitedb.OpenPages(ctx, bs, va)
	if err != nil {
		t.Fatal(err)
	}
	defer pa.Close()
	if _, err := pa.PageCID(ctx, pa.PageCount()); err != nil {
		t.Fatal(err)
	}
	data, err := bs.Get(ctx, va)
	if err != nil {
		t.Fatal(err)
	}
	links, err := objects.ChunkLinks(data)
	if err != nil {
		t.Fatal(err)
	}
	list := links[len(links)-1]
	if list.Codec() != objects.CodecDagCBOR {
		t.Fatalf("the value's last link %s is not a list node", list)
	}
	for range 2 {
		if _, err := sqlitedb.OpenPages(ctx, bs, list); !errors.Is(err, sqlitedb.ErrCorrupt) {
			t.Fatalf("a list node opened as a value: %v, want ErrCorrupt", err)
		}
	}
	// Page 1 is held in the shared cache; gc forgets it with the block.
	ms := bs.BlockStore.(*countingStore).BlockStore.(*memstore.Store)
	first, err := pa.PageCID(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	bs.Forget(first)
	ms.Delete(ctx, first)
	pb, err := sqlitedb.OpenPages(ctx, bs, va)
	if !errors.Is(err, objects.ErrNotFound) {
		if pb != nil {
			pb.Close()
		}
		t.Fatalf("a value whose first page gc deleted opened: %v, want ErrNotFound", err)
	}
}

// A few pages read in order (an overflow chain, neighbouring leaves) fetch
// nothing ahead; a scan does.
func TestReadAheadOnlyForScans(t *testing.T) {
	ctx := context.Background()
	file := memoryDB(t, 20000)
	a, _ := os.ReadFile(file)
	ms := memstore.New()
	va, blocks := objects.NewFileValue(a)
	if err := ms.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	count := &countingStore{BlockStore: ms, gets: map[objects.CID]int{}}
	p, err := sqlitedb.OpenPages(ctx, count, va)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for n := int64(1); n <= p.PageCount(); n++ {
		if _, err := p.PageCID(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	count.reads()
	for n := int64(100); n < 103; n++ {
		if _, err := p.Page(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	p.Close() // waits for any read ahead
	if r := count.reads(); r != 3 {
		t.Fatalf("reading 3 pages in order read %d chunks", r)
	}
	q, err := sqlitedb.OpenPages(ctx, count, va)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	for n := int64(200); n < 240; n++ {
		if _, err := q.Page(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	q.Close()
	if r := count.reads(); r <= 40 {
		t.Fatalf("a scan of 40 pages read %d blocks: nothing was fetched ahead", r)
	}
}

// fakeDB is a database file of n pages as the chunker cuts it (a SQLite
// header and 4096-byte pages), each page's bytes its own.
func fakeDB(n int) []byte {
	b := make([]byte, n*4096)
	for i := range n {
		h := sha256.Sum256([]byte{byte(i), byte(i >> 8), byte(i >> 16)})
		for off := i * 4096; off < (i+1)*4096; off += len(h) {
			copy(b[off:], h[:])
		}
	}
	copy(b, sqlitedb.Magic)
	b[16], b[17], b[18], b[19] = 0x10, 0x00, 1, 1
	return b
}

// treeHeight is how many levels of nodes a chunked value has above its
// raw chunks.
func treeHeight(t *testing.T, blocks []objects.Block, v objects.CID) int {
	byCID := map[objects.CID][]byte{}
	for _, b := range blocks {
		byCID[b.CID] = b.Data
	}
	h := 0
	for c := v; c.Codec() != objects.CodecRaw; h++ {
		n, err := objects.DecodeChunkNode(byCID[c])
		if err != nil {
			t.Fatal(err)
		}
		c = n.Chunks[0]
	}
	return h
}

// Two versions whose chunk trees differ in height (pages added past what
// one level of list nodes groups) share their list nodes at different
// depths under the file node: a node decoded at one depth is checked at
// the other and not read again.
func TestNodesSharedAtAnotherDepth(t *testing.T) {
	ctx := context.Background()
	full := fakeDB(3000)
	height := func(n int) int {
		v, blocks := objects.NewFileValue(full[:n*4096])
		return treeHeight(t, blocks, v)
	}
	lo, hi := 300, 3000 // height(lo) == 2 < height(hi); 300 pages are over objects.ChunkThreshold
	if height(lo) != 2 || height(hi) <= 2 {
		t.Fatalf("heights %d and %d", height(lo), height(hi))
	}
	for hi-lo > 1 {
		if m := (lo + hi) / 2; height(m) == 2 {
			lo = m
		} else {
			hi = m
		}
	}
	a, b := full[:lo*4096], full[:hi*4096] // one page apart, heights 2 and 3
	va, ba := objects.NewFileValue(a)
	vb, bb := objects.NewFileValue(b)
	ms := memstore.New()
	if err := ms.Put(ctx, append(ba, bb...)...); err != nil {
		t.Fatal(err)
	}
	count := &countingStore{BlockStore: ms, gets: map[objects.CID]int{}}
	bs := dag.WithCommitCache(count, 16)
	lists := 0
	for _, blk := range ba {
		if blk.CID.Codec() != objects.CodecRaw && blk.CID != va {
			lists++
		}
	}
	for i, v := range []objects.CID{va, vb} {
		p, err := sqlitedb.OpenPages(ctx, bs, v)
		if err != nil {
			t.Fatal(err)
		}
		for n := int64(1); n <= p.PageCount(); n++ {
			c, err := p.PageCID(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			if want := objects.Sum(objects.CodecRaw, [][]byte{a, b}[i][(n-1)*4096:n*4096]); c != want {
				t.Fatalf("version %d: page %d's chunk %s, want %s", i, n, c, want)
			}
		}
		p.Close()
		r := count.reads()
		if i == 1 && r >= lists/2 {
			t.Fatalf("the taller version read %d blocks to locate its pages; the shorter has %d list nodes, shared one level deeper", r, lists)
		}
		t.Logf("version %d (height %d): %d blocks read; %d list nodes in the shorter", i, treeHeight(t, [][]objects.Block{ba, bb}[i], v), r, lists)
	}
}
