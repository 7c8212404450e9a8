package dag

import (
	"context"
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
	bundles *genCache // trees' bundle hashes, from commit-graph records

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
}

// nodeCacheBytes bounds the tree nodes a CommitCache keeps (as encoded).
const nodeCacheBytes = 16 << 20

// WithCommitCache returns bs with a cache of up to max decoded commits.
func WithCommitCache(bs objects.BlockStore, max int) *CommitCache {
	return &CommitCache{BlockStore: bs, nodes: objects.NewNodeCache(nodeCacheBytes), decoded: newGenCache(decodedBytes), bundles: newGenCache(bundleBytes), entries: map[objects.CID]cachedCommit{}, max: max}
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

// UseGraph makes log walks through c read commits from the commit graph in
// gs (graph.go) before the store. Call it before c is shared.
func (c *CommitCache) UseGraph(gs GraphStore) { c.graph = gs }

// HasGraph reports whether log walks through c read a commit graph.
func (c *CommitCache) HasGraph() bool { return c.graph != nil }

// bundleBytes bounds the bundle hashes a CommitCache keeps (bundleCost
// each): a log walk notes each commit's as it reads its record, and asks for
// it at once.
const (
	bundleBytes = 4 << 20
	bundleCost  = 96
)

// NoteBundle keeps h as the bundle hash of tree (objects.HashLeaves of its
// leaves): a commit-graph record holds it, which its writer computed. A
// tree's CID names its keys and every value's content hash, so its bundle
// hash never changes.
func (c *CommitCache) NoteBundle(tree objects.CID, h objects.BundleHash) {
	c.bundles.add(tree, h, bundleCost)
}

// KnownBundle returns the bundle hash of tree noted with NoteBundle, if
// still held.
func (c *CommitCache) KnownBundle(tree objects.CID) (objects.BundleHash, bool) {
	v, ok := c.bundles.get(tree)
	if !ok {
		return objects.BundleHash{}, false
	}
	return v.(objects.BundleHash), true
}

// Nodes is the cache of decoded tree nodes.
func (c *CommitCache) Nodes() *objects.NodeCache { return c.nodes }

func (c *CommitCache) get(id objects.CID) (*objects.Commit, []byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok {
		return nil, nil, false
	}
	cm := *e.cm // callers get their own struct
	return &cm, e.data, true
}

func (c *CommitCache) keep(id objects.CID, cm *objects.Commit, data []byte) {
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
	c.entries[id] = cachedCommit{cm: &kept, data: data}
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
