package sqlitedb

import (
	"context"
	"fmt"

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
// node (objects.CheckChunkNode's checks depend on it).
type chunkNode struct {
	depth int
	links []objects.CID
	size  uint64
}

// page is a raw chunk's bytes as kept in the shared cache.
type page []byte

// chunkNode returns the chunk node c at depth under the value's file node
// (0: the file node itself), decoded and checked, from the shared cache or
// the store. It must not be modified.
func (p *Pages) chunkNode(ctx context.Context, c objects.CID, depth int) (*chunkNode, error) {
	if p.shared != nil {
		if v, ok := p.shared.Decoded(c); ok {
			if n, ok := v.(*chunkNode); ok && n.depth == depth {
				return n, nil
			}
		}
	}
	data, err := p.bs.Get(ctx, c)
	if err != nil {
		if depth == 0 {
			return nil, fmt.Errorf("sqlitedb: reading value %s: %w", c, err)
		}
		return nil, fmt.Errorf("sqlitedb: reading chunk list %s of value %s: %w", c, p.value, err)
	}
	cn, _, err := objects.CheckChunkNode(objects.ChunkSpot{CID: c, Depth: depth}, data)
	if err != nil {
		return nil, fmt.Errorf("%w: value %s: %w", ErrCorrupt, p.value, err)
	}
	n := &chunkNode{depth: depth, links: cn.Chunks, size: cn.Size}
	if p.shared != nil {
		p.shared.KeepDecoded(c, n, int64(64+len(cn.Chunks)*48))
	}
	return n, nil
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
