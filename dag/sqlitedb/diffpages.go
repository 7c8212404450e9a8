package sqlitedb

import (
	"bytes"
	"context"
	"fmt"
	"runtime"

	"github.com/agentstate/agentstate/objects"
)

// span is a link of a chunked value's node tree, a raw chunk (one page)
// or a list node, with the pages it covers and where it is linked.
type span struct {
	cid   objects.CID
	pages int64
	n     *indexNode // the node that links it, as links[i]
	i     int
	depth int // n's depth under the file node
}

func (s span) raw() bool { return s.n.kids[s.i] == nil }

// topSpan returns the outermost link that starts at the page at 0-based
// index idx: the nodes on the way are resolved (their children decoded,
// to number their pages), the link itself is not.
func (p *Pages) topSpan(ctx context.Context, idx int64) (span, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trimIndex()
	n, depth := p.root, 0
	for {
		if err := p.resolve(ctx, n, depth); err != nil {
			return span{}, err
		}
		i := searchStarts(n.starts, idx)
		if n.kids[i] == nil {
			return span{n.links[i], 1, n, i, depth}, nil
		}
		if n.starts[i] == idx {
			return span{n.links[i], n.kids[i].pages, n, i, depth}, nil
		}
		idx -= n.starts[i]
		n, depth = n.kids[i], depth+1
	}
}

// firstChild returns the first link of list node s (which starts where s
// does), resolving s.
func (p *Pages) firstChild(ctx context.Context, s span) (span, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := s.n.kids[s.i]
	if err := p.resolve(ctx, k, s.depth+1); err != nil {
		return span{}, err
	}
	if k.kids[0] == nil {
		return span{k.links[0], 1, k, 0, s.depth + 1}, nil
	}
	return span{k.links[0], k.kids[0].pages, k, 0, s.depth + 1}, nil
}

// searchStarts is the index of the link holding page idx: the last start
// at most idx.
func searchStarts(starts []int64, idx int64) int {
	lo, hi := 0, len(starts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if starts[m] <= idx {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo - 1
}

// ChangedPages lists the pages (numbered from 1) that differ between two
// versions of a database of one page size: those whose chunks differ, and
// those only the longer version has. It compares the two values' chunk
// trees, not their pages: a run of pages both versions hold under one
// chunk list node (the same CID) is passed over whole, with no read below
// that node, so the cost is in proportion to what changed and to how it is
// spread, not to the database's size. A value held in one raw block is
// compared page by page.
func ChangedPages(ctx context.Context, a, b *Pages) ([]int64, error) {
	if a.pageSize != b.pageSize {
		return nil, fmt.Errorf("sqlitedb: comparing pages of %d and %d bytes", a.pageSize, b.pageSize)
	}
	// The list nodes being read ahead (ReadAheadDiff) are waited for, not
	// read a second time.
	for _, p := range []*Pages{a, b} {
		if p.aheadNodes != nil {
			select {
			case <-p.aheadNodes:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	na, nb := a.PageCount(), b.PageCount()
	var out []int64
	if a.value != b.value {
		common := min(na, nb)
		if a.root == nil || b.root == nil {
			for n := int64(1); n <= common; n++ {
				x, err := a.Page(ctx, n)
				if err != nil {
					return nil, err
				}
				x = bytes.Clone(x)
				y, err := b.Page(ctx, n)
				if err != nil {
					return nil, err
				}
				if !bytes.Equal(x, y) {
					out = append(out, n)
				}
			}
		} else {
			for idx := int64(0); idx < common; {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				run, sa, sb, err := sameRun(ctx, a, b, idx)
				if err != nil {
					return nil, err
				}
				if run > 0 {
					idx += run
					continue
				}
				// Two pages that differ: the pages after them that both
				// their list nodes link are compared link by link, with
				// no walk from the root for each.
				out = append(out, idx+1)
				idx++
				for ia, ib := sa.i+1, sb.i+1; idx < common && ia < len(sa.n.links) && ib < len(sb.n.links) &&
					sa.n.kids[ia] == nil && sb.n.kids[ib] == nil; ia, ib = ia+1, ib+1 {
					if sa.n.links[ia] != sb.n.links[ib] {
						out = append(out, idx+1)
					}
					idx++
				}
			}
		}
	}
	for n := min(na, nb) + 1; n <= max(na, nb); n++ {
		out = append(out, n)
	}
	return out, nil
}

// sameRun is how many pages from idx (0-based) two versions share under
// one link: the outermost links starting at idx are compared, and where
// they differ the larger is opened, down to idx's own pages; 0 when those
// differ, with the two pages' spans (raw links, in the list nodes that
// hold them).
func sameRun(ctx context.Context, a, b *Pages, idx int64) (run int64, sa, sb span, err error) {
	if sa, err = a.topSpan(ctx, idx); err != nil {
		return 0, sa, sb, err
	}
	if sb, err = b.topSpan(ctx, idx); err != nil {
		return 0, sa, sb, err
	}
	for {
		if sa.cid == sb.cid && sa.pages == sb.pages {
			return sa.pages, sa, sb, nil
		}
		ra, rb := sa.raw(), sb.raw()
		if ra && rb {
			return 0, sa, sb, nil
		}
		openA := !ra && (rb || sa.pages >= sb.pages)
		openB := !rb && (ra || sb.pages >= sa.pages)
		if openA {
			if sa, err = a.firstChild(ctx, sa); err != nil {
				return 0, sa, sb, err
			}
		}
		if openB {
			if sb, err = b.firstChild(ctx, sb); err != nil {
				return 0, sa, sb, err
			}
		}
	}
}

// Prefetch starts reading the given pages (numbered from 1) in the
// background, at most GOMAXPROCS reads at a time, and keeps them where the
// reads of them will find them: a caller that knows which pages it is
// about to read spreads the store's reads (each a lookup, a decompression
// and a re-hash) over the cores instead of waiting on each in turn. The
// pages asked for go before those read ahead of a scan or by
// ReadAheadDiff that no read has taken yet: the caller is about to read
// them. Pages out of range, held already, or of a value held whole are
// passed over; a read that fails is left for the read of that page itself
// to report.
func (p *Pages) Prefetch(ctx context.Context, pages []int64) {
	if p.whole != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var fs []*fetch
	defer func() { p.first(fs) }()
	for _, n := range pages {
		if n < 1 || n > p.PageCount() || p.stop.Err() != nil || ctx.Err() != nil {
			continue
		}
		c, err := p.locate(ctx, n-1)
		if err != nil {
			return
		}
		if f := p.fetch(c, true); f != nil {
			fs = append(fs, f)
		}
	}
}

// fetch starts reading chunk c in the background unless it is held or on
// its way (p.mu held); keep also keeps it in the shared cache. It returns
// the chunk's fetch (nil when it is held or the reads have stopped).
func (p *Pages) fetch(c objects.CID, keep bool) *fetch {
	if _, ok := p.cache[c]; ok {
		return nil
	}
	if f, ok := p.pending[c]; ok {
		return f
	}
	if p.stop.Err() != nil {
		return nil
	}
	f := &fetch{c: c, keep: keep, done: make(chan struct{})}
	p.pending[c] = f
	p.queue = append(p.queue, f)
	if p.workers < max(runtime.GOMAXPROCS(0), 1) {
		p.workers++
		p.wg.Add(1)
		go p.work()
	}
	return f
}

// first moves the fetches among fs that no worker has taken yet to the
// front of the queue, in their order (p.mu held).
func (p *Pages) first(fs []*fetch) {
	if len(fs) == 0 {
		return
	}
	want := make(map[*fetch]bool, len(fs))
	for _, f := range fs {
		want[f] = true
	}
	front := make([]*fetch, 0, len(p.queue))
	var rest []*fetch
	for _, f := range p.queue {
		if want[f] {
			front = append(front, f)
		} else {
			rest = append(rest, f)
		}
	}
	p.queue = append(front, rest...)
}

// Read-ahead bounds of ReadAheadDiff: list nodes decoded and raw chunks
// fetched, at most, per pair of values.
const (
	aheadNodes = maxIndexNodes
	aheadPages = 1024
)

// ReadAheadDiff starts reading, in the background, what a comparison of
// two versions of a database (ChangedPages, then reads of the changed
// pages) will read, so that those reads are spread over the cores and
// overlap whatever the caller does meanwhile (opening the databases with
// SQLite, reading their schemas):
//
//   - the list nodes of both chunk trees, level by level, each level's in
//     one parallel pass of the store: a node both versions link at the same
//     depth is passed over with everything under it, as ChangedPages passes
//     it over; the others are decoded into the store's cache of decoded
//     blocks, where ChangedPages and the page reads find them;
//   - then the raw chunks (pages) one version links under those nodes and
//     the other does not, which are pages that differ: they are fetched as
//     Prefetch fetches.
//
// It changes no result: ChangedPages still works out every page number
// from the nodes themselves, and a node or page not read ahead is read
// where it is needed. Nothing is read ahead for a value held whole, for
// values of different page sizes or over different stores, or over a
// store that keeps no decoded blocks. The reads stop when either Pages is
// closed or ctx is done; at most aheadNodes list nodes and aheadPages
// pages of each value are read ahead.
func ReadAheadDiff(ctx context.Context, a, b *Pages) {
	if a == nil || b == nil || a.root == nil || b.root == nil || a.pageSize != b.pageSize ||
		a.bs != b.bs || a.shared == nil || a.value == b.value {
		return
	}
	stop, cancel := context.WithCancel(a.stop)
	cb := context.AfterFunc(b.stop, cancel)
	cc := context.AfterFunc(ctx, cancel)
	done := make(chan struct{})
	a.aheadNodes, b.aheadNodes = done, done
	a.wg.Add(1)
	b.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer b.wg.Done()
		defer cancel()
		defer cb()
		defer cc()
		defer close(done) // after the pages are queued: a read of one waits for its fetch
		onlyA, onlyB := differingLeaves(stop, a, b)
		for i, p := range []*Pages{a, b} {
			p.mu.Lock()
			for _, c := range [][]objects.CID{onlyA, onlyB}[i] {
				p.fetch(c, true)
			}
			p.mu.Unlock()
		}
	}()
}

// differingLeaves walks the two chunk trees level by level (see
// ReadAheadDiff) and returns the raw chunks each links under the nodes the
// other does not share, in link order, at most aheadPages of each. A list
// node linked by a node that is opened is read when the other version does
// not link it at that depth; when it does, ChangedPages needs only its size
// (to number the pages after it), which the store's record gives
// (knownSizes), and the node is read only where there is no record.
func differingLeaves(ctx context.Context, a, b *Pages) (onlyA, onlyB []objects.CID) {
	la, lb := a.root.links, b.root.links
	var rawA, rawB []objects.CID
	read := 0
	for depth := 1; depth <= objects.MaxChunkDepth+1 && len(la)+len(lb) > 0; depth++ {
		inA, inB := cidSet(la), cidSet(lb)
		// The nodes to open are read; of those both versions link, only
		// the size is needed (to number the pages after them), and it is
		// taken from the store's record of it where there is one.
		var todo, shared []objects.CID
		at := map[objects.CID]int{}
		for i, links := range [][]objects.CID{la, lb} {
			other := [2]map[objects.CID]bool{inB, inA}[i]
			for _, c := range links {
				if _, ok := at[c]; ok || c.Codec() == objects.CodecRaw {
					continue
				}
				at[c] = -1
				if other[c] {
					shared = append(shared, c)
				} else {
					at[c] = len(todo)
					todo = append(todo, c)
				}
			}
		}
		// The size records are looked up (one pass of one iterator) while
		// the nodes to open are read, on the other cores: neither waits for
		// the other. A shared node with no record is read after both.
		var known []bool
		var kerr error
		sizes := make(chan struct{})
		go func() {
			defer close(sizes)
			if len(shared) > 0 {
				_, _, known, kerr = a.knownSizes(ctx, shared, depth)
			}
		}()
		if read += len(todo); read > 2*aheadNodes || ctx.Err() != nil {
			<-sizes
			return nil, nil
		}
		nodes, err := a.chunkNodes(ctx, todo, depth)
		<-sizes
		if err != nil || kerr != nil {
			return nil, nil // the reads that need these nodes will say why
		}
		var unknown []objects.CID
		for i, c := range shared {
			if !known[i] {
				at[c] = len(nodes) + len(unknown)
				unknown = append(unknown, c)
			}
		}
		if len(unknown) > 0 {
			if read += len(unknown); read > 2*aheadNodes {
				return nil, nil
			}
			more, err := a.chunkNodes(ctx, unknown, depth)
			if err != nil {
				return nil, nil
			}
			nodes = append(nodes, more...)
		}
		// Links both versions hold at this depth are passed over with
		// everything under them; the others are opened.
		open := func(links []objects.CID, other map[objects.CID]bool, raw *[]objects.CID) (next []objects.CID) {
			for _, c := range links {
				switch {
				case other[c]:
				case c.Codec() == objects.CodecRaw:
					*raw = append(*raw, c)
				default:
					next = append(next, nodes[at[c]].links...)
				}
			}
			return next
		}
		la, lb = open(la, inB, &rawA), open(lb, inA, &rawB)
	}
	inA, inB := cidSet(rawA), cidSet(rawB)
	for _, c := range rawA {
		if !inB[c] && len(onlyA) < aheadPages {
			onlyA = append(onlyA, c)
		}
	}
	for _, c := range rawB {
		if !inA[c] && len(onlyB) < aheadPages {
			onlyB = append(onlyB, c)
		}
	}
	return onlyA, onlyB
}

func cidSet(cs []objects.CID) map[objects.CID]bool {
	m := make(map[objects.CID]bool, len(cs))
	for _, c := range cs {
		m[c] = true
	}
	return m
}
