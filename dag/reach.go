package dag

import (
	"context"
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

// Walk marks every block reachable from the given commits: the commits,
// their ancestors, their tree nodes and values (with the chunks and chunk
// nodes of chunked values). With verifyValues, value
// blocks are read and re-hashed too (verify); otherwise only their presence
// matters to the caller (gc). Tree nodes and commits are always read, and
// thus re-hashed and decoded. Defects are collected, not fatal.
func Walk(ctx context.Context, bs objects.BlockStore, commits []objects.CID, verifyValues bool) (Reach, []Problem, error) {
	seen := Reach{}
	var problems []Problem
	stack := append([]objects.CID(nil), commits...)
	var trees []objects.CID
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, ok := seen[c]; ok {
			continue
		}
		seen[c] = struct{}{}
		cm, err := ReadCommit(ctx, bs, c)
		if err != nil {
			problems = append(problems, Problem{CID: c, Via: "commit", Err: err})
			continue
		}
		stack = append(stack, cm.Parents...)
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
						vals = append(vals, links...)
						continue
					}
				}
				problems = append(problems, Problem{CID: v, Via: "chunked value in tree " + t.Short(), Err: err})
				continue
			}
			if verifyValues {
				if _, err := bs.Get(ctx, v); err != nil {
					problems = append(problems, Problem{CID: v, Via: "value in tree " + t.Short(), Err: err})
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
