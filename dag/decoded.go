package dag

import (
	"sync"

	"github.com/agentstate/agentstate/objects"
)

// decodedBytes bounds what a CommitCache keeps of what readers decoded from
// blocks (KeepDecoded), by the costs they give.
const decodedBytes = 12 << 20

// Decoded returns what a reader decoded from block c and kept with
// KeepDecoded, if it is still held. Blocks are immutable and named by their
// hash, and the store checks every block it reads against its CID, so what
// was decoded from one holds whoever reads it next; each reader keeps its
// own type (a SQLite value's reader keeps its chunk list nodes and pages,
// dag/sqlitedb) and must not modify what it gets. gc's Forget drops
// entries with the blocks it deletes.
func (c *CommitCache) Decoded(id objects.CID) (any, bool) { return c.decoded.get(id) }

// KeepDecoded keeps v, decoded from block id, at cost bytes. The least
// recently used are forgotten, about half of what is held at a time.
func (c *CommitCache) KeepDecoded(id objects.CID, v any, cost int64) { c.decoded.add(id, v, cost) }

// genCache maps CIDs to values, bounded by the costs of its entries: two
// generations, a hit in the older moving the entry to the newer, the older
// dropped whole when the newer is full.
type genCache struct {
	mu       sync.Mutex
	limit    int64 // per generation
	cur, old map[objects.CID]genEntry
	curCost  int64
}

type genEntry struct {
	v    any
	cost int64
}

func newGenCache(total int64) *genCache {
	return &genCache{limit: total / 2, cur: map[objects.CID]genEntry{}}
}

func (g *genCache) get(id objects.CID) (any, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e, ok := g.cur[id]; ok {
		return e.v, true
	}
	if e, ok := g.old[id]; ok {
		delete(g.old, id)
		g.addLocked(id, e)
		return e.v, true
	}
	return nil, false
}

func (g *genCache) add(id objects.CID, v any, cost int64) {
	if cost > g.limit {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.old, id)
	if e, ok := g.cur[id]; ok {
		g.curCost -= e.cost
	}
	g.addLocked(id, genEntry{v: v, cost: cost})
}

func (g *genCache) addLocked(id objects.CID, e genEntry) {
	if g.curCost+e.cost > g.limit {
		g.old, g.cur, g.curCost = g.cur, make(map[objects.CID]genEntry, len(g.cur)), 0
	}
	g.cur[id] = e
	g.curCost += e.cost
}

func (g *genCache) forget(ids ...objects.CID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range ids {
		if e, ok := g.cur[id]; ok {
			g.curCost -= e.cost
			delete(g.cur, id)
		}
		delete(g.old, id)
	}
}
