package objects

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
)

// The one check of trees and chunked values. The tree reader (Tree), the
// chunked value reader (ReadValue), the walk of verify, gc and CAR import
// (dag.Walk), sync (dag/repo's Fetch) and history restore all judge a block
// by the functions below, so that nothing is accepted into a store that its
// reader then refuses. Each function checks one block at the place a walk
// reached it (a Spot) and names the places of its children; the walks keep
// their own explicit stacks, so no recursion's depth follows the input, and
// the depth itself is bounded by the format: a tree by its layers
// (MaxTreeDepth), a chunked value by MaxChunkDepth.

// MaxLayer is the highest layer a key can have: sha256(key) all zero bits.
const MaxLayer = 256 / LayerBits

// MaxTreeDepth bounds the nodes on any path from a tree's root to a leaf:
// a node's subtrees are one layer below it, and layer 0 has none.
const MaxTreeDepth = MaxLayer + 1

// MaxChunkDepth bounds how deep chunk list nodes nest under a chunked file
// node (the file node is at depth 0).
const MaxChunkDepth = 8

// MaxValueSize bounds the content a chunked file node may claim.
const MaxValueSize = 1 << 40

// TreeError is a tree node that is not where its tree puts it: keys of
// another layer, a subtree below layer 0, an empty node below the root, a
// root with no keys but a subtree, keys outside the range its parent gives
// it. It is ErrNonCanonical: a canonical tree has none of these, and the
// depth of a tree that has none is at most MaxTreeDepth.
type TreeError struct {
	Node   CID
	Reason string
}

func (e *TreeError) Error() string {
	return fmt.Sprintf("%v: tree node %s %s", ErrNonCanonical, e.Node, e.Reason)
}
func (e *TreeError) Is(t error) bool { return t == ErrNonCanonical }

// ChunkError is a chunk node that is not where its value puts it: a file
// node (with a sha256) below another, a list node as a value, nesting
// deeper than MaxChunkDepth, sizes or a sha256 that its chunks do not
// match. It is ErrBadObject (and ErrHashMismatch for a sha256 that the
// content does not have).
type ChunkError struct {
	Node   CID
	Reason string
	hash   bool
}

func (e *ChunkError) Error() string {
	return fmt.Sprintf("%v: chunked value node %s: %s", ErrBadObject, e.Node, e.Reason)
}
func (e *ChunkError) Is(t error) bool { return t == ErrBadObject || e.hash && t == ErrHashMismatch }

// TreeSpot is where a walk reached a tree node: the layer its parent puts
// it at (RootLayer for a tree's root, whose layer is its keys'), and the
// keys every key of its subtree must lie strictly between ("" is no bound:
// no key is empty).
type TreeSpot struct {
	CID    CID
	Layer  int
	Lo, Hi string
}

// RootLayer is the layer of a root's spot: the root's keys decide it.
const RootLayer = -1

// RootSpot is the spot of a tree's root.
func RootSpot(root CID) TreeSpot { return TreeSpot{CID: root, Layer: RootLayer} }

// IsRoot reports whether s is a root's spot.
func (s TreeSpot) IsRoot() bool { return s.Layer < 0 }

// Inside reports whether the place s is inside first: the same layer and
// a range of keys no narrower, so that a subtree that fits first fits s.
func (s TreeSpot) Inside(first TreeSpot) bool {
	if s.IsRoot() || first.IsRoot() {
		return s.IsRoot() && first.IsRoot()
	}
	return s.Layer == first.Layer &&
		(s.Lo == "" || first.Lo != "" && s.Lo <= first.Lo) &&
		(s.Hi == "" || first.Hi != "" && s.Hi >= first.Hi)
}

// CheckTreeNode decodes data, the bytes of spot.CID, strictly (canonical
// bytes, valid keys in order) and checks it is what the tree reader accepts
// at spot. It returns the spots of its subtrees, left to right, and its
// values (raw blocks or chunked file nodes).
func CheckTreeNode(spot TreeSpot, data []byte) (subs []TreeSpot, vals []CID, err error) {
	n, err := DecodeTreeNode(data)
	if err != nil {
		return nil, nil, err
	}
	return n.CheckAt(spot)
}

// DecodedTreeNode is a tree node decoded strictly (CheckTreeNode's decoding:
// canonical bytes, valid keys in order), not yet checked where a tree puts
// it: the part of the check that needs no place, which a caller holding
// many nodes can do ahead of its walk, on every core.
type DecodedTreeNode struct {
	left      CID
	entries   []nodeEntry
	keysLayer int
}

// DecodeTreeNode decodes data, the bytes of a tree node, as CheckTreeNode
// does.
func DecodeTreeNode(data []byte) (*DecodedTreeNode, error) {
	left, entries, err := decodeNode(data)
	if err != nil {
		return nil, err
	}
	return &DecodedTreeNode{left: left, entries: entries, keysLayer: entriesLayer(entries)}, nil
}

// CheckAt is the rest of CheckTreeNode: it checks the decoded node n, whose
// CID is spot.CID, is what the tree reader accepts at spot, and returns the
// spots of its subtrees, left to right, and its values.
func (n *DecodedTreeNode) CheckAt(spot TreeSpot) (subs []TreeSpot, vals []CID, err error) {
	left, entries := n.left, n.entries
	layer, err := checkNodeAt(spot, left, entries, n.keysLayer)
	if err != nil {
		return nil, nil, err
	}
	vals = make([]CID, 0, len(entries))
	for i := 0; i <= len(entries); i++ {
		if c := childLink(left, entries, i); !c.IsZero() {
			subs = append(subs, childSpot(spot, layer, entries, i, c))
		}
		if i < len(entries) {
			vals = append(vals, entries[i].val)
		}
	}
	return subs, vals, nil
}

func childLink(left CID, entries []nodeEntry, i int) CID {
	if i == 0 {
		return left
	}
	return entries[i-1].right
}

// childSpot is the spot of the i-th subtree of a node at spot, of layer
// layer.
func childSpot(spot TreeSpot, layer int, entries []nodeEntry, i int, c CID) TreeSpot {
	s := TreeSpot{CID: c, Layer: layer - 1, Lo: spot.Lo, Hi: spot.Hi}
	if i > 0 {
		s.Lo = entries[i-1].key
	}
	if i < len(entries) {
		s.Hi = entries[i].key
	}
	return s
}

// checkNodeAt is the check of a decoded node at spot, whose keys are all of
// layer keysLayer (mixedLayers: they are not). It returns the node's layer.
func checkNodeAt(spot TreeSpot, left CID, entries []nodeEntry, keysLayer int) (int, error) {
	bad := func(format string, a ...any) (int, error) {
		return 0, &TreeError{Node: spot.CID, Reason: fmt.Sprintf(format, a...)}
	}
	layer := spot.Layer
	if spot.IsRoot() {
		switch {
		case len(entries) > 0 && keysLayer != mixedLayers:
			layer = keysLayer
		case len(entries) > 0: // keys of several layers: refused below, against the first's
			layer = KeyLayer(entries[0].key)
		case !left.IsZero():
			return bad("is a root with no entries but a subtree (it should have been trimmed)")
		default:
			layer = 0
		}
	} else if len(entries) == 0 && left.IsZero() {
		return bad("below the root is empty")
	}
	if layer < 0 {
		return bad("would be below layer 0 (a tree is at most %d nodes deep)", MaxTreeDepth)
	}
	if len(entries) > 0 && keysLayer != layer {
		for _, e := range entries {
			if l := KeyLayer(e.key); l != layer {
				return bad("at layer %d holds key %q of layer %d", layer, e.key, l)
			}
		}
	}
	if layer == 0 {
		if !left.IsZero() {
			return bad("at layer 0 has a subtree")
		}
		for _, e := range entries {
			if !e.right.IsZero() {
				return bad("at layer 0 has a subtree")
			}
		}
	}
	if len(entries) > 0 {
		if k := entries[0].key; spot.Lo != "" && k <= spot.Lo {
			return bad("holds key %q, which its tree puts after %q", k, spot.Lo)
		}
		if k := entries[len(entries)-1].key; spot.Hi != "" && k >= spot.Hi {
			return bad("holds key %q, which its tree puts before %q", k, spot.Hi)
		}
	}
	for _, e := range entries {
		if c := e.val.Codec(); c != CodecRaw && c != CodecDagCBOR {
			return bad("holds value %s of codec 0x%x for key %q, want raw or a chunked file node", e.val, c, e.key)
		}
	}
	return layer, nil
}

// TreeRanges checks subtrees already checked whole against other spots: a
// content-addressed node is shared by every tree that holds the same keys
// under it, and a hostile tree may link a node that is sound where it was
// first checked at a place where it is not. A subtree every node of which
// passed CheckTreeNode (at any spot) fits a spot when its layer is the
// spot's and its smallest and largest keys lie inside the spot's range;
// both are found on its leftmost and rightmost paths (at most MaxTreeDepth
// reads each) and remembered. A TreeRanges is not safe for concurrent use.
type TreeRanges struct {
	bs     BlockStore
	ranges map[CID]treeRange
}

type treeRange struct {
	layer    int
	min, max string // "" for the empty tree
}

// NewTreeRanges returns a TreeRanges reading nodes from bs.
func NewTreeRanges(bs BlockStore) *TreeRanges {
	return &TreeRanges{bs: bs, ranges: map[CID]treeRange{}}
}

// Fits reports whether the subtree spot.CID, whose every node has been
// checked, is one the reader accepts at spot; an error that is not a
// *TreeError is one of reading its nodes.
func (tr *TreeRanges) Fits(ctx context.Context, spot TreeSpot) error {
	rn, err := readNode(ctx, tr.bs, spot.CID)
	if err != nil {
		return err
	}
	if spot.IsRoot() { // a root's checks are its own node's: its layer is its keys'
		_, err := checkNodeAt(spot, rn.left, rn.entries, rn.layer)
		return err
	}
	r, err := tr.rangeOf(ctx, spot.CID, rn)
	if err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		return &TreeError{Node: spot.CID, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case r.min == "":
		return bad("below the root is empty")
	case r.layer != spot.Layer:
		return bad("is a subtree of layer %d linked where its tree wants layer %d", r.layer, spot.Layer)
	case spot.Lo != "" && r.min <= spot.Lo:
		return bad("holds key %q, which its tree puts after %q", r.min, spot.Lo)
	case spot.Hi != "" && r.max >= spot.Hi:
		return bad("holds key %q, which its tree puts before %q", r.max, spot.Hi)
	}
	return nil
}

// rangeOf returns the layer and the smallest and largest keys of the
// checked subtree id, whose root node is rn.
func (tr *TreeRanges) rangeOf(ctx context.Context, id CID, rn cachedNode) (treeRange, error) {
	if r, ok := tr.ranges[id]; ok {
		return r, nil
	}
	tooDeep := &TreeError{Node: id, Reason: fmt.Sprintf("is a subtree deeper than %d nodes", MaxTreeDepth)}
	var r treeRange
	// Leftmost path: the layer (the first node with keys, plus one for each
	// empty node above it) and the smallest key.
	n, keyed := rn, false
	for depth := 0; ; depth++ {
		if depth >= MaxTreeDepth {
			return r, tooDeep
		}
		if len(n.entries) > 0 && !keyed {
			r.layer, keyed = n.layer+depth, true
		}
		if n.left.IsZero() {
			if len(n.entries) > 0 {
				r.min = n.entries[0].key
			}
			break
		}
		var err error
		if n, err = readNode(ctx, tr.bs, n.left); err != nil {
			return r, err
		}
	}
	// Rightmost path: the largest key.
	n = rn
	for depth := 0; ; depth++ {
		if depth >= MaxTreeDepth {
			return r, tooDeep
		}
		last := n.left
		if len(n.entries) > 0 {
			last = n.entries[len(n.entries)-1].right
		}
		if last.IsZero() {
			if len(n.entries) > 0 {
				r.max = n.entries[len(n.entries)-1].key
			}
			break
		}
		var err error
		if n, err = readNode(ctx, tr.bs, last); err != nil {
			return r, err
		}
	}
	tr.ranges[id] = r
	return r, nil
}

// ChunkSpot is where a walk reached a chunk node: Depth 0 for a chunked
// file node (a tree's value), one more per list node above it.
type ChunkSpot struct {
	CID   CID
	Depth int
}

// CheckChunkNode decodes data, the bytes of spot.CID, strictly and checks
// it is what the chunked value reader accepts at spot: a file node (with
// its content's sha256, at most MaxValueSize bytes) as a value, a list node
// (no sha256) below one, at most MaxChunkDepth deep. It returns the node
// and the spots of its links that are list nodes (the others are raw
// chunks). Sizes and the sha256 need the chunks in order: CheckValue.
func CheckChunkNode(spot ChunkSpot, data []byte) (*ChunkNode, []ChunkSpot, error) {
	cn, err := DecodeChunkNode(data)
	if err != nil {
		return nil, nil, err
	}
	bad := func(format string, a ...any) (*ChunkNode, []ChunkSpot, error) {
		return nil, nil, &ChunkError{Node: spot.CID, Reason: fmt.Sprintf(format, a...)}
	}
	switch {
	case spot.Depth == 0 && cn.SHA256 == nil:
		return bad("is a chunk list node, not a chunked file node (no sha256)")
	case spot.Depth > 0 && cn.SHA256 != nil:
		return bad("a chunked file node cannot be nested in another")
	case spot.Depth > MaxChunkDepth:
		return bad("chunk list nodes nested deeper than %d", MaxChunkDepth)
	case cn.Size > MaxValueSize:
		return bad("claims %d bytes, more than %d", cn.Size, uint64(MaxValueSize))
	}
	var lists []ChunkSpot
	for _, c := range cn.Chunks {
		if c.Codec() == CodecDagCBOR {
			if spot.Depth >= MaxChunkDepth {
				return bad("chunk list nodes nested deeper than %d at %s", MaxChunkDepth, c)
			}
			lists = append(lists, ChunkSpot{CID: c, Depth: spot.Depth + 1})
		}
	}
	return cn, lists, nil
}

// CheckValue checks the value v as the reader reads it: a raw block, or a
// chunked file node whose nodes pass CheckChunkNode, whose chunks hold,
// node by node, the sizes recorded, and whose content has the sha256 its
// file node records. It reads the chunks in order with an explicit stack,
// holding one chunk at a time; visit, when set, is called once per block
// read, in that order, the file node first (a chunk repeated in the value
// is read and visited again).
func CheckValue(ctx context.Context, bs BlockStore, v CID, visit func(c CID, data []byte) error) error {
	data, err := bs.Get(ctx, v)
	if err != nil {
		return err
	}
	if visit != nil {
		if err := visit(v, data); err != nil {
			return err
		}
	}
	switch v.Codec() {
	case CodecRaw:
		return nil
	case CodecDagCBOR:
	default:
		return fmt.Errorf("%w: value %s has codec 0x%x, want raw or a chunked file node", ErrBadObject, v, v.Codec())
	}
	root, _, err := CheckChunkNode(ChunkSpot{CID: v}, data)
	if err != nil {
		return err
	}
	return forChunks(ctx, bs, v, root, visit, nil)
}

// forChunks reads the chunks under the checked file node root (of CID v)
// in order, checking each node as CheckValue says; content, when set, is
// called with each raw chunk's bytes in order.
func forChunks(ctx context.Context, bs BlockStore, v CID, root *ChunkNode, visit func(CID, []byte) error, content func([]byte) error) error {
	type frame struct {
		id    CID
		links []CID
		i     int
		depth int
		size  uint64 // the bytes the node records
		end   uint64 // the offset at which they end
	}
	h := sha256.New()
	var off uint64
	stack := []frame{{id: v, links: root.Chunks, size: root.Size, end: root.Size}}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		f := &stack[len(stack)-1]
		if f.i == len(f.links) {
			if off != f.end {
				return &ChunkError{Node: f.id, Reason: fmt.Sprintf("its chunks hold %d bytes, it records %d", off-(f.end-f.size), f.size)}
			}
			stack = stack[:len(stack)-1]
			continue
		}
		c := f.links[f.i]
		f.i++
		data, err := bs.Get(ctx, c)
		if err != nil {
			what := "chunk"
			if c.Codec() == CodecDagCBOR {
				what = "chunk list"
			}
			return fmt.Errorf("objects: reading %s %s: %w", what, c, err)
		}
		if visit != nil {
			if err := visit(c, data); err != nil {
				return err
			}
		}
		if c.Codec() == CodecRaw {
			if uint64(len(data)) > f.end-off {
				return &ChunkError{Node: f.id, Reason: fmt.Sprintf("its chunks hold more than the %d bytes it records", f.size)}
			}
			off += uint64(len(data))
			h.Write(data)
			if content != nil {
				if err := content(data); err != nil {
					return err
				}
			}
			continue
		}
		cn, _, err := CheckChunkNode(ChunkSpot{CID: c, Depth: f.depth + 1}, data)
		if err != nil {
			return err
		}
		if cn.Size > f.end-off {
			return &ChunkError{Node: f.id, Reason: fmt.Sprintf("its chunks hold more than the %d bytes it records", f.size)}
		}
		stack = append(stack, frame{id: c, links: cn.Chunks, depth: f.depth + 1, size: cn.Size, end: off + cn.Size})
	}
	if sum := h.Sum(nil); string(sum) != string(root.SHA256) {
		return &ChunkError{Node: v, hash: true, Reason: fmt.Sprintf("content hashes to %x, the node records %x", sum, root.SHA256)}
	}
	return nil
}

// IsShapeError reports whether err is a tree or chunk node refused where
// it was reached (a *TreeError or *ChunkError), as opposed to a block that
// could not be read.
func IsShapeError(err error) bool {
	var te *TreeError
	var ce *ChunkError
	return errors.As(err, &te) || errors.As(err, &ce)
}
