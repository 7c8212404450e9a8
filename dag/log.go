package dag

import (
	"container/heap"
	"context"
	"iter"

	"github.com/agentstate/agentstate/objects"
)

// LogEntry is one commit in history.
type LogEntry struct {
	CID    objects.CID
	Commit *objects.Commit
}

type logQueue []LogEntry

func (q logQueue) Len() int { return len(q) }
func (q logQueue) Less(i, j int) bool {
	if q[i].Commit.Time != q[j].Commit.Time {
		return q[i].Commit.Time > q[j].Commit.Time
	}
	return q[i].CID.Compare(q[j].CID) > 0
}
func (q logQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *logQueue) Push(x any)   { *q = append(*q, x.(LogEntry)) }
func (q *logQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// Log yields the commits reachable from start, newest first (by time; a
// commit always comes before its parents when times agree with ancestry,
// which they do for commits written by agentstate). Each commit appears once.
func Log(ctx context.Context, bs objects.BlockStore, start objects.CID) iter.Seq2[LogEntry, error] {
	return func(yield func(LogEntry, error) bool) {
		cm, err := ReadCommit(ctx, bs, start)
		if err != nil {
			yield(LogEntry{}, err)
			return
		}
		seen := map[objects.CID]bool{start: true}
		q := &logQueue{{CID: start, Commit: cm}}
		for q.Len() > 0 {
			if err := ctx.Err(); err != nil {
				yield(LogEntry{}, err)
				return
			}
			e := heap.Pop(q).(LogEntry)
			if !yield(e, nil) {
				return
			}
			for _, p := range e.Commit.Parents {
				if seen[p] {
					continue
				}
				seen[p] = true
				pc, err := ReadCommit(ctx, bs, p)
				if err != nil {
					yield(LogEntry{}, err)
					return
				}
				heap.Push(q, LogEntry{CID: p, Commit: pc})
			}
		}
	}
}

// TouchesKey reports whether commit c changed key relative to its first
// parent (or, for a root commit, whether key exists in it).
func TouchesKey(ctx context.Context, bs objects.BlockStore, c *objects.Commit, key string) (bool, error) {
	t, err := objects.LoadTree(ctx, bs, c.Tree)
	if err != nil {
		return false, err
	}
	v, ok, err := t.Get(ctx, key)
	if err != nil {
		return false, err
	}
	if len(c.Parents) == 0 {
		return ok, nil
	}
	pc, err := ReadCommit(ctx, bs, c.Parents[0])
	if err != nil {
		return false, err
	}
	if pc.Tree == c.Tree {
		return false, nil
	}
	pt, err := objects.LoadTree(ctx, bs, pc.Tree)
	if err != nil {
		return false, err
	}
	pv, pok, err := pt.Get(ctx, key)
	if err != nil {
		return false, err
	}
	return ok != pok || v != pv, nil
}

// IsAncestor reports whether a is b or an ancestor of b.
func IsAncestor(ctx context.Context, bs objects.BlockStore, a, b objects.CID) (bool, error) {
	for e, err := range Log(ctx, bs, b) {
		if err != nil {
			return false, err
		}
		if e.CID == a {
			return true, nil
		}
	}
	return false, nil
}

// MergeBase returns a best common ancestor of a and b (the newest commit
// reachable from both), or the zero CID if they share no history.
func MergeBase(ctx context.Context, bs objects.BlockStore, a, b objects.CID) (objects.CID, error) {
	inA := map[objects.CID]bool{}
	for e, err := range Log(ctx, bs, a) {
		if err != nil {
			return objects.CID{}, err
		}
		inA[e.CID] = true
	}
	for e, err := range Log(ctx, bs, b) {
		if err != nil {
			return objects.CID{}, err
		}
		if inA[e.CID] {
			return e.CID, nil
		}
	}
	return objects.CID{}, nil
}

// Diff yields the changes from commit a's tree to commit b's tree.
func Diff(ctx context.Context, bs objects.BlockStore, a, b objects.CID) iter.Seq2[objects.Change, error] {
	return func(yield func(objects.Change, error) bool) {
		ca, err := ReadCommit(ctx, bs, a)
		if err != nil {
			yield(objects.Change{}, err)
			return
		}
		cb, err := ReadCommit(ctx, bs, b)
		if err != nil {
			yield(objects.Change{}, err)
			return
		}
		for ch, err := range objects.DiffTrees(ctx, bs, ca.Tree, cb.Tree) {
			if !yield(ch, err) || err != nil {
				return
			}
		}
	}
}
