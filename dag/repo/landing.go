package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

// ErrBadLanding: a HEAD move a served store's client asked for would land
// a commit whose tree (or the tree of a commit it brings into the history)
// the store's reader refuses.
var ErrBadLanding = errors.New("repo: refused HEAD move")

// CheckLanding checks, before a served store's client moves agent's HEAD
// from old (zero: the agent is new) to head, every commit the move brings
// into the agent's history: head and its ancestors down to old's history
// or another agent's HEAD (both read only when the line does not sit
// directly on old, as for undo, reset or a merge). Each one's tree is checked as the reader reads
// it, by Fetch's walk (treeWalk), reading only the nodes and values that
// are not in its first parent's tree (a tree already in the history, or
// checked by this call): a node of the parent's tree met where it was is
// skipped with everything below it, met elsewhere it must fit there
// (objects.TreeRanges), and everything else is checked as new. The cost
// is what changed, times the tree's height. A refusal
// is ErrBadLanding, naming the commit and the block.
func (r *Repo) CheckLanding(ctx context.Context, agent string, old, head objects.CID) error {
	if head == old {
		return nil
	}
	var stop map[objects.CID]bool // other agents' HEADs, read when needed
	isStop := func(c objects.CID) (bool, error) {
		if stop == nil {
			stop = map[objects.CID]bool{}
			for rec, err := range r.Storage.HeadRecords(ctx) {
				if err != nil {
					return false, err
				}
				var h refs.Head
				if json.Unmarshal(rec.Data, &h) == nil && rec.Agent != agent && !h.Commit.IsZero() {
					stop[h.Commit] = true // another agent's HEAD: checked when it landed there
				}
			}
		}
		return stop[c], nil
	}
	gone, err := r.Gone(ctx)
	if err != nil {
		return err
	}
	var oldLine map[objects.CID]bool // old's history, read when needed
	inOld := func(c objects.CID) (bool, error) {
		if old.IsZero() {
			return false, nil
		}
		if oldLine == nil {
			oldLine = map[objects.CID]bool{}
			lo, _, err := r.LogOptions(ctx, agent)
			if err != nil {
				return false, err
			}
			lo.Islands = nil
			for le, err := range dag.LogWith(ctx, r.Blocks, old, lo) {
				if err != nil {
					return false, err
				}
				oldLine[le.CID] = true
			}
		}
		return oldLine[c], nil
	}
	visited := map[objects.CID]bool{}
	stack := []objects.CID{head}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if visited[c] || c == old {
			continue
		}
		visited[c] = true
		cm, err := r.Commit(ctx, c)
		if err != nil {
			return fmt.Errorf("%w: commit %s: %v", ErrBadLanding, c, err)
		}
		// A commit on old is new (the usual move: one commit on HEAD);
		// another may be in old's history or another agent's HEAD.
		if old.IsZero() || !slices.Contains(cm.Parents, old) {
			if known, err := isStop(c); err != nil {
				return err
			} else if known {
				continue
			}
			if known, err := inOld(c); err != nil {
				return err
			} else if known {
				continue
			}
		}
		base := objects.EmptyTreeCID
		var parents []objects.CID
		for i, p := range cm.Parents {
			if gone(c, p) {
				if ok, err := r.Blocks.Has(ctx, p); err != nil {
					return err
				} else if !ok {
					continue // a forget cut it
				}
			}
			if i == 0 {
				pc, err := r.Commit(ctx, p)
				if err != nil {
					return fmt.Errorf("%w: commit %s, parent of %s: %v", ErrBadLanding, p, c, err)
				}
				base = pc.Tree
			}
			parents = append(parents, p)
		}
		if err := r.checkTreeFrom(ctx, base, cm.Tree); err != nil {
			if objects.IsShapeError(err) || errors.Is(err, objects.ErrNotFound) || errors.Is(err, objects.ErrBadObject) || errors.Is(err, objects.ErrNonCanonical) {
				return fmt.Errorf("%w: commit %s: %w", ErrBadLanding, c, err)
			}
			return err
		}
		stack = append(stack, parents...)
	}
	return nil
}

// checkTreeFrom checks the tree root against base, a tree whose every node
// and value is checked: treeWalk, with the nodes of base known to be whole
// at their places, found by key range as the walk reaches the place
// (baseTree), and the values of base known to be values.
func (r *Repo) checkTreeFrom(ctx context.Context, base, root objects.CID) error {
	if base == root {
		return nil
	}
	seen := map[objects.CID]fetchSeen{}
	b := &baseTree{ctx: ctx, bs: r.Blocks, seen: seen, kids: map[objects.CID]*baseNode{}}
	if !base.IsZero() && base != objects.EmptyTreeCID {
		b.root = objects.RootSpot(base)
		seen[base] = fetchSeen{placed: true, spot: b.root}
		if _, err := b.read(b.root); err != nil { // its values: the top layer's keys
			return err
		}
	}
	w := treeWalk{ctx: ctx, seen: seen, ranges: objects.NewTreeRanges(r.Blocks), what: "its tree",
		node: func(spot objects.TreeSpot) ([]byte, bool, error) {
			if !spot.IsRoot() && !b.root.CID.IsZero() {
				if err := b.find(spot); err != nil {
					return nil, false, err
				}
				if s, ok := seen[spot.CID]; ok && s.placed {
					return nil, true, nil
				}
			}
			data, err := r.Blocks.Get(ctx, spot.CID)
			if err != nil {
				return nil, false, fmt.Errorf("tree node %s: %w", spot.CID, err)
			}
			return data, false, nil
		},
		value: func(v objects.CID) error {
			if s, ok := seen[v]; ok && s.value {
				return nil
			}
			s := seen[v]
			s.value = true
			seen[v] = s
			if err := objects.CheckValue(ctx, r.Blocks, v, nil); err != nil {
				return fmt.Errorf("value %s: %w", v, err)
			}
			return nil
		}}
	return w.tree(root)
}

// baseTree finds, as a walk of another tree asks, the nodes of a checked
// tree at a layer and key range, and records them (and the values of
// every node it reads) in seen. Each node of it is read at most once.
type baseTree struct {
	ctx  context.Context
	bs   objects.BlockStore
	root objects.TreeSpot
	seen map[objects.CID]fetchSeen
	kids map[objects.CID]*baseNode
	bad  bool // a node of it did not read as checked: it helps no more
}

type baseNode struct {
	layer int
	subs  []objects.TreeSpot
}

// find records the nodes of the base tree at spot's layer whose key range
// meets spot's.
func (b *baseTree) find(spot objects.TreeSpot) error {
	stack := []objects.TreeSpot{b.root}
	for len(stack) > 0 && !b.bad {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n, err := b.read(s)
		if err != nil || n == nil {
			return err
		}
		switch {
		case n.layer == spot.Layer:
			continue // recorded by read
		case n.layer < spot.Layer:
			continue
		}
		for _, sub := range n.subs {
			if meets(sub, spot) {
				stack = append(stack, sub)
			}
		}
	}
	return nil
}

// read returns the base node at s, reading it and recording it and its
// values the first time.
func (b *baseTree) read(s objects.TreeSpot) (*baseNode, error) {
	if n, ok := b.kids[s.CID]; ok {
		return n, nil
	}
	data, err := b.bs.Get(b.ctx, s.CID)
	if err != nil {
		return nil, err
	}
	subs, vals, err := objects.CheckTreeNode(s, data)
	if err != nil {
		b.bad = true // not what the history holds: check everything as new
		return nil, nil
	}
	layer := s.Layer
	if s.IsRoot() {
		layer = 0
		if len(subs) > 0 {
			layer = subs[0].Layer + 1
		} else if len(vals) > 0 { // one node: its layer is its keys'
			t, err := objects.LoadTree(b.ctx, b.bs, s.CID)
			if err != nil {
				return nil, err
			}
			for e, err := range t.Entries(b.ctx, "") {
				if err != nil {
					return nil, err
				}
				layer = objects.KeyLayer(e.Key)
				break
			}
		}
	}
	n := &baseNode{layer: layer, subs: subs}
	b.kids[s.CID] = n
	if _, ok := b.seen[s.CID]; !ok || s.IsRoot() {
		b.seen[s.CID] = fetchSeen{placed: true, spot: s, value: b.seen[s.CID].value}
	}
	for _, v := range vals {
		x := b.seen[v]
		x.value = true
		b.seen[v] = x
	}
	return n, nil
}

// meets reports whether two spots' key ranges may hold a common key.
func meets(a, b objects.TreeSpot) bool {
	lo, hi := a.Lo, a.Hi
	if b.Lo != "" && (lo == "" || b.Lo > lo) {
		lo = b.Lo
	}
	if b.Hi != "" && (hi == "" || b.Hi < hi) {
		hi = b.Hi
	}
	return lo == "" || hi == "" || lo < hi
}
