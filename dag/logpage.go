package dag

import (
	"context"

	"github.com/agentstate/agentstate/objects"
)

// LogPage walks the log LogWith walks from start, calling visit with each
// commit until visit returns false, and returns the walk's frontier: the
// commits to go on from (nil when the log is done). With frontier set it
// goes on instead from a frontier an earlier LogPage returned (start and
// o.Islands then only mark what that walk had seen), so that the pages of
// one walk, read one after the other, are the log LogWith yields, without
// walking again what earlier pages had. A frontier holds one commit per
// line of history open at the stop: it stays small however long the
// history.
//
// Log's order relies on a commit's time being at least its parents'; a
// commit that breaks the rule and is reached by two lines, one on each side
// of a page's end, may come twice.
func LogPage(ctx context.Context, bs objects.BlockStore, start objects.CID, frontier []objects.CID, o LogOptions,
	visit func(LogEntry) (bool, error)) ([]objects.CID, error) {
	var q *logQueue
	var seen map[objects.CID]bool
	rd := newCommitReader(bs)
	defer rd.close()
	if frontier == nil {
		cm, bundle, err := rd.read(ctx, start)
		if err != nil {
			return nil, err
		}
		if q, seen, err = startLog(ctx, rd, LogEntry{CID: start, Commit: cm, Bundle: bundle}, o); err != nil {
			return nil, err
		}
	} else {
		q, seen = &logQueue{}, map[objects.CID]bool{start: true}
		for _, id := range o.Islands {
			seen[id] = true
		}
		queued := map[objects.CID]bool{}
		for _, id := range frontier {
			if queued[id] {
				continue
			}
			cm, bundle, err := rd.read(ctx, id)
			if err != nil {
				return nil, err
			}
			queued[id], seen[id] = true, true
			q.push(LogEntry{CID: id, Commit: cm, Bundle: bundle})
		}
	}
	var verr error
	err := walkLog(ctx, rd, q, seen, o, func(e LogEntry, err error) bool {
		more, err := visit(e)
		if err != nil {
			verr = err
			return false
		}
		return more
	})
	if err == nil {
		err = verr
	}
	if err != nil {
		return nil, err
	}
	if q.Len() == 0 {
		return nil, nil
	}
	next := make([]objects.CID, q.Len())
	for i, e := range *q {
		next[i] = e.CID
	}
	return next, nil
}
