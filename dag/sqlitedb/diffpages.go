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
	if p.nodes > maxIndexNodes {
		p.root = &indexNode{links: p.root.links, pages: p.root.pages}
		p.nodes = 0
	}
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
				run, err := sameRun(ctx, a, b, idx)
				if err != nil {
					return nil, err
				}
				if run == 0 {
					out = append(out, idx+1)
					run = 1
				}
				idx += run
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
// differ.
func sameRun(ctx context.Context, a, b *Pages, idx int64) (int64, error) {
	sa, err := a.topSpan(ctx, idx)
	if err != nil {
		return 0, err
	}
	sb, err := b.topSpan(ctx, idx)
	if err != nil {
		return 0, err
	}
	for {
		if sa.cid == sb.cid && sa.pages == sb.pages {
			return sa.pages, nil
		}
		ra, rb := sa.raw(), sb.raw()
		if ra && rb {
			return 0, nil
		}
		openA := !ra && (rb || sa.pages >= sb.pages)
		openB := !rb && (ra || sb.pages >= sa.pages)
		if openA {
			if sa, err = a.firstChild(ctx, sa); err != nil {
				return 0, err
			}
		}
		if openB {
			if sb, err = b.firstChild(ctx, sb); err != nil {
				return 0, err
			}
		}
	}
}

// Prefetch starts reading the given pages (numbered from 1) in the
// background, at most GOMAXPROCS reads at a time, and keeps them where the
// reads of them will find them: a caller that knows which pages it is
// about to read spreads the store's reads (each a lookup, a decompression
// and a re-hash) over the cores instead of waiting on each in turn. Pages
// out of range, held already, or of a value held whole are passed over; a
// read that fails is left for the read of that page itself to report.
func (p *Pages) Prefetch(ctx context.Context, pages []int64) {
	if p.whole != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, n := range pages {
		if n < 1 || n > p.PageCount() || p.stop.Err() != nil || ctx.Err() != nil {
			continue
		}
		c, err := p.locate(ctx, n-1)
		if err != nil {
			return
		}
		p.fetch(c, true)
	}
}

// fetch starts reading chunk c in the background unless it is held or on
// its way (p.mu held); keep also keeps it in the shared cache.
func (p *Pages) fetch(c objects.CID, keep bool) {
	if _, ok := p.cache[c]; ok {
		return
	}
	if _, ok := p.pending[c]; ok {
		return
	}
	if p.stop.Err() != nil {
		return
	}
	f := &fetch{c: c, keep: keep, done: make(chan struct{})}
	p.pending[c] = f
	p.queue = append(p.queue, f)
	if p.workers < max(runtime.GOMAXPROCS(0), 1) {
		p.workers++
		p.wg.Add(1)
		go p.work()
	}
}
