package objects

import (
	"context"
	"crypto/sha256"
	"fmt"
	"iter"
	"math/bits"
	"sort"
)

// LayerBits is the number of leading zero bits of sha256(key) that lift a key
// one layer in the Merkle Search Tree. Fanout is 2^LayerBits = 16 on average.
// Part of the frozen format: changing it moves every tree CID.
const LayerBits = 4

// layerBits is LayerBits; only the fanout benchmark changes it.
var layerBits = LayerBits

// KeyLayer returns the layer of key: the count of leading zero bits of
// sha256(key), divided by LayerBits (rounded down).
func KeyLayer(key string) int {
	h := sha256.Sum256([]byte(key))
	zeros := 0
	for _, b := range h {
		if b == 0 {
			zeros += 8
			continue
		}
		zeros += bits.LeadingZeros8(b)
		break
	}
	return zeros / layerBits
}

// Entry is one key of a tree and the CID of its value.
type Entry struct {
	Key   string `json:"key"`
	Value CID    `json:"cid"`
}

// node is a tree node in memory. A child that has not been read yet has
// loaded == false and only cid set. A node changed since it was read, or
// created in memory, is dirty and has no valid cid until Flush.
type node struct {
	layer   int
	lo, hi  string // read from the store: its keys lie between (see TreeSpot)
	cid     CID
	loaded  bool
	dirty   bool
	left    *node
	entries []entry
}

type entry struct {
	key   string
	val   CID
	right *node
}

func (n *node) child(i int) *node {
	if i == 0 {
		return n.left
	}
	return n.entries[i-1].right
}

func (n *node) setChild(i int, c *node) {
	if i == 0 {
		n.left = c
	} else {
		n.entries[i-1].right = c
	}
}

func (n *node) isEmpty() bool { return len(n.entries) == 0 && n.left == nil }

// search returns the index of the first entry whose key is >= key, and
// whether that entry's key equals key.
func (n *node) search(key string) (int, bool) {
	i := sort.Search(len(n.entries), func(i int) bool { return n.entries[i].key >= key })
	return i, i < len(n.entries) && n.entries[i].key == key
}

// Tree is a Merkle Search Tree over a BlockStore, read lazily and edited in
// memory. Flush encodes the changed nodes and returns the new root. A Tree is
// not safe for concurrent use.
type Tree struct {
	bs   BlockStore
	root *node
}

// NewTree returns an empty tree.
func NewTree(bs BlockStore) *Tree {
	return &Tree{bs: bs, root: &node{loaded: true, dirty: true}}
}

// LoadTree opens the tree whose root node is root.
func LoadTree(ctx context.Context, bs BlockStore, root CID) (*Tree, error) {
	if root.IsZero() || root.Codec() != CodecDagCBOR {
		return nil, fmt.Errorf("%w: tree root %q is not a dag-cbor CID", ErrBadObject, root)
	}
	if root == EmptyTreeCID {
		return NewTree(bs), nil // known bytes: no need to have stored them
	}
	t := &Tree{bs: bs, root: &node{cid: root, layer: RootLayer}}
	if err := t.load(ctx, t.root); err != nil {
		return nil, err
	}
	return t, nil
}

// EmptyTreeCID is the CID of the empty tree's root node.
var EmptyTreeCID = func() CID {
	b := encodeNode(&node{loaded: true})
	return Sum(CodecDagCBOR, b)
}()

func (t *Tree) load(ctx context.Context, n *node) error {
	if n.loaded {
		return nil
	}
	rn, err := readNode(ctx, t.bs, n.cid)
	if err != nil {
		return err
	}
	left, entries := rn.left, rn.entries
	layer, err := checkNodeAt(TreeSpot{CID: n.cid, Layer: n.layer, Lo: n.lo, Hi: n.hi}, left, entries, rn.layer)
	if err != nil {
		return err
	}
	n.layer = layer
	// A child is checked when it is loaded, against the layer and the range
	// of keys this node gives it (checkNodeAt).
	mk := func(c CID, lo, hi string) *node {
		if c.IsZero() {
			return nil
		}
		return &node{cid: c, layer: n.layer - 1, lo: lo, hi: hi}
	}
	lo := n.lo
	n.entries = make([]entry, len(entries))
	for i, e := range entries {
		n.entries[i] = entry{key: e.key, val: e.val}
		if i == 0 {
			n.left = mk(left, lo, e.key)
		} else {
			n.entries[i-1].right = mk(entries[i-1].right, lo, e.key)
		}
		lo = e.key
	}
	if len(entries) == 0 {
		n.left = mk(left, n.lo, n.hi)
	} else {
		n.entries[len(entries)-1].right = mk(entries[len(entries)-1].right, lo, n.hi)
	}
	n.loaded = true
	return nil
}

// Get returns the value CID stored under key.
func (t *Tree) Get(ctx context.Context, key string) (CID, bool, error) {
	if err := ValidateKey(key); err != nil {
		return CID{}, false, err
	}
	n := t.root
	for n != nil {
		if err := t.load(ctx, n); err != nil {
			return CID{}, false, err
		}
		i, found := n.search(key)
		if found {
			return n.entries[i].val, true, nil
		}
		n = n.child(i)
	}
	return CID{}, false, nil
}

// Put sets key to val. It reports whether the tree changed.
func (t *Tree) Put(ctx context.Context, key string, val CID) (bool, error) {
	if err := ValidateKey(key); err != nil {
		return false, err
	}
	if val.IsZero() {
		return false, fmt.Errorf("%w: zero value CID for key %q", ErrBadObject, key)
	}
	if IsDerived(key) {
		return false, &KeyError{key, "derived file: agentstate generates it on export from the tree (bundle.lock.json) or the receipt tape (receipts.ndjson), so trees do not store it"}
	}
	if err := t.load(ctx, t.root); err != nil {
		return false, err
	}
	lk := KeyLayer(key)
	for lk > t.root.layer {
		nr := &node{layer: t.root.layer + 1, loaded: true, dirty: true}
		if !t.root.isEmpty() {
			nr.left = t.root
		}
		t.root = nr
	}
	return t.put(ctx, t.root, key, lk, val)
}

func (t *Tree) put(ctx context.Context, n *node, key string, lk int, val CID) (bool, error) {
	if err := t.load(ctx, n); err != nil {
		return false, err
	}
	i, found := n.search(key)
	if found {
		if n.entries[i].val == val {
			return false, nil
		}
		n.entries[i].val = val
		n.dirty = true
		return true, nil
	}
	if n.layer == lk {
		lo, hi, err := t.split(ctx, n.child(i), key)
		if err != nil {
			return false, err
		}
		n.setChild(i, lo)
		n.entries = append(n.entries, entry{})
		copy(n.entries[i+1:], n.entries[i:])
		n.entries[i] = entry{key: key, val: val, right: hi}
		n.dirty = true
		return true, nil
	}
	c := n.child(i)
	if c == nil {
		c = &node{layer: n.layer - 1, loaded: true, dirty: true}
		n.setChild(i, c)
	}
	changed, err := t.put(ctx, c, key, lk, val)
	if changed {
		n.dirty = true
	}
	return changed, err
}

// split divides the subtree n by key (absent from it) into the parts below
// and above key, both at n's layer; an empty part is nil.
func (t *Tree) split(ctx context.Context, n *node, key string) (lo, hi *node, err error) {
	if n == nil {
		return nil, nil, nil
	}
	if err := t.load(ctx, n); err != nil {
		return nil, nil, err
	}
	i, _ := n.search(key)
	slo, shi, err := t.split(ctx, n.child(i), key)
	if err != nil {
		return nil, nil, err
	}
	lo = &node{layer: n.layer, loaded: true, dirty: true, left: n.left, entries: append([]entry(nil), n.entries[:i]...)}
	lo.setChild(i, slo)
	hi = &node{layer: n.layer, loaded: true, dirty: true, left: shi, entries: append([]entry(nil), n.entries[i:]...)}
	if lo.isEmpty() {
		lo = nil
	}
	if hi.isEmpty() {
		hi = nil
	}
	return lo, hi, nil
}

// Delete removes key. It reports whether the key was present.
func (t *Tree) Delete(ctx context.Context, key string) (bool, error) {
	if err := ValidateKey(key); err != nil {
		return false, err
	}
	if err := t.load(ctx, t.root); err != nil {
		return false, err
	}
	lk := KeyLayer(key)
	if lk > t.root.layer {
		return false, nil
	}
	changed, err := t.del(ctx, t.root, key, lk)
	if err != nil || !changed {
		return changed, err
	}
	for t.root.layer > 0 && len(t.root.entries) == 0 {
		if t.root.left == nil {
			t.root = &node{loaded: true, dirty: true}
			break
		}
		t.root = t.root.left
		if err := t.load(ctx, t.root); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (t *Tree) del(ctx context.Context, n *node, key string, lk int) (bool, error) {
	if err := t.load(ctx, n); err != nil {
		return false, err
	}
	i, found := n.search(key)
	if n.layer == lk {
		if !found {
			return false, nil
		}
		merged, err := t.merge(ctx, n.child(i), n.entries[i].right)
		if err != nil {
			return false, err
		}
		n.entries = append(n.entries[:i], n.entries[i+1:]...)
		n.setChild(i, merged)
		n.dirty = true
		return true, nil
	}
	c := n.child(i)
	if c == nil {
		return false, nil
	}
	changed, err := t.del(ctx, c, key, lk)
	if err != nil || !changed {
		return changed, err
	}
	if c.isEmpty() {
		n.setChild(i, nil)
	}
	n.dirty = true
	return true, nil
}

// merge joins two subtrees of the same layer, all of a's keys below b's.
func (t *Tree) merge(ctx context.Context, a, b *node) (*node, error) {
	if a == nil {
		return b, nil
	}
	if b == nil {
		return a, nil
	}
	if err := t.load(ctx, a); err != nil {
		return nil, err
	}
	if err := t.load(ctx, b); err != nil {
		return nil, err
	}
	mid, err := t.merge(ctx, a.child(len(a.entries)), b.left)
	if err != nil {
		return nil, err
	}
	m := &node{layer: a.layer, loaded: true, dirty: true, left: a.left}
	m.entries = make([]entry, 0, len(a.entries)+len(b.entries))
	m.entries = append(append(m.entries, a.entries...), b.entries...)
	m.setChild(len(a.entries), mid)
	return m, nil
}

// Entries yields the tree's entries with keys >= from, in bytewise key order.
// Stop early by breaking out of the loop.
func (t *Tree) Entries(ctx context.Context, from string) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		if _, err := t.walk(ctx, t.root, from, yield); err != nil {
			yield(Entry{}, err)
		}
	}
}

// walk returns false when the consumer stopped.
func (t *Tree) walk(ctx context.Context, n *node, from string, yield func(Entry, error) bool) (bool, error) {
	if n == nil {
		return true, nil
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := t.load(ctx, n); err != nil {
		return false, err
	}
	i, _ := n.search(from)
	for j := i; j <= len(n.entries); j++ {
		if more, err := t.walk(ctx, n.child(j), from, yield); !more || err != nil {
			return more, err
		}
		if j < len(n.entries) {
			e := n.entries[j]
			if !yield(Entry{Key: e.key, Value: e.val}, nil) {
				return false, nil
			}
		}
	}
	return true, nil
}

// Flush encodes every node changed since the last flush and returns the root
// CID and the new blocks, children before parents. The blocks are not
// written; the caller stores them (Commit does both). When the tree's block
// store has a NodeCache, the new nodes go into it as they are encoded: a
// writer reads next the nodes it has just written (the next task's tree, a
// diff against the previous one), and would otherwise read them back from
// the store and decode them again. A node is its CID's content, so what is
// cached is what a read of the stored block would decode.
func (t *Tree) Flush() (CID, []Block) {
	var blocks []Block
	var cache *NodeCache
	if nc, ok := t.bs.(NodeCacher); ok {
		cache = nc.Nodes()
	}
	root := flushNode(t.root, &blocks, cache)
	return root, blocks
}

func flushNode(n *node, out *[]Block, cache *NodeCache) CID {
	if !n.dirty {
		return n.cid
	}
	if n.left != nil {
		flushNode(n.left, out, cache)
	}
	for _, e := range n.entries {
		if e.right != nil {
			flushNode(e.right, out, cache)
		}
	}
	data := encodeNode(n)
	n.cid = Sum(CodecDagCBOR, data)
	n.dirty = false
	*out = append(*out, Block{CID: n.cid, Data: data})
	if cache != nil {
		entries := make([]nodeEntry, len(n.entries))
		for i, e := range n.entries {
			entries[i] = nodeEntry{key: e.key, val: e.val, right: cidOf(e.right)}
		}
		// Every key of a node the tree wrote is at the node's layer (Put
		// places a key by its KeyLayer; the nodes it came from were checked
		// when read): known without hashing each key again, which was most
		// of a one-key write's flush at 100k keys (TestFlushedLayers).
		layer := n.layer
		if len(entries) == 0 {
			layer = 0
		}
		cache.keep(n.cid, cachedNode{left: cidOf(n.left), entries: entries, layer: layer, size: len(data)})
	}
	return n.cid
}

// Commit flushes t and stores the new nodes in its block store.
func (t *Tree) Commit(ctx context.Context) (CID, error) {
	root, blocks := t.Flush()
	if len(blocks) > 0 {
		if err := t.bs.Put(ctx, blocks...); err != nil {
			return CID{}, fmt.Errorf("objects: writing tree nodes: %w", err)
		}
	}
	return root, nil
}

func cidOf(n *node) CID {
	if n == nil {
		return CID{}
	}
	return n.cid
}

// encodeNode writes {"e": [{"k","p","t","v"}...], "l": CID|null}. Children must
// be flushed (clean) first.
func encodeNode(n *node) []byte {
	b := make([]byte, 0, 16+len(n.entries)*96)
	b = appendHead(b, majMap, 2)
	b = appendText(b, "e")
	b = appendHead(b, majArray, uint64(len(n.entries)))
	prev := ""
	for _, e := range n.entries {
		p := commonPrefix(prev, e.key)
		b = appendHead(b, majMap, 4)
		b = appendText(b, "k")
		b = appendBytes(b, []byte(e.key[p:]))
		b = appendText(b, "p")
		b = appendHead(b, majUint, uint64(p))
		b = appendText(b, "t")
		b = appendCID(b, cidOf(e.right))
		b = appendText(b, "v")
		b = appendCID(b, e.val)
		prev = e.key
	}
	b = appendText(b, "l")
	b = appendCID(b, cidOf(n.left))
	return b
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// NodeEntry is a decoded tree node entry.
type nodeEntry struct {
	key   string
	val   CID
	right CID
}

// decodeNode parses a tree node strictly: canonical bytes only, keys valid
// and strictly increasing.
func decodeNode(data []byte) (CID, []nodeEntry, error) {
	r := &reader{b: data}
	n, err := r.expect(majMap)
	if err != nil {
		return CID{}, nil, err
	}
	if n != 2 {
		return CID{}, nil, r.fail("tree node map has %d keys, want 2", n)
	}
	if err := r.key("e"); err != nil {
		return CID{}, nil, err
	}
	ne, err := r.expect(majArray)
	if err != nil {
		return CID{}, nil, err
	}
	if ne > uint64(len(data))/8 {
		return CID{}, nil, r.fail("entry count %d exceeds input", ne)
	}
	entries := make([]nodeEntry, 0, ne)
	prev := ""
	for i := uint64(0); i < ne; i++ {
		m, err := r.expect(majMap)
		if err != nil {
			return CID{}, nil, err
		}
		if m != 4 {
			return CID{}, nil, r.fail("tree entry map has %d keys, want 4", m)
		}
		if err := r.key("k"); err != nil {
			return CID{}, nil, err
		}
		suffix, err := r.bytes()
		if err != nil {
			return CID{}, nil, err
		}
		if err := r.key("p"); err != nil {
			return CID{}, nil, err
		}
		p, err := r.uint()
		if err != nil {
			return CID{}, nil, err
		}
		if p > uint64(len(prev)) {
			return CID{}, nil, r.fail("prefix length %d exceeds previous key length %d", p, len(prev))
		}
		if p < uint64(len(prev)) && len(suffix) > 0 && suffix[0] == prev[p] {
			return CID{}, nil, fmt.Errorf("%w: tree entry %d shares %d bytes with the key before it, not the longest common prefix", ErrNonCanonical, i, p)
		}
		key := prev[:p] + string(suffix)
		if err := ValidateKey(key); err != nil {
			return CID{}, nil, fmt.Errorf("%w: %w", ErrBadObject, err)
		}
		if i > 0 && key <= prev {
			return CID{}, nil, fmt.Errorf("%w: tree keys out of order: %q after %q", ErrNonCanonical, key, prev)
		}
		if err := r.key("t"); err != nil {
			return CID{}, nil, err
		}
		right, err := r.cidOrNull()
		if err != nil {
			return CID{}, nil, err
		}
		if !right.IsZero() && right.Codec() != CodecDagCBOR {
			return CID{}, nil, r.fail("subtree link %s is not dag-cbor", right)
		}
		if err := r.key("v"); err != nil {
			return CID{}, nil, err
		}
		val, err := r.cid()
		if err != nil {
			return CID{}, nil, err
		}
		entries = append(entries, nodeEntry{key: key, val: val, right: right})
		prev = key
	}
	if err := r.key("l"); err != nil {
		return CID{}, nil, err
	}
	left, err := r.cidOrNull()
	if err != nil {
		return CID{}, nil, err
	}
	if !left.IsZero() && left.Codec() != CodecDagCBOR {
		return CID{}, nil, r.fail("subtree link %s is not dag-cbor", left)
	}
	if err := r.end(); err != nil {
		return CID{}, nil, err
	}
	// What was read is what encodeNode writes for it, byte for byte: every
	// head in its shortest form (reader.head), the maps' keys and their
	// order fixed, each prefix the longest one shared with the key before
	// (above), CIDs in the one binary form (CIDFromBytes takes no trailing
	// bytes). FuzzDecodeNode re-encodes whatever is accepted to hold this.
	return left, entries, nil
}

func stub(c CID) *node {
	if c.IsZero() {
		return nil
	}
	return &node{cid: c}
}

// NodeEntries returns a tree node's subtrees and its entries (key and value
// CID), decoding it once: what a walk that needs the keys as well reads
// (du's growth per key).
func NodeEntries(data []byte) (subtrees []CID, entries []Entry, err error) {
	left, es, err := decodeNode(data)
	if err != nil {
		return nil, nil, err
	}
	if !left.IsZero() {
		subtrees = append(subtrees, left)
	}
	entries = make([]Entry, 0, len(es))
	for _, e := range es {
		entries = append(entries, Entry{Key: e.key, Value: e.val})
		if !e.right.IsZero() {
			subtrees = append(subtrees, e.right)
		}
	}
	return subtrees, entries, nil
}

// NodeLinks returns the CIDs a tree node links to: subtrees and values. Used
// by reachability walks (gc, verify, CAR export).
func NodeLinks(data []byte) (subtrees, values []CID, err error) {
	left, entries, err := decodeNode(data)
	if err != nil {
		return nil, nil, err
	}
	if !left.IsZero() {
		subtrees = append(subtrees, left)
	}
	for _, e := range entries {
		values = append(values, e.val)
		if !e.right.IsZero() {
			subtrees = append(subtrees, e.right)
		}
	}
	return subtrees, values, nil
}
