package sqlitedb_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// pagesDiffer is ChangedPages the slow way: every page's bytes compared.
func pagesDiffer(a, b []byte, ps int) []int64 {
	var out []int64
	for off := 0; off < max(len(a), len(b)); off += ps {
		if off+ps > len(a) || off+ps > len(b) || !bytes.Equal(a[off:off+ps], b[off:off+ps]) {
			out = append(out, int64(off/ps)+1)
		}
	}
	return out
}

// ChangedPages finds exactly the pages whose bytes differ: scattered
// updates, pages added at the end, a shorter version, values held whole.
func TestChangedPages(t *testing.T) {
	ctx := context.Background()
	file := memoryDB(t, 12000)
	v0, _ := os.ReadFile(file)
	sqlite3(t, file, `UPDATE messages SET body = 'edited ' || id WHERE id IN (3, 2500, 2501, 7000, 11999);`)
	v1, _ := os.ReadFile(file)
	sqlite3(t, file, `INSERT INTO messages(role, body) SELECT 'user', hex(randomblob(300)) FROM messages LIMIT 400;`)
	v2, _ := os.ReadFile(file)
	small := memoryDB(t, 50)
	s0, _ := os.ReadFile(small)
	sqlite3(t, small, `UPDATE messages SET body = 'x' WHERE id = 7;`)
	s1, _ := os.ReadFile(small)
	for _, c := range []struct {
		name string
		a, b []byte
	}{
		{"scattered updates", v0, v1},
		{"the same", v1, v1},
		{"pages added", v1, v2},
		{"pages removed", v2, v0},
		{"held whole", s0, s1},
		{"whole and chunked", s0, v0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ms := memstore.New()
			va, ba := objects.NewFileValue(c.a)
			vb, bb := objects.NewFileValue(c.b)
			if err := ms.Put(ctx, append(ba, bb...)...); err != nil {
				t.Fatal(err)
			}
			pa, err := sqlitedb.OpenPages(ctx, ms, va)
			if err != nil {
				t.Fatal(err)
			}
			defer pa.Close()
			pb, err := sqlitedb.OpenPages(ctx, ms, vb)
			if err != nil {
				t.Fatal(err)
			}
			defer pb.Close()
			got, err := sqlitedb.ChangedPages(ctx, pa, pb)
			if err != nil {
				t.Fatal(err)
			}
			if want := pagesDiffer(c.a, c.b, 4096); !slices.Equal(got, want) {
				t.Fatalf("changed pages %v, want %v", got, want)
			}
		})
	}
}

// ChangedPages passes over the chunk list nodes two versions share: a
// change in two spots of a large database (a row, and the header's
// counters) reads the list nodes on those spots' paths and their
// siblings', not every list node of the two values. (The database is
// built without random content, so its chunking is the same every run.)
func TestChangedPagesSkipsSharedNodes(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "memory.db")
	sqlite3(t, file, `PRAGMA page_size=4096;
CREATE TABLE messages(id INTEGER PRIMARY KEY, body TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<500000)
INSERT INTO messages SELECT x, printf('message %d %.60d', x, x*x) FROM c;`)
	a, _ := os.ReadFile(file)
	sqlite3(t, file, `UPDATE messages SET body = 'edited' WHERE id = 250000;`)
	b, _ := os.ReadFile(file)
	ms := memstore.New()
	va, vb, nodes := storeVersions(t, ms, a, b)
	count := &countingStore{BlockStore: ms, gets: map[objects.CID]int{}}
	bs := dag.WithCommitCache(count, 16) // the two versions share what they decode
	pa, pb := openVersions(t, bs, va, vb)
	count.reads()
	got, err := sqlitedb.ChangedPages(ctx, pa, pb)
	if err != nil {
		t.Fatal(err)
	}
	if want := pagesDiffer(a, b, 4096); !slices.Equal(got, want) || len(want) != 2 {
		t.Fatalf("changed pages %v, want %v", got, want)
	}
	if r := count.reads(); r > len(nodes)/3 {
		t.Fatalf("finding %d changed pages read %d blocks; the two values have %d list nodes", len(got), r, len(nodes))
	} else {
		t.Logf("finding %d changed pages read %d blocks; the two values have %d list nodes", len(got), r, len(nodes))
	}
}

// Prefetch reads the pages asked for ahead of their reads, each once: the
// reads after it reach the store for none of them.
func TestPrefetch(t *testing.T) {
	ctx := context.Background()
	content, _ := os.ReadFile(memoryDB(t, 12000))
	ms := memstore.New()
	v, blocks := objects.NewFileValue(content)
	if err := ms.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	count := &countingStore{BlockStore: ms, gets: map[objects.CID]int{}}
	p, err := sqlitedb.OpenPages(ctx, count, v)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := []int64{7, 90, 91, 200, 333, p.PageCount()}
	for _, n := range want {
		if _, err := p.PageCID(ctx, n); err != nil { // the list nodes on their paths
			t.Fatal(err)
		}
	}
	count.reads()
	p.Prefetch(ctx, append(want, 0, -1, p.PageCount()+1)) // out of range: passed over
	for _, n := range want {
		got, err := p.Page(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, content[(n-1)*4096:n*4096]) {
			t.Fatalf("page %d is not the file's", n)
		}
	}
	if r := count.reads(); r != len(want) {
		t.Fatalf("prefetching and reading %d pages read %d blocks", len(want), r)
	}
}

// batchStore counts the block reads that reach the store and the store
// calls (a Get, or a GetBatch of many blocks) they take.
type batchStore struct {
	objects.BlockStore
	mu    sync.Mutex
	gets  map[objects.CID]int
	calls int
}

func (s *batchStore) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	s.mu.Lock()
	s.gets[c]++
	s.calls++
	s.mu.Unlock()
	return s.BlockStore.Get(ctx, c)
}

func (s *batchStore) GetBatch(ctx context.Context, cids []objects.CID, fn func(int, []byte, error)) error {
	s.mu.Lock()
	for _, c := range cids {
		s.gets[c]++
	}
	s.calls++
	s.mu.Unlock()
	for i, c := range cids {
		data, err := s.BlockStore.Get(ctx, c)
		fn(i, data, err)
	}
	return nil
}

// ReadAheadDiff reads both versions' list nodes level by level, each
// level in a few store calls, and queues the pages that differ before
// ChangedPages returns: ChangedPages then reads no list node again, every
// changed page is held or on its way when it returns, and no block of the
// comparison and of the changed pages' reads reaches the store twice. The
// pages found are exactly those whose bytes differ.
func TestReadAheadDiff(t *testing.T) {
	ctx := context.Background()
	file := memoryDB(t, 30000)
	a, _ := os.ReadFile(file)
	sqlite3(t, file, `UPDATE messages SET body = 'edited ' || id WHERE id % 499 = 0;`)
	b, _ := os.ReadFile(file)
	ms := memstore.New()
	va, vb, nodes := storeVersions(t, ms, a, b)
	count := &batchStore{BlockStore: ms, gets: map[objects.CID]int{}}
	bs := dag.WithCommitCache(count, 16)
	pa, pb := openVersions(t, bs, va, vb)
	count.mu.Lock()
	clear(count.gets)
	count.calls = 0
	count.mu.Unlock()

	sqlitedb.ReadAheadDiff(ctx, pa, pb)
	got, err := sqlitedb.ChangedPages(ctx, pa, pb)

	if err != nil {
		t.Fatal(err)
	}
	want := pagesDiffer(a, b, 4096)
	if !slices.Equal(got, want) || len(want) < 20 {
		t.Fatalf("changed pages %v, want %v", got, want)
	}
	for _, n := range got[1:] { // page 1 (the header) may be the other's too
		for _, p := range []*sqlitedb.Pages{pa, pb} {
			if !sqlitedb.HeldOrFetching(ctx, p, n) {
				t.Fatalf("changed page %d is neither held nor being read when ChangedPages returns", n)
			}
		}
	}
	count.mu.Lock()
	nodeReads, calls := 0, count.calls
	for c, k := range count.gets {
		if nodes[c] {
			nodeReads += k
		}
	}
	count.mu.Unlock()
	// Three levels under the file node at most here, each read in at most
	// one call per core and version, and each read ahead of a page read.
	if limit := 3*2*runtime.GOMAXPROCS(0) + 2*len(want); calls > limit || nodeReads == 0 {
		t.Fatalf("%d list-node reads took %d store calls (with the pages' reads), want at most %d", nodeReads, calls, limit)
	}
	for _, n := range got {
		for i, p := range []*sqlitedb.Pages{pa, pb} {
			data, err := p.Page(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(data, [][]byte{a, b}[i][(n-1)*4096:n*4096]) {
				t.Fatalf("page %d of version %d is not the file's", n, i)
			}
		}
	}
	count.mu.Lock()
	defer count.mu.Unlock()
	for c, k := range count.gets {
		if k > 1 {
			t.Fatalf("block %s (%d list nodes, %d changed pages) was read %d times", c, nodeReads, len(want), k)
		}
	}
	t.Logf("%d changed pages of %d; %d list-node reads of %d list nodes; %d store calls before the page reads", len(want), len(a)/4096, nodeReads, len(nodes), calls)
}

// gateStore holds every Get once closed is set until open is closed,
// telling entered of each held Get.
type gateStore struct {
	objects.BlockStore
	closed  atomic.Bool
	entered chan struct{}
	open    chan struct{}
}

func (s *gateStore) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	if s.closed.Load() {
		s.entered <- struct{}{}
		<-s.open
	}
	return s.BlockStore.Get(ctx, c)
}

// Pages asked for by Prefetch go before the fetches queued before them
// that no worker has taken: a caller about to read them does not wait
// behind reads ahead (a diff's interior pages behind its changed pages).
func TestPrefetchGoesFirst(t *testing.T) {
	ctx := context.Background()
	content, _ := os.ReadFile(memoryDB(t, 12000))
	ms := memstore.New()
	v, blocks := objects.NewFileValue(content)
	if err := ms.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	gate := &gateStore{BlockStore: ms, entered: make(chan struct{}, 1024), open: make(chan struct{})}
	p, err := sqlitedb.OpenPages(ctx, gate, v)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	defer func() {
		gate.closed.Store(false)
		close(gate.open)
	}()
	if p.PageCount() < 400 {
		t.Fatalf("%d pages", p.PageCount())
	}
	for n := int64(1); n <= p.PageCount(); n++ {
		if _, err := p.PageCID(ctx, n); err != nil { // every list node decoded
			t.Fatal(err)
		}
	}
	gate.closed.Store(true)
	var ahead []int64
	for n := int64(2); n < 200; n++ {
		ahead = append(ahead, n)
	}
	p.Prefetch(ctx, ahead)
	for range min(runtime.GOMAXPROCS(0), 198) { // every worker holds a batch
		<-gate.entered
	}
	before := sqlitedb.Queued(p)
	if len(before) == 0 {
		t.Fatal("nothing left queued")
	}
	want := []int64{300, 301, 302}
	p.Prefetch(ctx, want)
	got := sqlitedb.Queued(p)
	if len(got) != len(before)+len(want) {
		t.Fatalf("%d queued, want %d", len(got), len(before)+len(want))
	}
	for i, n := range want {
		c, _ := p.PageCID(ctx, n)
		if got[i] != c {
			t.Fatalf("queue position %d holds %s, want page %d's chunk %s", i, got[i], n, c)
		}
	}
	if !slices.Equal(got[len(want):], before) {
		t.Fatal("the fetches queued before are not after the new ones, in their order")
	}
}

// storeVersions stores the file values of a and b in ms and returns them
// with the set of their nodes (file and list nodes: every block not raw).
func storeVersions(t *testing.T, ms objects.BlockStore, a, b []byte) (va, vb objects.CID, nodes map[objects.CID]bool) {
	t.Helper()
	va, ba := objects.NewFileValue(a)
	vb, bb := objects.NewFileValue(b)
	blocks := append(ba, bb...)
	if err := ms.Put(context.Background(), blocks...); err != nil {
		t.Fatal(err)
	}
	nodes = map[objects.CID]bool{}
	for _, blk := range blocks {
		if blk.CID.Codec() != objects.CodecRaw {
			nodes[blk.CID] = true
		}
	}
	return va, vb, nodes
}

// openVersions opens the pages of two values, closed when the test ends.
func openVersions(t *testing.T, bs objects.BlockStore, va, vb objects.CID) (pa, pb *sqlitedb.Pages) {
	t.Helper()
	open := func(v objects.CID) *sqlitedb.Pages {
		p, err := sqlitedb.OpenPages(context.Background(), bs, v)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	return open(va), open(vb)
}

// passGate is gateStore letting the Gets of some chunks through.
type passGate struct {
	*gateStore
	pass map[objects.CID]bool
}

func (s *passGate) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	if s.pass[c] {
		return s.BlockStore.Get(ctx, c)
	}
	return s.gateStore.Get(ctx, c)
}

// gatedPages opens a 12000-row database's pages over a passGate, which a
// test closes; the gate is opened and the pages closed when it ends.
func gatedPages(t *testing.T) ([]byte, *passGate, *sqlitedb.Pages) {
	t.Helper()
	content, _ := os.ReadFile(memoryDB(t, 12000))
	ms := memstore.New()
	v, blocks := objects.NewFileValue(content)
	if err := ms.Put(context.Background(), blocks...); err != nil {
		t.Fatal(err)
	}
	gate := &passGate{&gateStore{BlockStore: ms, entered: make(chan struct{}, 1024), open: make(chan struct{})}, map[objects.CID]bool{}}
	p, err := sqlitedb.OpenPages(context.Background(), gate, v)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		gate.closed.Store(false)
		close(gate.open)
		p.Close()
	})
	return content, gate, p
}

// A read of a page whose fetch is queued and not taken by a worker reads
// it there and then: it does not wait behind the fetches queued before it
// (here the workers are held, so waiting would never end), and the fetch
// is not read a second time.
func TestReadTakesItsQueuedFetch(t *testing.T) {
	ctx := context.Background()
	content, gate, p := gatedPages(t)
	for n := int64(1); n <= p.PageCount(); n++ {
		if _, err := p.PageCID(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := p.PageCID(ctx, 150)
	gate.pass[want] = true
	gate.closed.Store(true)
	var ahead []int64
	for n := int64(2); n < 200; n++ {
		ahead = append(ahead, n)
	}
	p.Prefetch(ctx, ahead)
	for range min(runtime.GOMAXPROCS(0), 198) {
		<-gate.entered
	}
	if !slices.Contains(sqlitedb.Queued(p), want) {
		t.Fatal("page 150 is not queued: the test shows nothing")
	}
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	go func() {
		data, err := p.Page(ctx, 150)
		done <- result{bytes.Clone(data), err}
	}()
	select {
	case r := <-done:
		if r.err != nil || !bytes.Equal(r.data, content[149*4096:150*4096]) {
			t.Fatalf("page 150: %v", r.err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the read of a queued page waited behind the fetches before it")
	}
	if slices.Contains(sqlitedb.Queued(p), want) {
		t.Fatal("the page read is still queued")
	}
}

// A fetch a worker has taken is done as soon as its chunk is read, not
// when the rest of the worker's batch is: here the next chunk of the
// batch is held for ever, and the read of the first still returns.
func TestFetchDoneBeforeItsBatch(t *testing.T) {
	ctx := context.Background()
	content, gate, p := gatedPages(t)
	workers := runtime.GOMAXPROCS(0)
	var ahead []int64
	for n := int64(2); n < int64(2+4*workers); n++ { // four a worker: page 2 and 3 in the first batch
		ahead = append(ahead, n)
		c, err := p.PageCID(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		gate.pass[c] = n != 3
	}
	gate.closed.Store(true)
	p.Prefetch(ctx, ahead)
	<-gate.entered // a worker read page 2 and holds at page 3
	done := make(chan error, 1)
	go func() {
		data, err := p.Page(ctx, 2)
		if err == nil && !bytes.Equal(data, content[4096:8192]) {
			err = errors.New("page 2 is not the file's")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the read of page 2 waited for the rest of its worker's batch")
	}
}
