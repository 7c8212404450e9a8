package sqlitedb

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/agentstate/agentstate/objects"
)

// decodedCache is a BlockStore's cache of what readers decoded from its
// blocks (dag.CommitCache, which every repository's Blocks is). Pages over
// such a store share, through it, the chunk nodes they decode and the
// pages they read: versions of one database share almost all of both (an
// edit rewrites only the pages it changes and the list nodes above them),
// and the readers that open many versions (a row's history, blame, a diff
// of two versions) would otherwise read and decode them again for every
// version, each a store lookup, a decompression and a re-hash. What a block
// decodes to is fixed by its CID, which the store checked when it read it;
// what depends on where a node is linked (its depth under the file node,
// the value's page size) is checked again at each use.
type decodedCache interface {
	Decoded(objects.CID) (any, bool)
	KeepDecoded(objects.CID, any, int64)
}

// chunkNode is a chunk node decoded and checked at a depth under the file
// node (objects.CheckChunkNode's checks depend on it). What those checks
// look at is kept with it, so that a node linked at another depth (two
// versions of a value whose trees differ in height share nodes at
// different depths) is checked there without being read again.
type chunkNode struct {
	depth int
	links []objects.CID
	size  uint64
	file  bool // it has a sha256: a file node
	lists bool // it links list nodes
}

// fits reports whether CheckChunkNode accepts the node at depth, as it
// accepted it at n.depth.
func (n *chunkNode) fits(depth int) bool {
	if depth == n.depth {
		return true
	}
	return n.file == (depth == 0) && depth <= objects.MaxChunkDepth && !(n.lists && depth >= objects.MaxChunkDepth)
}

// page is a raw chunk's bytes as kept in the shared cache.
type page []byte

// chunkNode returns the chunk node c at depth under the value's file node
// (0: the file node itself), decoded and checked, from the shared cache or
// the store. It must not be modified.
func (p *Pages) chunkNode(ctx context.Context, c objects.CID, depth int) (*chunkNode, error) {
	if p.shared != nil {
		if v, ok := p.shared.Decoded(c); ok {
			if n, ok := v.(*chunkNode); ok && n.fits(depth) {
				return n, nil
			}
		}
	}
	data, err := p.bs.Get(ctx, c)
	return p.decodeNode(c, depth, data, err)
}

// decodeNode checks and decodes chunk node c (at depth) read as data, err.
func (p *Pages) decodeNode(c objects.CID, depth int, data []byte, err error) (*chunkNode, error) {
	if err != nil {
		if depth == 0 {
			return nil, fmt.Errorf("sqlitedb: reading value %s: %w", c, err)
		}
		return nil, fmt.Errorf("sqlitedb: reading chunk list %s of value %s: %w", c, p.value, err)
	}
	cn, lists, err := objects.CheckChunkNode(objects.ChunkSpot{CID: c, Depth: depth}, data)
	if err != nil {
		return nil, fmt.Errorf("%w: value %s: %w", ErrCorrupt, p.value, err)
	}
	n := &chunkNode{depth: depth, links: cn.Chunks, size: cn.Size, file: cn.SHA256 != nil, lists: len(lists) > 0}
	if p.shared != nil {
		p.shared.KeepDecoded(c, n, int64(64+len(cn.Chunks)*48))
	}
	return n, nil
}

// chunkNodes decodes the list nodes among links (at depth under the file
// node), nil for a raw chunk: those the shared cache does not hold are read
// from the store at most GOMAXPROCS at a time, since a node's children are
// all needed at once (to number the pages under it). The first error, in
// link order, is returned.
func (p *Pages) chunkNodes(ctx context.Context, links []objects.CID, depth int) ([]*chunkNode, error) {
	out := make([]*chunkNode, len(links))
	var todo, again []int
	first := map[objects.CID]int{} // a node linked twice (a run of equal pages) is read once
	for i, c := range links {
		if c.Codec() == objects.CodecRaw {
			continue
		}
		if _, ok := first[c]; ok {
			again = append(again, i)
			continue
		}
		first[c] = i
		if p.shared != nil {
			if v, ok := p.shared.Decoded(c); ok {
				if n, ok := v.(*chunkNode); ok && n.fits(depth) {
					out[i] = n
					continue
				}
			}
		}
		todo = append(todo, i)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	errs := make([]error, len(links))
	// Each worker reads a share of them, in one pass of the store where
	// the store can.
	workers := max(min(len(todo)/4, runtime.GOMAXPROCS(0)), 1)
	br, batch := p.bs.(objects.BlockBatchReader)
	read := func(share []int) {
		if !batch || len(share) < 2 {
			for _, i := range share {
				if out[i], errs[i] = p.chunkNode(ctx, links[i], depth); errs[i] != nil {
					return
				}
			}
			return
		}
		cids := make([]objects.CID, len(share))
		for k, i := range share {
			cids[k] = links[i]
		}
		if err := br.GetBatch(ctx, cids, func(k int, data []byte, err error) {
			i := share[k]
			out[i], errs[i] = p.decodeNode(links[i], depth, data, err)
			// Let a goroutine waiting for a core run (a diff opens its
			// databases while its list nodes are read ahead on every core).
			runtime.Gosched()
		}); err != nil {
			errs[share[0]] = err
		}
	}
	if workers == 1 {
		read(todo)
	} else {
		var wg sync.WaitGroup
		per := (len(todo) + workers - 1) / workers
		for lo := 0; lo < len(todo); lo += per {
			wg.Add(1)
			go func(share []int) {
				defer wg.Done()
				read(share)
			}(todo[lo:min(lo+per, len(todo))])
		}
		wg.Wait()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, i := range todo {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if out[i] == nil {
			return nil, fmt.Errorf("sqlitedb: chunk list %s of value %s was not read", links[i], p.value)
		}
	}
	for _, i := range again {
		out[i] = out[first[links[i]]]
	}
	return out, nil
}

// chunks reads the fetches' raw chunks as chunk does, those the shared
// cache does not hold in one pass of the store when it can, calling done
// with each fetch as soon as its chunk (or its error) is in.
func (p *Pages) chunks(ctx context.Context, fs []*fetch, done func(*fetch)) {
	var miss []*fetch
	for _, f := range fs {
		if p.shared != nil {
			if v, ok := p.shared.Decoded(f.c); ok {
				if b, ok := v.(page); ok {
					f.data = b
					done(f)
					continue
				}
			}
		}
		miss = append(miss, f)
	}
	br, ok := p.bs.(objects.BlockBatchReader)
	if !ok || len(miss) < 2 {
		for _, f := range miss {
			f.data, f.err = p.chunk(ctx, f.c, f.keep)
			done(f)
		}
		return
	}
	cids := make([]objects.CID, len(miss))
	for i, f := range miss {
		cids[i] = f.c
	}
	err := br.GetBatch(ctx, cids, func(i int, data []byte, err error) {
		f := miss[i]
		f.data, f.err = data, err
		if err == nil && f.keep && p.shared != nil {
			p.shared.KeepDecoded(f.c, page(data), int64(len(data)+64))
		}
		done(f)
	})
	if err != nil {
		for _, f := range miss {
			if f.data == nil && f.err == nil {
				f.err = err
			}
		}
	}
}

// chunk returns raw chunk c's bytes from the shared cache or the store
// (which checks them against c), keeping them in the shared cache when
// keep is set (a scan's pages read ahead are not kept: they would push out
// what other readers share). The slice must not be modified.
func (p *Pages) chunk(ctx context.Context, c objects.CID, keep bool) ([]byte, error) {
	if p.shared != nil {
		if v, ok := p.shared.Decoded(c); ok {
			if b, ok := v.(page); ok {
				return b, nil
			}
		}
	}
	data, err := p.bs.Get(ctx, c)
	if err != nil {
		return nil, err
	}
	if keep && p.shared != nil {
		p.shared.KeepDecoded(c, page(data), int64(len(data)+64))
	}
	return data, nil
}

// listSize is a chunk list node's size as the store's record of it gives
// it (objects.ListSizeReader), kept in the shared cache beside decoded
// nodes: a reader that needs only the size of a node (a run of pages two
// versions share, passed over whole) takes it from there and never reads
// the node. Unlike a decoded block it is the store's word, not checked
// against the CID: it is the size the node recorded when it was written
// (the store writes the record from the node, and verify checks it), and
// a node that is read later is checked against it (resolve).
type listSize uint64

// knownSizes returns the size of each list-node link of links (raw ones
// are passed over) that is known without reading the node: from a node
// or a record in the shared cache, then from the store's records, which
// are kept in the shared cache. sizes[i] is valid where known[i]; nodes[i]
// is set where the shared cache held the node decoded (and it fits depth).
func (p *Pages) knownSizes(ctx context.Context, links []objects.CID, depth int) (nodes []*chunkNode, sizes []uint64, known []bool, err error) {
	nodes, sizes, known = make([]*chunkNode, len(links)), make([]uint64, len(links)), make([]bool, len(links))
	var ask []objects.CID
	var at []int
	for i, c := range links {
		if c.Codec() == objects.CodecRaw {
			continue
		}
		if p.shared != nil {
			if v, ok := p.shared.Decoded(c); ok {
				switch v := v.(type) {
				case *chunkNode:
					if v.fits(depth) {
						nodes[i], sizes[i], known[i] = v, v.size, true
						continue
					}
				case listSize:
					sizes[i], known[i] = uint64(v), true
					continue
				}
			}
		}
		ask = append(ask, c)
		at = append(at, i)
	}
	lr, ok := p.bs.(objects.ListSizeReader)
	if !ok || len(ask) == 0 {
		return nodes, sizes, known, ctx.Err()
	}
	err = lr.ListSizes(ctx, ask, func(k int, size uint64) {
		i := at[k]
		sizes[i], known[i] = size, true
		if p.shared != nil {
			p.shared.KeepDecoded(links[i], listSize(size), 48)
		}
	})
	return nodes, sizes, known, err
}
