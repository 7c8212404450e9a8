package repo

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
)

// Usage is what a store's bytes hold: the store as a whole, and one agent's
// history commit by commit and key by key.
type Usage struct {
	Store   StoreUsage    `json:"store"`
	Agent   string        `json:"agent,omitempty"`
	Commits []CommitUsage `json:"commits"`
	Keys    []KeyUsage    `json:"keys"`
}

// StoreUsage counts every block: those something kept reaches (live) and
// those gc would delete (reclaimable). Bytes are block bytes, before the
// store's own compression and overhead.
type StoreUsage struct {
	Blocks           int   `json:"blocks"`
	Bytes            int64 `json:"bytes"`
	LiveBlocks       int   `json:"liveBlocks"`
	LiveBytes        int64 `json:"liveBytes"`
	ReclaimableBytes int64 `json:"reclaimableBytes"`
	Reclaimable      int   `json:"reclaimable"`
}

// CommitUsage is one commit: Size is every byte its tree holds (nodes and
// values), Added the bytes of blocks no older commit of the history had,
// Shared the rest (Size - Added).
type CommitUsage struct {
	CID     objects.CID `json:"cid"`
	Time    int64       `json:"time"`
	Message string      `json:"message"`
	Size    int64       `json:"size"`
	Added   int64       `json:"added"`
	Shared  int64       `json:"shared"`
}

// KeyUsage is one key over the history: how many distinct values it had and
// their bytes (its growth), and the size of its value at HEAD (0: deleted).
type KeyUsage struct {
	Key      string `json:"key"`
	Versions int    `json:"versions"`
	Bytes    int64  `json:"bytes"`
	Current  int64  `json:"current"`
}

// DiskUsage measures the store and, when agent is not "", its history
// (walking no link a forget cut), newest commit first.
//
// Where the storage can, every block is read once in the store's own order
// (scanStore: the size of every block, the bytes of every commit, tree node
// and chunk node, kept in memory), and every walk below reads from that;
// otherwise one walk of the whole store (gc's) reads every live block once
// and notes its size, and a pass over the stored blocks adds the ones
// nothing reaches. The history is then walked oldest commit first, each
// tree node and chunked value once: a node's subtree bytes are noted as it
// is left, so a node met again is a subtree met again, both its size (Size)
// and nothing new (Added) without reading it. A key's versions are the
// distinct values in the entries of the nodes so walked.
func (r *Repo) DiskUsage(ctx context.Context, agent string) (Usage, error) {
	var u Usage
	w := &usageWalk{r: r, bs: r.Blocks, blocks: map[blockID]blockUsage{}}
	if sc, ok := r.Storage.(objects.BlockScanner); ok {
		view, err := scanStore(ctx, sc, r.Blocks, false)
		if err != nil {
			return u, err
		}
		w.bs, w.view, w.walked = view, view, make([]int64, len(view.sizes))
	}
	// The history first: gc's walk (the count of the store) then goes
	// below no tree node or value the history walked, all of whose blocks
	// the history walk met and are live (see store).
	if agent != "" {
		var err error
		if u, err = w.history(ctx, u, agent); err != nil {
			return u, err
		}
	}
	if err := w.store(ctx, &u.Store); err != nil {
		return u, err
	}
	return u, nil
}

// history fills in u's commits and keys: agent's history, walked oldest
// commit first.
func (w *usageWalk) history(ctx context.Context, u Usage, agent string) (Usage, error) {
	r := w.r
	u.Agent = agent
	h, err := r.Refs.Head(ctx, agent)
	if err != nil {
		return u, err
	}
	lo, _, err := r.LogOptions(ctx, agent)
	if err != nil {
		return u, err
	}
	type entry struct {
		cid, tree objects.CID
		time      int64
		message   string
	}
	var history []entry
	for le, err := range dag.LogWith(ctx, w.bs, h.Commit, lo) {
		if err != nil {
			return u, err
		}
		history = append(history, entry{cid: le.CID, tree: le.Commit.Tree, time: le.Commit.Time, message: le.Commit.Message})
	}
	// A key's versions are the distinct values it has in the history's
	// trees: the entries of every tree node the walk meets, each node once
	// (a node met again holds entries already counted).
	keys := &keyTable{at: map[string]int32{}}
	w.keys = keys
	if w.view != nil {
		w.decodeNodes(ctx)
	}
	// Oldest first: what each commit added that no older one had.
	for i := len(history) - 1; i >= 0; i-- {
		e := history[i]
		cs, err := w.size(ctx, e.cid)
		if err != nil {
			return u, err
		}
		total, added, err := w.tree(ctx, e.tree, 0)
		if err != nil {
			return u, err
		}
		total, added = total+cs, added+cs // each commit of a history is its own
		u.Commits = append(u.Commits, CommitUsage{CID: e.cid, Time: e.time, Message: e.message, Size: total, Added: added, Shared: total - added})
	}
	slices.Reverse(u.Commits)
	hc, err := dag.ReadCommit(ctx, w.bs, h.Commit)
	if err != nil {
		return u, err
	}
	if err := w.current(ctx, hc.Tree, 0); err != nil {
		return u, err
	}
	u.Keys = make([]KeyUsage, 0, len(keys.accs))
	for _, ka := range keys.accs {
		u.Keys = append(u.Keys, ka.KeyUsage)
	}
	slices.SortFunc(u.Keys, func(a, b KeyUsage) int {
		if a.Bytes != b.Bytes {
			if a.Bytes > b.Bytes {
				return -1
			}
			return 1
		}
		return compareStrings(a.Key, b.Key)
	})
	return u, nil
}

// blockID names a block in du's sets: its CID's 36 bytes, held in place
// rather than as a string of their own (a store's blocks are many).
type blockID [36]byte

func idOf(c objects.CID) (id blockID) {
	copy(id[:], c.KeyString())
	return id
}

// blockUsage is what du knows of one block: its own bytes and, once the
// history walk has been through it, every byte below it (its own
// included); walked -1 until then.
type blockUsage struct {
	size, walked int64
}

// usageWalk is DiskUsage's one walk: the sizes of the store's live blocks,
// and the history's tree nodes and values walked so far.
type usageWalk struct {
	r      *Repo
	bs     objects.BlockStore     // r.Blocks, or view
	view   *scanned               // the store read in one pass, when it could be
	walked []int64                // with view: by the scan's index, the walked bytes + 1 (0: not walked)
	blocks map[blockID]blockUsage // blocks the scan did not see (all, without view)
	keys   *keyTable              // each entry of each node walked, once (the history)
	nodes  []*scanNode            // with view: by the scan's index, its tree nodes decoded (decodeNodes)
	others map[blockID]uint32     // values the scan did not see: their numbers in keys, after the scan's
}

// store counts every stored block, live or reclaimable, noting the size of
// each live one for the history walk.
func (w *usageWalk) store(ctx context.Context, su *StoreUsage) error {
	if w.view != nil {
		// gc's walk, marking a bit for each block of the scan. Every tree
		// node and value the history walked is live (the history is a part
		// of what gc keeps, and the links it follows below a commit are
		// gc's), and so is every block below it, which the history walk
		// met too: the set starts with them, and gc's walk goes no further
		// there. Not when a redaction record names blocks: gc leaves a
		// redacted block out even where the history's walk met it.
		red, _, err := w.r.readRedactions(ctx)
		if err != nil {
			return err
		}
		live := newScanSet(w.view)
		if len(red.byValue) == 0 {
			for i, n := range w.walked {
				if n != 0 {
					live.bits[i/64] |= 1 << (i % 64)
				}
			}
		}
		if _, _, err := w.r.walkAllIn(ctx, w.bs, dag.WalkOptions{Reached: live, Absent: red.absent}, nil); err != nil {
			return err
		}
		for _, n := range w.view.sizes {
			su.Blocks++
			su.Bytes += n
		}
		// A live block not stored (in live.extra) is verify's to report.
		su.LiveBlocks, su.LiveBytes = live.count()
		su.Reclaimable, su.ReclaimableBytes = su.Blocks-su.LiveBlocks, su.Bytes-su.LiveBytes
		return nil
	}
	reach, _, err := w.r.walkAll(ctx, dag.WalkOptions{Visit: func(c objects.CID, data []byte) error {
		w.blocks[idOf(c)] = blockUsage{size: int64(len(data)), walked: -1}
		return nil
	}}, nil)
	if err != nil {
		return err
	}
	lister, ok := w.r.Storage.(objects.BlockLister)
	if !ok {
		return nil
	}
	for c, err := range lister.AllCIDs(ctx) {
		if err != nil {
			return err
		}
		b, known := w.blocks[idOf(c)]
		if !known { // reclaimable, or live but unreadable (the read says why)
			data, err := w.r.Blocks.Get(ctx, c)
			if err != nil {
				return err
			}
			b.size = int64(len(data))
		}
		su.Blocks++
		su.Bytes += b.size
		if _, live := reach[c]; live {
			su.LiveBlocks++
			su.LiveBytes += b.size
		} else {
			su.Reclaimable++
			su.ReclaimableBytes += b.size
		}
	}
	return nil
}

// size is block c's bytes.
func (w *usageWalk) size(ctx context.Context, c objects.CID) (int64, error) {
	if b, _, ok := w.lookup(c); ok {
		return b.size, nil
	}
	data, err := w.bs.Get(ctx, c)
	if err != nil {
		return 0, err
	}
	w.blocks[idOf(c)] = blockUsage{size: int64(len(data)), walked: -1}
	return int64(len(data)), nil
}

// valueSize is every byte of value v: its block, or its chunk node and
// chunks.
func (w *usageWalk) valueSize(ctx context.Context, v objects.CID) (int64, error) {
	total, _, err := w.value(ctx, v, 0)
	return total, err
}

// The walks below follow the store's own blocks, checked where they came
// in; depth bounds them all the same (a store may hold what an older
// version took in unchecked).

// tree walks tree node t, depth nodes below its root: total is every byte
// of its subtree (nodes and values), added the bytes of the blocks in it no
// earlier walk met.
func (w *usageWalk) tree(ctx context.Context, t objects.CID, depth int) (total, added int64, err error) {
	b, at, ok := w.lookup(t)
	if ok && b.walked >= 0 {
		return b.walked, 0, nil // a node walked is a whole subtree walked
	}
	if at >= 0 && w.nodes != nil && w.nodes[at] != nil {
		return w.treeAt(ctx, uint32(at), depth)
	}
	if depth >= objects.MaxTreeDepth {
		return 0, 0, &objects.TreeError{Node: t, Reason: fmt.Sprintf("is below a path deeper than %d nodes", objects.MaxTreeDepth)}
	}
	data, err := w.bs.Get(ctx, t)
	if err != nil {
		return 0, 0, err
	}
	subs, entries, err := objects.NodeEntries(data)
	if err != nil {
		return 0, 0, err
	}
	total, added = int64(len(data)), int64(len(data))
	for _, s := range subs {
		n, a, err := w.tree(ctx, s, depth+1)
		if err != nil {
			return 0, 0, err
		}
		total, added = total+n, added+a
	}
	for _, e := range entries {
		n, a, err := w.value(ctx, e.Value, 0)
		if err != nil {
			return 0, 0, err
		}
		total, added = total+n, added+a
		if w.keys != nil {
			w.keys.add(e.Key, w.valueNumber(e.Value), n)
		}
	}
	w.note(t, at, blockUsage{size: int64(len(data)), walked: total})
	return total, added, nil
}

// value walks value v (or a chunk list node of one, depth list nodes below
// the value), as tree walks a node.
func (w *usageWalk) value(ctx context.Context, v objects.CID, depth int) (total, added int64, err error) {
	b, at, ok := w.lookup(v)
	if ok && b.walked >= 0 {
		return b.walked, 0, nil
	}
	if depth > objects.MaxChunkDepth {
		return 0, 0, &objects.ChunkError{Node: v, Reason: fmt.Sprintf("chunk list nodes nested deeper than %d", objects.MaxChunkDepth)}
	}
	var data []byte
	if !ok || v.Codec() == objects.CodecDagCBOR { // a raw block's size is all there is to know
		if data, err = w.bs.Get(ctx, v); err != nil {
			return 0, 0, err
		}
		b.size = int64(len(data))
	}
	total, added = b.size, b.size
	if v.Codec() == objects.CodecDagCBOR {
		links, err := objects.ChunkLinks(data)
		if err != nil {
			return 0, 0, err
		}
		for _, l := range links {
			n, a, err := w.value(ctx, l, depth+1)
			if err != nil {
				return 0, 0, err
			}
			total, added = total+n, added+a
		}
	}
	w.note(v, at, blockUsage{size: b.size, walked: total})
	return total, added, nil
}

// lookup is what the walk knows of block c: i is its place in the scan
// (-1: not there).
func (w *usageWalk) lookup(c objects.CID) (b blockUsage, i int, ok bool) {
	if w.view != nil {
		if i, ok := w.view.place(c); ok {
			return blockUsage{size: w.view.sizes[i], walked: w.walked[i] - 1}, int(i), true
		}
	}
	b, ok = w.blocks[idOf(c)]
	return b, -1, ok
}

// note records what the walk learnt of block c, whose place in the scan
// is i (-1: not there).
func (w *usageWalk) note(c objects.CID, i int, b blockUsage) {
	if i >= 0 {
		w.walked[i] = b.walked + 1
		return
	}
	w.blocks[idOf(c)] = b
}

// scanNode is a tree node of the scan decoded (objects.NodeEntries) with
// its links as places in the scan: what du's history walk reads of a node,
// decoded once, on every core, before the walk.
type scanNode struct {
	subs []uint32 // subtrees
	keys []string // entries: keys and values
	vals []uint32
}

// decodeNodes decodes every dag-cbor block of the scan that is a tree node
// whose every link the scan saw (any other is read by the walk as the
// store gives it), on every core.
func (w *usageWalk) decodeNodes(ctx context.Context) {
	view := w.view
	w.nodes = make([]*scanNode, len(view.nodes))
	var next atomic.Int64
	const step = 512
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				lo := int(next.Add(step)) - step
				if lo >= len(view.nodes) {
					return
				}
				for i := lo; i < min(lo+step, len(view.nodes)); i++ {
					if data := view.nodes[i]; data != nil {
						w.nodes[i] = decodeScanNode(view, data)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// decodeScanNode is data decoded as a scanNode, or nil when it is not a
// tree node or links a block the scan did not see.
func decodeScanNode(view *scanned, data []byte) *scanNode {
	subs, entries, err := objects.NodeEntries(data)
	if err != nil {
		return nil
	}
	n := &scanNode{subs: make([]uint32, len(subs)), keys: make([]string, len(entries)), vals: make([]uint32, len(entries))}
	for k, c := range subs {
		i, ok := view.place(c)
		if !ok {
			return nil
		}
		n.subs[k] = i
	}
	for k, e := range entries {
		i, ok := view.place(e.Value)
		if !ok {
			return nil
		}
		n.keys[k], n.vals[k] = e.Key, i
	}
	return n
}

// treeAt is tree for the scan's decoded node i.
func (w *usageWalk) treeAt(ctx context.Context, i uint32, depth int) (total, added int64, err error) {
	if n := w.walked[i]; n != 0 {
		return n - 1, 0, nil
	}
	if depth >= objects.MaxTreeDepth {
		c, _ := w.view.cid(i)
		return 0, 0, &objects.TreeError{Node: c, Reason: fmt.Sprintf("is below a path deeper than %d nodes", objects.MaxTreeDepth)}
	}
	nd := w.nodes[i]
	size := w.view.sizes[i]
	total, added = size, size
	for _, s := range nd.subs {
		var n, a int64
		if w.nodes[s] != nil {
			n, a, err = w.treeAt(ctx, s, depth+1)
		} else if c, cerr := w.view.cid(s); cerr != nil {
			err = cerr
		} else {
			n, a, err = w.tree(ctx, c, depth+1)
		}
		if err != nil {
			return 0, 0, err
		}
		total, added = total+n, added+a
	}
	for k, v := range nd.vals {
		var n, a int64
		if walked := w.walked[v]; walked != 0 {
			n = walked - 1
		} else if w.view.isRaw(v) { // its size is all there is to know
			n, a = w.view.sizes[v], w.view.sizes[v]
			w.walked[v] = n + 1
		} else if c, err := w.view.cid(v); err != nil {
			return 0, 0, err
		} else if n, a, err = w.value(ctx, c, 0); err != nil {
			return 0, 0, err
		}
		total, added = total+n, added+a
		w.keys.add(nd.keys[k], v, n)
	}
	w.walked[i] = total + 1
	return total, added, nil
}

// current notes the size of every key's value in the tree t (HEAD's), as
// walked by the history walk (depth nodes below the root).
func (w *usageWalk) current(ctx context.Context, t objects.CID, depth int) error {
	if depth >= objects.MaxTreeDepth {
		return &objects.TreeError{Node: t, Reason: fmt.Sprintf("is below a path deeper than %d nodes", objects.MaxTreeDepth)}
	}
	if w.nodes != nil {
		if i, ok := w.view.place(t); ok && w.nodes[i] != nil {
			return w.currentAt(ctx, i, depth)
		}
	}
	data, err := w.bs.Get(ctx, t)
	if err != nil {
		return err
	}
	subs, entries, err := objects.NodeEntries(data)
	if err != nil {
		return err
	}
	for _, s := range subs {
		if err := w.current(ctx, s, depth+1); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if k, ok := w.keys.at[e.Key]; ok {
			if w.keys.accs[k].Current, err = w.valueSize(ctx, e.Value); err != nil {
				return err
			}
		}
	}
	return nil
}

// currentAt is current for the scan's decoded node i.
func (w *usageWalk) currentAt(ctx context.Context, i uint32, depth int) error {
	if depth >= objects.MaxTreeDepth {
		c, _ := w.view.cid(i)
		return &objects.TreeError{Node: c, Reason: fmt.Sprintf("is below a path deeper than %d nodes", objects.MaxTreeDepth)}
	}
	nd := w.nodes[i]
	for _, s := range nd.subs {
		var err error
		if w.nodes[s] != nil {
			err = w.currentAt(ctx, s, depth+1)
		} else if c, cerr := w.view.cid(s); cerr != nil {
			err = cerr
		} else {
			err = w.current(ctx, c, depth+1)
		}
		if err != nil {
			return err
		}
	}
	for k, v := range nd.vals {
		if a, ok := w.keys.at[nd.keys[k]]; ok {
			n := w.walked[v] - 1
			if n < 0 { // not walked (a tree the history did not hold)
				c, err := w.view.cid(v)
				if err == nil {
					n, err = w.valueSize(ctx, c)
				}
				if err != nil {
					return err
				}
			}
			w.keys.accs[a].Current = n
		}
	}
	return nil
}

// valueNumber names value v in keyTable: its place in the scan, or a
// number after the scan's places for a block the scan did not see.
func (w *usageWalk) valueNumber(v objects.CID) uint32 {
	if w.view != nil {
		if i, ok := w.view.place(v); ok {
			return i
		}
	}
	if w.others == nil {
		w.others = map[blockID]uint32{}
	}
	id := idOf(v)
	n, ok := w.others[id]
	if !ok {
		n = uint32(len(w.others))
		if w.view != nil {
			n += uint32(len(w.view.sizes))
		}
		w.others[id] = n
	}
	return n
}

// keyTable is the history's keys, each with the distinct values (by
// valueNumber) it had and their bytes.
type keyTable struct {
	at   map[string]int32
	accs []keyAcc
}

type keyAcc struct {
	KeyUsage
	first uint32   // the first value seen
	more  []uint32 // the others
}

// add notes value v (size bytes) of key.
func (t *keyTable) add(key string, v uint32, size int64) {
	k, ok := t.at[key]
	if !ok {
		t.at[key] = int32(len(t.accs))
		t.accs = append(t.accs, keyAcc{KeyUsage: KeyUsage{Key: key, Versions: 1, Bytes: size}, first: v})
		return
	}
	a := &t.accs[k]
	if a.first == v || slices.Contains(a.more, v) {
		return
	}
	a.more = append(a.more, v)
	a.Versions++
	a.Bytes += size
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
