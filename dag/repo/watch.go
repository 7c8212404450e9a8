package repo

import (
	"context"
	"iter"

	"github.com/agentstate/agentstate/refs"
)

// HeadWatcher is an optional ability of a Storage whose HEADs other
// processes move (a served store's client): it yields every agent's HEAD
// record now and again after every move, each round ended by a nil record.
type HeadWatcher interface {
	WatchHeads(ctx context.Context) iter.Seq2[*refs.Record, error]
}

// WatchHead yields agent's HEAD now (the zero Head when the agent has none)
// and again each time it moves, until ctx ends. Moves made in this process
// wake it at once, and so do moves a served store's other clients make.
func (r *Repo) WatchHead(ctx context.Context, agent string) iter.Seq2[refs.Head, error] {
	return func(yield func(refs.Head, error) bool) {
		if err := refs.ValidateAgent(agent); err != nil {
			yield(refs.Head{}, err)
			return
		}
		var last []byte
		first := true
		emit := func(rec []byte) bool {
			if !first && string(rec) == string(last) {
				return true
			}
			first, last = false, rec
			h, err := refs.DecodeHead(rec)
			return yield(h, err) && err == nil
		}
		if w, ok := r.Storage.(HeadWatcher); ok {
			var cur []byte
			for rec, err := range w.WatchHeads(ctx) {
				if err != nil {
					if ctx.Err() == nil {
						yield(refs.Head{}, err)
					}
					return
				}
				if rec == nil { // a round ends
					if !emit(cur) {
						return
					}
					cur = nil
					continue
				}
				if rec.Agent == agent {
					cur = rec.Data
				}
			}
			return
		}
		for {
			changed := r.Refs.Changed()
			rec, _, err := r.Storage.HeadRecord(ctx, agent)
			if err != nil {
				yield(refs.Head{}, err)
				return
			}
			if !emit(rec) {
				return
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return
			}
		}
	}
}
