package inspect

import (
	"context"
	"errors"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
)

// LogEach is Log giving each commit to fn as the walk reaches it, newest
// first, instead of gathering them: a window prints the first commit of a
// long history before the walk goes on, and holds none of it. fn gets the
// log's History too, with the head and what forget cut and no Commits, as
// LogEach returns it. An error fn
// returns stops the walk and is returned. A block found missing (a forget
// running beside the walk) makes the walk start again only while fn has
// been given nothing.
func (v *View) LogEach(ctx context.Context, agent string, o LogOptions, fn func(Commit, *History) error) (History, error) {
	if err := v.checkLog(&o); err != nil {
		return History{}, err
	}
	for attempt := 1; ; attempt++ {
		given := false
		h, err := v.logWalk(ctx, agent, o, func(c Commit, h *History) error {
			given = true
			return fn(c, h)
		})
		if err == nil || given || attempt == 4 || !errors.Is(err, ErrNotFound) || ctx.Err() != nil {
			return h, err
		}
	}
}

// checkLog checks o and splits a range A..B into Rev and Exclude.
func (v *View) checkLog(o *LogOptions) error {
	if o.Path != "" {
		if err := objects.ValidateKey(o.Path); err != nil {
			return classify(err)
		}
	}
	if err := checkLogFilters(*o); err != nil {
		return err
	}
	from, to, ok, err := SplitRange(o.Rev)
	if err != nil {
		return err
	}
	if ok {
		if o.Exclude != "" {
			return badf("%q is a range and %q excluded too: give one", o.Rev, o.Exclude)
		}
		o.Rev, o.Exclude = to, from
	}
	return nil
}

// fewCommits is the largest limit of a log that looks its commits up one
// by one (see dag.LogOptions.Many).
const fewCommits = 16

// logWalk walks the log as Log does, giving each commit kept to fn.
func (v *View) logWalk(ctx context.Context, agent string, o LogOptions, fn func(Commit, *History) error) (History, error) {
	head, err := v.checkAgent(ctx, agent)
	if err != nil {
		return History{}, err
	}
	start, _, err := v.resolve(ctx, agent, o.Rev)
	if err != nil {
		return History{}, err
	}
	lo, cp, err := v.R.LogOptions(ctx, agent)
	if err != nil {
		return History{}, classify(err)
	}
	out := History{Head: head.Commit}
	if cp != nil {
		out.Forgotten = &Forgotten{Time: cp.Time, Policy: cp.Policy, Ops: cp.ForgottenOps, Commits: cp.ForgottenCommits}
	}
	f, err := v.newLogFilter(ctx, agent, o, lo)
	if err != nil {
		return History{}, err
	}
	// A log with no limit, or more than a few, reads the whole graph it
	// walks in passes from its first commit.
	lo.Many = o.Limit <= 0 || o.Limit > fewCommits
	n := 0
	for le, err := range dag.LogWith(ctx, v.R.Blocks, start, lo) {
		if err != nil {
			return out, classify(err)
		}
		if o.Limit > 0 && n >= o.Limit {
			break
		}
		if ok, err := f.keeps(ctx, v, le); err != nil {
			return out, err
		} else if !ok {
			continue
		}
		c := v.commitNoHash(le.CID, le.Commit)
		if !o.NoBundleHash {
			var err error
			if c, err = v.entryCommit(ctx, le); err != nil {
				return out, err
			}
		}
		c.Cut = le.Cut
		n++
		if err := fn(c, &out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// entryCommit is commitOf for a commit a log walk gave: its bundle hash
// from its commit-graph record when that held it (no tree is read), else
// from its tree.
func (v *View) entryCommit(ctx context.Context, le dag.LogEntry) (Commit, error) {
	if le.Bundle == nil {
		return v.commitOf(ctx, le.CID, le.Commit)
	}
	c := v.commitNoHash(le.CID, le.Commit)
	c.BundleHash = le.Bundle.String()
	return c, nil
}
