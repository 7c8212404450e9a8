package objects

import (
	"context"
	"iter"
)

// ChangeKind says how a key differs between two trees.
type ChangeKind string

const (
	Added    ChangeKind = "added"
	Removed  ChangeKind = "removed"
	Modified ChangeKind = "modified"
)

// Change is one key that differs between two trees. Old is zero for Added,
// New is zero for Removed.
type Change struct {
	Path   string     `json:"path"`
	Change ChangeKind `json:"change"`
	Old    CID        `json:"old,omitzero"`
	New    CID        `json:"new,omitzero"`
}

// diffItem is either a subtree (n != nil) or an entry.
type diffItem struct {
	n *node
	e Entry
}

type diffSide struct {
	t     *Tree
	stack []diffItem // top at the end
}

func (s *diffSide) expand(ctx context.Context, n *node) error {
	if err := s.t.load(ctx, n); err != nil {
		return err
	}
	for j := len(n.entries); j >= 0; j-- {
		if j < len(n.entries) {
			s.stack = append(s.stack, diffItem{e: Entry{Key: n.entries[j].key, Value: n.entries[j].val}})
		}
		if c := n.child(j); c != nil {
			s.stack = append(s.stack, diffItem{n: c})
		}
	}
	return nil
}

func (s *diffSide) top() *diffItem {
	if len(s.stack) == 0 {
		return nil
	}
	return &s.stack[len(s.stack)-1]
}

func (s *diffSide) pop() diffItem {
	it := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	return it
}

// DiffTrees yields the keys that differ from tree a to tree b in key order.
// Subtrees with equal CIDs on both sides are skipped without being read, so
// the cost is proportional to what changed (times the tree height).
func DiffTrees(ctx context.Context, bs BlockStore, a, b CID) iter.Seq2[Change, error] {
	return func(yield func(Change, error) bool) {
		if a == b {
			return
		}
		ta, err := LoadTree(ctx, bs, a)
		if err != nil {
			yield(Change{}, err)
			return
		}
		tb, err := LoadTree(ctx, bs, b)
		if err != nil {
			yield(Change{}, err)
			return
		}
		A := &diffSide{t: ta, stack: []diffItem{{n: ta.root}}}
		B := &diffSide{t: tb, stack: []diffItem{{n: tb.root}}}
		for {
			if err := ctx.Err(); err != nil {
				yield(Change{}, err)
				return
			}
			x, y := A.top(), B.top()
			var err error
			switch {
			case x == nil && y == nil:
				return
			case x != nil && x.n != nil && y != nil && y.n != nil:
				if x.n.cid == y.n.cid {
					A.pop()
					B.pop()
					continue
				}
				lx, ly := x.n.layer, y.n.layer
				if lx >= ly {
					err = A.expand(ctx, A.pop().n)
				}
				if err == nil && ly >= lx {
					err = B.expand(ctx, B.pop().n)
				}
			case x != nil && x.n != nil:
				err = A.expand(ctx, A.pop().n)
			case y != nil && y.n != nil:
				err = B.expand(ctx, B.pop().n)
			case y == nil || (x != nil && x.e.Key < y.e.Key):
				e := A.pop().e
				if !yield(Change{Path: e.Key, Change: Removed, Old: e.Value}, nil) {
					return
				}
			case x == nil || y.e.Key < x.e.Key:
				e := B.pop().e
				if !yield(Change{Path: e.Key, Change: Added, New: e.Value}, nil) {
					return
				}
			default:
				ea, eb := A.pop().e, B.pop().e
				if ea.Value != eb.Value {
					if !yield(Change{Path: ea.Key, Change: Modified, Old: ea.Value, New: eb.Value}, nil) {
						return
					}
				}
			}
			if err != nil {
				yield(Change{}, err)
				return
			}
		}
	}
}
