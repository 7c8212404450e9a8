package dag

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/objects"
)

// Reach is a set of reachable block CIDs.
type Reach map[objects.CID]struct{}

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
}

// Walk marks every block reachable from the given commits: the commits,
// their ancestors, their tree nodes and values (with the chunks and chunk
// nodes of chunked values). Defects are collected as Problems, not fatal.
// It is the one traversal of the object graph: verify, gc and CAR export
// all use it.
func Walk(ctx context.Context, bs objects.BlockStore, commits []objects.CID, opts WalkOptions) (Reach, []Problem, error) {
	seen := Reach{}
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
	var trees []objects.CID
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		l := stack[len(stack)-1]
		c := l.c
		stack = stack[:len(stack)-1]
		if _, ok := seen[c]; ok {
			continue
		}
		cm, data, err := readCommit(ctx, bs, c)
		if err != nil {
			if !l.child.IsZero() && opts.Gone != nil && opts.Gone(l.child, c) && isMissing(err) {
				continue // cut by a forget
			}
			seen[c] = struct{}{}
			problems = append(problems, Problem{CID: c, Via: "commit", Err: err})
			continue
		}
		seen[c] = struct{}{}
		if err := visit(c, data); err != nil {
			return nil, nil, err
		}
		for _, p := range cm.Parents {
			if opts.Cut == nil || !opts.Cut(c, p) {
				stack = append(stack, link{c: p, child: c})
			}
		}
		trees = append(trees, cm.Tree)
	}
	for len(trees) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		t := trees[len(trees)-1]
		trees = trees[:len(trees)-1]
		if _, ok := seen[t]; ok {
			continue
		}
		seen[t] = struct{}{}
		data, err := bs.Get(ctx, t)
		if err != nil {
			problems = append(problems, Problem{CID: t, Via: "tree node", Err: err})
			continue
		}
		subs, vals, err := objects.NodeLinks(data)
		if err != nil {
			problems = append(problems, Problem{CID: t, Via: "tree node", Err: err})
			continue
		}
		if err := visit(t, data); err != nil {
			return nil, nil, err
		}
		trees = append(trees, subs...)
		for len(vals) > 0 {
			v := vals[len(vals)-1]
			vals = vals[:len(vals)-1]
			if _, ok := seen[v]; ok {
				continue
			}
			seen[v] = struct{}{}
			if v.Codec() == objects.CodecDagCBOR { // a chunked value: its node and list nodes link chunks
				data, err := bs.Get(ctx, v)
				if err == nil {
					var links []objects.CID
					if links, err = objects.ChunkLinks(data); err == nil {
						if err := visit(v, data); err != nil {
							return nil, nil, err
						}
						vals = append(vals, links...)
						continue
					}
				}
				problems = append(problems, Problem{CID: v, Via: "chunked value in tree " + t.Short(), Err: err})
				continue
			}
			if opts.VerifyValues || opts.Visit != nil {
				data, err := bs.Get(ctx, v)
				if err != nil {
					problems = append(problems, Problem{CID: v, Via: "value in tree " + t.Short(), Err: err})
					continue
				}
				if err := visit(v, data); err != nil {
					return nil, nil, err
				}
			} else if ok, err := bs.Has(ctx, v); err != nil || !ok {
				if err == nil {
					err = &objects.NotFoundError{CID: v}
				}
				problems = append(problems, Problem{CID: v, Via: "value in tree " + t.Short(), Err: err})
			}
		}
	}
	return seen, problems, nil
}

// isMissing reports an error that says a block is not in the store.
func isMissing(err error) bool {
	return errors.Is(err, objects.ErrNotFound) || errors.Is(err, ErrUnknown)
}
