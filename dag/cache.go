package dag

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/agentstate/agentstate/objects"
)

// CommitCache is a BlockStore that also keeps decoded commits in memory:
// commits are immutable, and a long-lived process (a server, a runtime)
// reads the same ones again and again (every log walks them). Only commit
// reads go through the cache (ReadCommit, Log, the resolver); Get, Has, Put
// and everything that verifies (Walk) reach the store. It keeps decoded
// tree nodes too (objects.NodeCache), for the trees read through it.
type CommitCache struct {
	objects.BlockStore
	nodes   *objects.NodeCache
	decoded *genCache // what readers decoded from blocks (decoded.go)

	mu      sync.Mutex
	entries map[objects.CID]cachedCommit
	max     int

	// graph is the store's commit graph (graph.go), read by log walks;
	// nil: none.
	graph GraphStore
}

type cachedCommit struct {
	cm   *objects.Commit
	data []byte
	// bundle is the bundle hash of the commit's tree when its commit-graph
	// record held it (nil: not known here).
	bundle *objects.BundleHash
}

// nodeCacheBytes bounds the tree nodes a CommitCache keeps (as encoded).
const nodeCacheBytes = 16 << 20

// WithCommitCache returns bs with a cache of up to max decoded commits.
func WithCommitCache(bs objects.BlockStore, max int) *CommitCache {
	return &CommitCache{BlockStore: bs, nodes: objects.NewNodeCache(nodeCacheBytes), decoded: newGenCache(decodedBytes), entries: map[objects.CID]cachedCommit{}, max: max}
}

// GetBatch reads blocks as objects.BlockBatchReader says: in one pass of
// the store when it can, one Get a block when it cannot.
func (c *CommitCache) GetBatch(ctx context.Context, cids []objects.CID, fn func(i int, data []byte, err error)) error {
	if b, ok := c.BlockStore.(objects.BlockBatchReader); ok {
		return b.GetBatch(ctx, cids, fn)
	}
	for i, id := range cids {
		if err := ctx.Err(); err != nil {
			return err
		}
		data, err := c.BlockStore.Get(ctx, id)
		fn(i, data, err)
	}
	return nil
}

// ListSizes gives the list node sizes the store records
// (objects.ListSizeReader); over a store that records none, none.
func (c *CommitCache) ListSizes(ctx context.Context, cids []objects.CID, fn func(i int, size uint64)) error {
	if l, ok := c.BlockStore.(objects.ListSizeReader); ok {
		return l.ListSizes(ctx, cids, fn)
	}
	return ctx.Err()
}

// UseGraph makes log walks through c read commits from the commit graph in
// gs (graph.go) before the store. Call it before c is shared.
func (c *CommitCache) UseGraph(gs GraphStore) { c.graph = gs }

// HasGraph reports whether log walks through c read a commit graph.
func (c *CommitCache) HasGraph() bool { return c.graph != nil }

// Nodes is the cache of decoded tree nodes.
func (c *CommitCache) Nodes() *objects.NodeCache { return c.nodes }

func (c *CommitCache) get(id objects.CID) (*objects.Commit, []byte, bool) {
	cm, e, ok := c.entry(id)
	return cm, e.data, ok
}

func (c *CommitCache) keep(id objects.CID, cm *objects.Commit, data []byte) {
	c.keepBundle(id, cm, data, nil)
}

// Keep caches a commit its writer just stored, as it stored it (data, the
// block's bytes, decodes to cm): the writer and the readers after it (the
// next task's start, the task record of its receipt) find it decoded. cm
// is copied; the caller may change its own afterwards.
func (c *CommitCache) Keep(id objects.CID, cm *objects.Commit, data []byte) {
	kept := *cm
	kept.Parents = slices.Clone(cm.Parents)
	kept.Metadata = maps.Clone(cm.Metadata)
	c.keep(id, &kept, data)
}

// getBundle is get with the bundle hash kept with the commit (nil: none).
func (c *CommitCache) getBundle(id objects.CID) (*objects.Commit, *objects.BundleHash, bool) {
	cm, e, ok := c.entry(id)
	return cm, e.bundle, ok
}

// entry returns the cached entry of id, with a copy of its commit: callers
// get their own struct.
func (c *CommitCache) entry(id objects.CID) (*objects.Commit, cachedCommit, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok {
		return nil, cachedCommit{}, false
	}
	cm := *e.cm
	return &cm, e, true
}

// keepBundle is keep with the bundle hash of the commit's tree, when a
// commit-graph record held it.
func (c *CommitCache) keepBundle(id objects.CID, cm *objects.Commit, data []byte, bundle *objects.BundleHash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		for k := range c.entries { // drop an arbitrary eighth
			delete(c.entries, k)
			if len(c.entries) < c.max-c.max/8 {
				break
			}
		}
	}
	kept := *cm
	c.entries[id] = cachedCommit{cm: &kept, data: data, bundle: bundle}
}

// Forget drops cached commits, nodes and decoded blocks (gc calls it for the blocks it
// deletes).
func (c *CommitCache) Forget(ids ...objects.CID) {
	c.nodes.Forget(ids...)
	c.decoded.forget(ids...)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		delete(c.entries, id)
	}
}
