package dag

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/agentstate/agentstate/internal/progress"
	"github.com/agentstate/agentstate/objects"
)

// Reach is a set of reachable block CIDs.
type Reach map[objects.CID]struct{}

// Has reports whether c is in r.
func (r Reach) Has(c objects.CID) bool { _, ok := r[c]; return ok }

// Add puts c in r.
func (r Reach) Add(c objects.CID) { r[c] = struct{}{} }

// ReachSet is a set of blocks a walk reached (WalkOptions.Reached).
type ReachSet interface {
	Has(c objects.CID) bool
	Add(c objects.CID)
}

// countingSet counts the blocks added to a walk's set.
type countingSet struct {
	ReachSet
	c *progress.Counter
}

func (s countingSet) Add(c objects.CID) {
	s.ReachSet.Add(c)
	s.c.Add(1)
}

// Problem is one defect found by a walk: a missing, corrupt or undecodable
// block, and the path by which it was reached.
type Problem struct {
	CID objects.CID
	Via string
	Err error
}

func (p Problem) Error() string { return fmt.Sprintf("%s (reached via %s): %v", p.CID, p.Via, p.Err) }

// Unwrap returns the cause, so errors.Is and errors.As reach it.
func (p Problem) Unwrap() error { return p.Err }

// WalkOptions tune Walk.
type WalkOptions struct {
	// VerifyValues reads and re-hashes every value block (verify);
	// otherwise only their presence is checked (gc). Tree nodes, chunk
	// nodes and commits are always read, so re-hashed and decoded.
	VerifyValues bool
	// Visit, when set, is called once with every block reached and its
	// bytes (every block is then read), a commit before its tree, a tree
	// node before its subtrees and values, a chunked value's node before its
	// chunks. An error from Visit stops the walk and is returned.
	Visit func(c objects.CID, data []byte) error
	// Cut, when set, names parent links a forget cut (dag/repo's
	// checkpoints): Walk does not follow them.
	Cut func(child, parent objects.CID) bool
	// Gone, when set, names parent links some forget cut (any agent's):
	// when such a parent is missing it is no problem, only the end of that
	// line. (A parent that is there is walked: another agent may still need
	// what lies behind a cut of this one.)
	Gone func(child, parent objects.CID) bool
	// Held, when set, names tree nodes and values known whole and checked
	// (a store's own blocks, when the walk reads them through a view that
	// adds new ones): a tree node so held is checked to fit where it is
	// reached (objects.TreeRanges) but not walked below, a value so held is
	// not read.
	Held func(c objects.CID) bool
	// Absent, when set, names the raw blocks of a value that a redaction
	// intentionally removed (dag/repo's redaction records): v is the value
	// reached from a tree, c one of its raw blocks (v itself for a raw
	// value). Such a block is neither read, nor checked, nor marked reached
	// (gc deletes it if it is still there); the value's chunk nodes are
	// walked and checked as any others, but the content's sha256 is not
	// (it needs the content). A block of another value is checked as before,
	// even when its bytes are the same chunk. Absent(v, zero CID) reports
	// whether a redaction removed any block of v.
	Absent func(v, c objects.CID) bool
	// Hashed, when set, names raw blocks the caller has read whole and
	// re-hashed already (verify's one scan of the store): with
	// VerifyValues a raw value so named is checked present, not read
	// again. The chunks of a chunked value are still read, in order, for
	// the content's size and sha256.
	Hashed func(c objects.CID) bool
	// Ahead, when set, has the walk take the tree nodes it is about to
	// check off its stack some hundreds at a time and decode them on every
	// core first (verify: decoding is most of a node's check); the checks
	// where each sits, and the rest, stay in order on the walk's own
	// goroutine. The blocks are still read on that goroutine (bs need not
	// be safe for concurrent use). It reaches what the walk node by node
	// reaches and finds the same problems, which it may list in another
	// order (siblings of a batch come before their children).
	Ahead bool
	// SizeHint, when set, is about how many blocks the walk may reach (a
	// scanned store's count): the set it returns is made that size at once
	// rather than grown.
	SizeHint int
	// Reached, when set, is where Walk keeps the blocks it reached, in
	// place of the Reach it returns (nil then): a caller that holds the
	// blocks already (a CAR import) marks them there at less cost than a
	// map of every CID.
	Reached ReachSet
}

// Walk marks every block reachable from the given commits: the commits,
// their ancestors, their tree nodes and values (with the chunks and chunk
// nodes of chunked values). Defects are collected as Problems, not fatal.
// It is the one traversal of the object graph: verify, gc and CAR export
// all use it.
func Walk(ctx context.Context, bs objects.BlockStore, commits []objects.CID, opts WalkOptions) (Reach, []Problem, error) {
	var own Reach
	seen := opts.Reached
	if seen == nil {
		own = make(Reach, opts.SizeHint)
		seen = own
	}
	if pc := progress.Start(ctx, -1); pc != nil {
		seen = countingSet{seen, pc} // blocks reached, for a progress bar
	}
	var problems []Problem
	visit := func(c objects.CID, data []byte) error {
		if opts.Visit == nil {
			return nil
		}
		return opts.Visit(c, data)
	}
	type link struct{ c, child objects.CID }
	var stack []link
	for _, c := range commits {
		stack = append(stack, link{c: c})
	}
	var trees []objects.TreeSpot
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		l := stack[len(stack)-1]
		c := l.c
		stack = stack[:len(stack)-1]
		if seen.Has(c) {
			continue
		}
		cm, data, err := readCommit(ctx, bs, c)
		if err != nil {
			if !l.child.IsZero() && opts.Gone != nil && opts.Gone(l.child, c) && isMissing(err) {
				continue // cut by a forget
			}
			seen.Add(c)
			problems = append(problems, Problem{CID: c, Via: "commit", Err: err})
			continue
		}
		seen.Add(c)
		if err := visit(c, data); err != nil {
			return nil, nil, err
		}
		for _, p := range cm.Parents {
			if opts.Cut == nil || !opts.Cut(c, p) {
				stack = append(stack, link{c: p, child: c})
			}
		}
		trees = append(trees, objects.RootSpot(cm.Tree))
	}
	// Tree nodes are checked where their tree puts them
	// (objects.CheckTreeNode); a node reached again, from another tree, is
	// checked against its new place without walking it again
	// (objects.TreeRanges).
	at := map[objects.CID]objects.TreeSpot{} // where each node was first checked
	ranges := objects.NewTreeRanges(bs)
	checked := map[objects.CID]bool{} // chunked values checked whole (VerifyValues)
	batchSize := 1
	if opts.Ahead {
		batchSize = 256
	}
	var batch []objects.TreeSpot
	var got []fetchedNode
	for len(trees) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		// The next nodes off the stack, read (those not reached yet) and
		// decoded; then each checked, the top of the stack first.
		n := min(len(trees), batchSize)
		batch = append(batch[:0], trees[len(trees)-n:]...)
		trees = trees[:len(trees)-n]
		got = append(got[:0], make([]fetchedNode, n)...)
		for i, sp := range batch {
			if !seen.Has(sp.CID) && (opts.Held == nil || !opts.Held(sp.CID)) {
				got[i].data, got[i].err = bs.Get(ctx, sp.CID)
				got[i].read = true
			}
		}
		decodeNodes(got, opts.Ahead)
		for i := n - 1; i >= 0; i-- {
			spot := batch[i]
			t := spot.CID
			if seen.Has(t) {
				first, ok := at[t]
				if !ok || spot.Inside(first) {
					continue // a problem already, or it fits as it fitted there
				}
				if err := ranges.Fits(ctx, spot); objects.IsShapeError(err) {
					problems = append(problems, Problem{CID: t, Via: "tree node", Err: err})
				}
				continue
			}
			seen.Add(t)
			if opts.Held != nil && opts.Held(t) {
				if err := ranges.Fits(ctx, spot); err != nil {
					problems = append(problems, Problem{CID: t, Via: "tree node", Err: err})
				} else {
					at[t] = spot
				}
				continue
			}
			f := got[i]  // read and decoded above: t was neither reached nor held then
			if !f.read { // not so: a walk's set and Held only ever grow
				one := []fetchedNode{{read: true}}
				one[0].data, one[0].err = bs.Get(ctx, t)
				decodeNodes(one, false)
				f = one[0]
			}
			if f.err != nil {
				problems = append(problems, Problem{CID: t, Via: "tree node", Err: f.err})
				continue
			}
			subs, vals, err := f.node.CheckAt(spot)
			if err != nil {
				problems = append(problems, Problem{CID: t, Via: "tree node", Err: err})
				continue
			}
			at[t] = spot
			if err := visit(t, f.data); err != nil {
				return nil, nil, err
			}
			trees = append(trees, subs...)
			for j := len(vals) - 1; j >= 0; j-- { // last first, as a stack of them would
				v := vals[j]
				if opts.Held != nil && opts.Held(v) {
					seen.Add(v)
					if v.Codec() == objects.CodecDagCBOR { // whole, but it must be a file node to be a value
						data, err := bs.Get(ctx, v)
						if err == nil {
							_, _, err = objects.CheckChunkNode(objects.ChunkSpot{CID: v}, data)
						}
						if err != nil {
							problems = append(problems, Problem{CID: v, Via: "chunked value in tree " + t.Short(), Err: err})
						}
					}
					continue
				}
				if opts.VerifyValues && v.Codec() == objects.CodecDagCBOR && !redacted(opts, v) {
					// A chunked value read as the reader reads it: every node
					// where it sits, the sizes and the content's sha256.
					if checked[v] {
						continue
					}
					checked[v] = true
					err := objects.CheckValue(ctx, bs, v, func(c objects.CID, data []byte) error {
						if seen.Has(c) {
							return nil
						}
						seen.Add(c)
						if err := visit(c, data); err != nil {
							return visitError{err}
						}
						return nil
					})
					if err != nil {
						var ve visitError
						if errors.As(err, &ve) {
							return nil, nil, ve.err
						}
						problems = append(problems, valueProblem(v, t, err))
					}
					continue
				}
				if p, err := walkValue(ctx, bs, v, t, opts, seen, visit); err != nil {
					return nil, nil, err
				} else if p != nil {
					problems = append(problems, p...)
				}
			}
		}
	}
	return own, problems, nil
}

// fetchedNode is a tree node the walk read (data, or the error of its
// read) and decoded (node, or the error of that).
type fetchedNode struct {
	read bool
	data []byte
	node *objects.DecodedTreeNode
	err  error
}

// decodeNodes decodes the nodes read, on every core with ahead.
func decodeNodes(got []fetchedNode, ahead bool) {
	decode := func(f *fetchedNode) {
		if f.read && f.err == nil {
			f.node, f.err = objects.DecodeTreeNode(f.data)
		}
	}
	workers := 1
	if ahead {
		workers = min(runtime.GOMAXPROCS(0), (len(got)+15)/16)
	}
	if workers <= 1 {
		for i := range got {
			decode(&got[i])
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(got); i = int(next.Add(1)) - 1 {
				decode(&got[i])
			}
		}()
	}
	for i := int(next.Add(1)) - 1; i < len(got); i = int(next.Add(1)) - 1 {
		decode(&got[i])
	}
	wg.Wait()
}

// visitError marks an error of WalkOptions.Visit, which stops a walk.
type visitError struct{ err error }

func (e visitError) Error() string { return e.err.Error() }
func (e visitError) Unwrap() error { return e.err }

// valueProblem is the problem of a chunked value v of tree node t that did
// not check: it names the missing or corrupt block when that is what
// stopped the check.
func valueProblem(v, t objects.CID, err error) Problem {
	p := Problem{CID: v, Via: "chunked value in tree " + t.Short(), Err: err}
	var nf *objects.NotFoundError
	var hm *objects.HashMismatchError
	switch {
	case errors.As(err, &nf) && nf.CID != v:
		p.CID, p.Via = nf.CID, "chunk of value "+v.Short()+" in tree "+t.Short()
	case errors.As(err, &hm) && hm.Expected != v:
		p.CID, p.Via = hm.Expected, "chunk of value "+v.Short()+" in tree "+t.Short()
	}
	return p
}

// walkValue marks the value v of tree node t and, for a chunked value, its
// nodes and chunks, checking each node where it sits (but not the sizes
// and the sha256, which need the content in order: VerifyValues) and each
// raw block's presence (its bytes, with VerifyValues or Visit).
func walkValue(ctx context.Context, bs objects.BlockStore, v, t objects.CID, opts WalkOptions, seen ReachSet, visit func(objects.CID, []byte) error) ([]Problem, error) {
	var problems []Problem
	stack := []objects.ChunkSpot{{CID: v}}
	for len(stack) > 0 {
		sp := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		c := sp.CID
		if c.Codec() == objects.CodecRaw && opts.Absent != nil && opts.Absent(v, c) {
			continue // redacted: intentionally absent
		}
		if seen.Has(c) {
			continue
		}
		seen.Add(c)
		via := func() string { // only when there is a problem to name
			if c != v {
				return "chunk of value " + v.Short() + " in tree " + t.Short()
			}
			return "value in tree " + t.Short()
		}
		if c.Codec() == objects.CodecDagCBOR { // a chunked value: its node and list nodes link chunks
			data, err := bs.Get(ctx, c)
			if err == nil {
				var cn *objects.ChunkNode
				if cn, _, err = objects.CheckChunkNode(sp, data); err == nil {
					if err := visit(c, data); err != nil {
						return nil, err
					}
					for _, l := range cn.Chunks {
						stack = append(stack, objects.ChunkSpot{CID: l, Depth: sp.Depth + 1})
					}
					continue
				}
			}
			w := via()
			if c == v {
				w = "chunked " + w
			}
			problems = append(problems, Problem{CID: c, Via: w, Err: err})
			continue
		}
		hashed := opts.Hashed != nil && opts.Hashed(c) // present and whole: the caller read it
		if opts.Visit != nil || opts.VerifyValues && !hashed {
			data, err := bs.Get(ctx, c)
			if err != nil {
				problems = append(problems, Problem{CID: c, Via: via(), Err: err})
				continue
			}
			if err := visit(c, data); err != nil {
				return nil, err
			}
		} else if !hashed {
			if ok, err := bs.Has(ctx, c); err != nil || !ok {
				if err == nil {
					err = &objects.NotFoundError{CID: c}
				}
				problems = append(problems, Problem{CID: c, Via: via(), Err: err})
			}
		}
	}
	return problems, nil
}

// redacted reports whether a redaction removed any raw block of the value
// v: a chunked value's sha256 can then no longer be checked.
func redacted(opts WalkOptions, v objects.CID) bool {
	return opts.Absent != nil && opts.Absent(v, objects.CID{})
}

// isMissing reports an error that says a block is not in the store.
func isMissing(err error) bool {
	return errors.Is(err, objects.ErrNotFound) || errors.Is(err, ErrUnknown)
}
