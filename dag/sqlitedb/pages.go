package sqlitedb

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/agentstate/agentstate/objects"
)

// Magic is the first 16 bytes of every SQLite database file.
const Magic = "SQLite format 3\x00"

// HeaderSize is the length of a SQLite database file's header.
const HeaderSize = 100

// Cache bounds. SQLite keeps its own page cache per connection; these only
// spare the store repeated reads of the same chunk and chunk list.
const (
	chunkCacheSize = 160  // raw chunks (pages) kept
	maxIndexNodes  = 4096 // decoded chunk list nodes kept before the index is dropped and rebuilt lazily
	readAhead      = 32   // pages fetched ahead of a sequential scan, at most
	fetchBatch     = 16   // fetches a worker reads in one pass of the store, at most
	scanRun        = 4    // sequential reads in a row that make a scan
)

// Pages reads a SQLite value's bytes at any offset straight from the block
// store: the chunked file node's list nodes are decoded lazily, on the path to
// the page asked for, and the last chunks read are cached. A value of at most
// objects.ChunkThreshold bytes is one raw block and is held whole.
//
// A scan (pages read in order, as a full table scan or count(*) reads them)
// has the next pages fetched ahead, at most GOMAXPROCS at a time: a chunk's
// read from the store (a lookup, a decompression, a re-hash) is most of a
// page's cost, and the scan then waits on one fetch instead of each. Over a
// store that keeps decoded blocks (dag.CommitCache), Pages of the same or
// other values share the chunk nodes and pages they read (cache.go).
//
// A chunked SQLite value is cut at every page boundary (docs/format.md §8),
// so each raw chunk is one page: Pages checks that of every chunk it reads
// and every list node it decodes, and a value chunked otherwise is an error
// wrapping ErrCorrupt, never data.
//
// Pages is safe for concurrent use.
type Pages struct {
	bs       objects.BlockStore
	shared   decodedCache // bs's cache of decoded blocks, or nil (cache.go)
	value    objects.CID
	size     int64
	pageSize int
	header   [HeaderSize]byte

	mu    sync.Mutex
	whole []byte     // a raw (unchunked) value
	root  *indexNode // a chunked value's file node
	nodes int        // decoded list nodes held under root
	cache map[objects.CID][]byte
	order []objects.CID // cache eviction order, oldest first

	// Read-ahead.
	pending map[objects.CID]*fetch // chunks being fetched ahead
	last    int64                  // the page index read last
	run     int                    // how many reads in a row were sequential
	ahead   int64                  // the highest page index fetched ahead
	queue   []*fetch               // fetches no worker has taken yet
	workers int                    // workers running (at most GOMAXPROCS)
	wg      sync.WaitGroup
	stop    context.Context // cancelled by Close
	cancel  context.CancelFunc

	// aheadNodes, when ReadAheadDiff reads this value's list nodes ahead,
	// is closed when it has read them.
	aheadNodes chan struct{}
}

// fetch is one chunk being read ahead; done is closed when data or err is set.
type fetch struct {
	c        objects.CID
	finished bool // done is closed (p.mu)
	keep     bool // keep it in the shared cache too (see chunk)
	done     chan struct{}
	data     []byte
	err      error
}

// indexNode is a decoded chunk node with the page index each child starts at.
type indexNode struct {
	cid    objects.CID   // the node's CID (zero for the file node)
	links  []objects.CID // nil until the node is read (its size known from a record)
	starts []int64       // starts[i]: the first page of links[i]; nil until resolved
	kids   []*indexNode  // decoded list-node children, by link index
	pages  int64         // the pages the node covers
}

// OpenPages reads the value's header (its first chunk) and checks that it is
// a SQLite database: the 16-byte magic, a page size that is a power of two
// from 512 to 65536, and a length that is a whole number of pages. A value
// that is not one gets an error wrapping ErrNotDatabase.
func OpenPages(ctx context.Context, bs objects.BlockStore, value objects.CID) (*Pages, error) {
	p := &Pages{bs: bs, value: value, cache: make(map[objects.CID][]byte), pending: make(map[objects.CID]*fetch),
		last: -2, ahead: -1}
	p.shared, _ = bs.(decodedCache)
	p.stop, p.cancel = context.WithCancel(context.Background())
	var first []byte
	switch value.Codec() {
	case objects.CodecRaw:
		data, err := bs.Get(ctx, value)
		if err != nil {
			return nil, fmt.Errorf("sqlitedb: reading value %s: %w", value, err)
		}
		p.whole, p.size, first = data, int64(len(data)), data
	case objects.CodecDagCBOR:
		cn, err := p.chunkNode(ctx, value, 0)
		if err != nil {
			return nil, err
		}
		p.size = int64(cn.size)
		p.root = &indexNode{links: cn.links}
		// The first chunk is the leftmost leaf: no sizes are needed to find it.
		links, depth := cn.links, 0
		for {
			c := links[0]
			if c.Codec() == objects.CodecRaw {
				data, err := p.chunk(ctx, c, true)
				if err != nil {
					return nil, fmt.Errorf("sqlitedb: reading chunk %s of value %s: %w", c, value, err)
				}
				first = data
				break
			}
			depth++
			ln, err := p.chunkNode(ctx, c, depth)
			if err != nil {
				return nil, err
			}
			links = ln.links
		}
	default:
		return nil, fmt.Errorf("%w: value %s has codec 0x%x", ErrNotDatabase, value, value.Codec())
	}
	if len(first) < HeaderSize || !bytes.HasPrefix(first, []byte(Magic)) {
		return nil, fmt.Errorf("%w: value %s does not start with the SQLite header", ErrNotDatabase, value)
	}
	ps := int(binary.BigEndian.Uint16(first[16:18]))
	if ps == 1 {
		ps = 65536
	}
	if ps < 512 || ps&(ps-1) != 0 {
		return nil, fmt.Errorf("%w: value %s: the header's page size %d is not a power of two from 512 to 65536", ErrNotDatabase, value, ps)
	}
	if p.size == 0 || p.size%int64(ps) != 0 {
		return nil, fmt.Errorf("%w: value %s: %d bytes is not a whole number of %d-byte pages", ErrNotDatabase, value, p.size, ps)
	}
	p.pageSize = ps
	copy(p.header[:], first)
	if p.root != nil {
		if len(first) != ps {
			return nil, fmt.Errorf("%w: value %s: its first chunk is %d bytes, not one %d-byte page", ErrCorrupt, value, len(first), ps)
		}
		p.root.pages = p.size / int64(ps)
		p.remember(p.root.links[0], first) // usually the first chunk itself
	}
	return p, nil
}

// Value is the CID of the value read.
func (p *Pages) Value() objects.CID { return p.value }

// Size is the value's length in bytes.
func (p *Pages) Size() int64 { return p.size }

// PageSize is the database's page size, from its header.
func (p *Pages) PageSize() int { return p.pageSize }

// PageCount is the number of pages the value holds (Size / PageSize).
func (p *Pages) PageCount() int64 { return p.size / int64(p.pageSize) }

// Header returns the database file's 100-byte header.
func (p *Pages) Header() [HeaderSize]byte { return p.header }

// WALMode reports whether the header marks the database as in WAL mode
// (file format read and write versions 2).
func (p *Pages) WALMode() bool { return p.header[18] == 2 || p.header[19] == 2 }

// Page returns page n (numbered from 1, as SQLite numbers them) of the
// database. The slice is shared with the cache: the caller must not modify it.
func (p *Pages) Page(ctx context.Context, n int64) ([]byte, error) {
	if n < 1 || n > p.PageCount() {
		return nil, fmt.Errorf("%w: page %d of a %d-page database", ErrPageRange, n, p.PageCount())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pageLocked(ctx, n-1)
}

// PageCID returns the CID of the raw chunk holding page n (numbered from 1)
// of a chunked value: two versions of a database share a page exactly when
// its CIDs are equal. A value held in one raw block has no per-page CIDs and
// gets an error wrapping ErrUnchunked.
func (p *Pages) PageCID(ctx context.Context, n int64) (objects.CID, error) {
	if n < 1 || n > p.PageCount() {
		return objects.CID{}, fmt.Errorf("%w: page %d of a %d-page database", ErrPageRange, n, p.PageCount())
	}
	if p.root == nil {
		return objects.CID{}, fmt.Errorf("%w: value %s", ErrUnchunked, p.value)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.locate(ctx, n-1)
}

// ReadAt reads len(b) bytes from offset off (io.ReaderAt).
func (p *Pages) ReadAt(b []byte, off int64) (int, error) {
	return p.ReadAtContext(context.Background(), b, off)
}

// ReadAtContext is ReadAt under ctx.
func (p *Pages) ReadAtContext(ctx context.Context, b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("sqlitedb: negative offset %d", off)
	}
	if off >= p.size {
		return 0, io.EOF
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for n < len(b) && off < p.size {
		idx := off / int64(p.pageSize)
		page, err := p.pageLocked(ctx, idx)
		if err != nil {
			return n, err
		}
		c := copy(b[n:], page[off-idx*int64(p.pageSize):])
		n += c
		off += int64(c)
	}
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// pageLocked returns the page at 0-based index idx (p.mu held; it may be
// released while a fetch ahead of this read completes).
func (p *Pages) pageLocked(ctx context.Context, idx int64) ([]byte, error) {
	ps := int64(p.pageSize)
	if p.whole != nil {
		return p.whole[idx*ps : (idx+1)*ps], nil
	}
	c, err := p.locate(ctx, idx)
	if err != nil {
		return nil, err
	}
	p.scheduleAhead(ctx, idx)
	if data, ok := p.cache[c]; ok {
		return data, nil
	}
	if f, ok := p.pending[c]; ok {
		if i := slices.Index(p.queue, f); i >= 0 {
			// No worker has taken it: it is read here, now, rather than
			// after the fetches queued before it (a diff queues hundreds of
			// changed pages, and then reads b-tree pages it needs first).
			p.queue = slices.Delete(p.queue, i, i+1)
			p.mu.Unlock()
			data, err := p.chunk(ctx, c, f.keep)
			p.mu.Lock()
			f.data, f.err = data, err
			p.finish(f)
		} else {
			p.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
			}
			p.mu.Lock()
		}
		if data, ok := p.cache[c]; ok {
			return data, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// The fetch failed or its chunk was evicted: read it here, for this
		// read's own error.
	}
	data, err := p.chunk(ctx, c, true)
	if err != nil {
		return nil, fmt.Errorf("sqlitedb: reading page %d (chunk %s) of value %s: %w", idx+1, c, p.value, err)
	}
	if int64(len(data)) != ps {
		return nil, fmt.Errorf("%w: value %s: page %d's chunk %s is %d bytes, not one %d-byte page", ErrCorrupt, p.value, idx+1, c, len(data), ps)
	}
	p.remember(c, data)
	return data, nil
}

// scheduleAhead notes a read of page idx and, when the reads are a scan,
// starts fetching the pages after it that are not held or on their way.
func (p *Pages) scheduleAhead(ctx context.Context, idx int64) {
	if idx == p.last+1 {
		p.run++
	} else if idx != p.last {
		p.run, p.ahead = 0, idx
	}
	p.last = idx
	if p.run < scanRun || p.stop.Err() != nil {
		return
	}
	// As far ahead as the scan has come, up to readAhead: a short run of
	// sequential reads (a cell's overflow chain, a few neighbouring leaves a
	// diff reads) fetches little it will not use. The window is filled
	// again when the scan has read half of it, so the fetches go to the
	// workers in batches.
	window := min(int64(p.run), readAhead)
	if p.ahead-idx > window/2 {
		return
	}
	end := min(idx+window, p.PageCount()-1)
	for j := max(idx+1, p.ahead+1); j <= end; j++ {
		c, err := p.locate(ctx, j)
		if err != nil {
			return // the read of page j itself will say why
		}
		p.ahead = j
		p.fetch(c, false)
	}
}

// work is a worker reading the queued fetches until none is left. A worker
// takes its share of the queue at a time (at most fetchBatch) and reads it
// in one pass of the store where the store can (objects.BlockBatchReader):
// one transaction for the batch, not one a page. The workers live through
// a batch (a goroutine a fetch would grow a new stack for each, through the
// store's read and decompression).
func (p *Pages) work() {
	defer p.wg.Done()
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.queue) > 0 {
		n := min(len(p.queue), fetchBatch, max((len(p.queue)+p.workers-1)/p.workers, 1))
		batch := slices.Clone(p.queue[:n])
		clear(p.queue[:n])
		p.queue = p.queue[n:]
		if err := p.stop.Err(); err != nil {
			for _, f := range batch {
				f.err = err
			}
		} else {
			// Each fetch is done as its chunk arrives, not when the
			// batch is: a reader waiting on one waits for that read only.
			p.mu.Unlock()
			p.chunks(p.stop, batch, func(f *fetch) {
				p.mu.Lock()
				p.finish(f)
				p.mu.Unlock()
				// A reader this released is ready on this worker's core;
				// it runs now, not when the scheduler next preempts the
				// worker (up to 10 ms, with every core fetching).
				runtime.Gosched()
			})
			p.mu.Lock()
		}
		for _, f := range batch {
			p.finish(f)
		}
	}
	p.workers--
}

// finish ends fetch f (p.mu held), once: its chunk is held when it was
// read, and whoever waits on it is released.
func (p *Pages) finish(f *fetch) {
	if f.finished {
		return
	}
	f.finished = true
	delete(p.pending, f.c)
	if f.err == nil && len(f.data) == p.pageSize {
		p.remember(f.c, f.data)
	}
	close(f.done)
}

// Close stops the fetches ahead of a scan and waits for them.
func (p *Pages) Close() {
	p.cancel()
	p.wg.Wait()
}

func (p *Pages) remember(c objects.CID, data []byte) {
	if _, ok := p.cache[c]; ok {
		return
	}
	if len(p.order) >= chunkCacheSize {
		delete(p.cache, p.order[0])
		p.order = append(p.order[:0], p.order[1:]...)
	}
	p.cache[c] = data
	p.order = append(p.order, c)
}

// trimIndex drops the decoded list nodes below the root once there are
// more than maxIndexNodes of them (they are read again as needed).
func (p *Pages) trimIndex() {
	if p.nodes > maxIndexNodes {
		p.root = &indexNode{links: p.root.links, pages: p.root.pages}
		p.nodes = 0
	}
}

// locate returns the raw chunk holding the page at 0-based index idx,
// decoding the list nodes on its path.
func (p *Pages) locate(ctx context.Context, idx int64) (objects.CID, error) {
	p.trimIndex()
	n, depth := p.root, 0
	for {
		if err := p.resolve(ctx, n, depth); err != nil {
			return objects.CID{}, err
		}
		i := searchStarts(n.starts, idx)
		c := n.links[i]
		if n.kids[i] == nil { // a raw chunk
			return c, nil
		}
		idx -= n.starts[i]
		n, depth = n.kids[i], depth+1
	}
}

// resolve works out where each child of n starts, checking that the
// pages add up to what n records. A child list node's size is taken from
// what is known of it without a read where that can be (knownSizes), and
// the node itself is read only when it is resolved in its turn; a node
// known so far by its size alone (no links yet) is read first, and its
// own size must be the one known.
func (p *Pages) resolve(ctx context.Context, n *indexNode, depth int) error {
	if n.starts != nil {
		return nil
	}
	if n.links == nil {
		cn, err := p.chunkNode(ctx, n.cid, depth)
		if err != nil {
			return err
		}
		if cn.size != uint64(n.pages)*uint64(p.pageSize) {
			return fmt.Errorf("%w: value %s: chunk list %s covers %d bytes, its parent was told %d pages of %d bytes", ErrCorrupt, p.value, n.cid, cn.size, n.pages, p.pageSize)
		}
		n.links = cn.links
		p.nodes++
	}
	starts := make([]int64, len(n.links))
	kids := make([]*indexNode, len(n.links))
	nodes, sizes, known, err := p.knownSizes(ctx, n.links, depth+1)
	if err != nil {
		return err
	}
	var read []objects.CID
	var at []int
	for i, c := range n.links {
		if c.Codec() != objects.CodecRaw && !known[i] {
			read = append(read, c)
			at = append(at, i)
		}
	}
	if len(read) > 0 {
		got, err := p.chunkNodes(ctx, read, depth+1)
		if err != nil {
			return err
		}
		for k, i := range at {
			nodes[i], sizes[i] = got[k], got[k].size
		}
	}
	var at0 int64
	for i, c := range n.links {
		starts[i] = at0
		if c.Codec() == objects.CodecRaw {
			at0++
			continue
		}
		if sizes[i]%uint64(p.pageSize) != 0 {
			return fmt.Errorf("%w: value %s: chunk list %s covers %d bytes, not a whole number of %d-byte pages", ErrCorrupt, p.value, c, sizes[i], p.pageSize)
		}
		kids[i] = &indexNode{cid: c, pages: int64(sizes[i]) / int64(p.pageSize)}
		if nodes[i] != nil {
			kids[i].links = nodes[i].links
			p.nodes++
		}
		at0 += kids[i].pages
	}
	if at0 != n.pages {
		return fmt.Errorf("%w: value %s: a chunk node's parts hold %d pages, it records %d (the value is not chunked at its page size)", ErrCorrupt, p.value, at0, n.pages)
	}
	n.starts, n.kids = starts, kids
	return nil
}
