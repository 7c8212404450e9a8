package objects

import (
	"context"
	"fmt"
	"sync"
)

// NodeCache keeps decoded tree nodes in memory. Nodes are immutable, and a
// long-lived process (a server, a runtime) reads the same few again and
// again: the nodes above every key of the trees its agents' HEADs name. A
// BlockStore that has one (it implements NodeCacher) lets its trees skip
// reading and decoding the nodes it holds. Only tree reads go through it;
// Get, Has and everything that verifies (Walk) reach the store.
type NodeCache struct {
	mu      sync.Mutex
	entries map[CID]cachedNode
	size    int // bytes of encoded nodes held
	max     int
}

type cachedNode struct {
	left    CID
	entries []nodeEntry
	layer   int // the entries' layer (see entriesLayer)
	size    int
}

// NodeCacher is a BlockStore with a NodeCache.
type NodeCacher interface {
	Nodes() *NodeCache
}

// NewNodeCache returns a cache of decoded nodes of up to max bytes (as
// encoded; decoded they take about as much again).
func NewNodeCache(max int) *NodeCache {
	return &NodeCache{entries: map[CID]cachedNode{}, max: max}
}

func (c *NodeCache) get(id CID) (cachedNode, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	return e, ok // entries are never written: callers copy out of them
}

func (c *NodeCache) keep(id CID, n cachedNode) {
	size := n.size
	if size > c.max/8 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[id]; ok {
		return
	}
	for k, e := range c.entries { // drop arbitrary nodes until there is room
		if c.size+size <= c.max {
			break
		}
		delete(c.entries, k)
		c.size -= e.size
	}
	c.entries[id] = n
	c.size += size
}

// Forget drops cached nodes (gc calls it for the blocks it deletes).
func (c *NodeCache) Forget(ids ...CID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if e, ok := c.entries[id]; ok {
			delete(c.entries, id)
			c.size -= e.size
		}
	}
}

// readNode returns a node's link to the left, its entries and their layer,
// from bs's cache when it has one.
func readNode(ctx context.Context, bs BlockStore, id CID) (cachedNode, error) {
	var cache *NodeCache
	if nc, ok := bs.(NodeCacher); ok {
		cache = nc.Nodes()
	}
	if cache != nil {
		if n, ok := cache.get(id); ok {
			return n, nil
		}
	}
	data, err := bs.Get(ctx, id)
	if err != nil {
		return cachedNode{}, fmt.Errorf("objects: reading tree node %s: %w", id, err)
	}
	left, entries, err := decodeNode(data)
	if err != nil {
		return cachedNode{}, fmt.Errorf("tree node %s: %w", id, err)
	}
	n := cachedNode{left: left, entries: entries, layer: entriesLayer(entries), size: len(data)}
	if cache != nil {
		cache.keep(id, n)
	}
	return n, nil
}

// mixedLayers is entriesLayer's answer for keys of different layers.
const mixedLayers = -1

// entriesLayer is the layer every key of entries is at: worked out once per
// node read from the store, where hashing each key was most of a cached
// node's load. It is mixedLayers when they differ (the node is not
// canonical) and 0 when there are none.
func entriesLayer(entries []nodeEntry) int {
	if len(entries) == 0 {
		return 0
	}
	l := KeyLayer(entries[0].key)
	for _, e := range entries[1:] {
		if KeyLayer(e.key) != l {
			return mixedLayers
		}
	}
	return l
}

// Size returns the bytes of the encoded nodes held.
func (c *NodeCache) Size() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}
