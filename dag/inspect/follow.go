package inspect

import (
	"context"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
)

// MaxMoved bounds the commits one HEAD move reports (View.Moved).
const MaxMoved = 1000

// Move is what one move of an agent's HEAD, from one commit to another,
// added to its log, as 'agentstate log --follow' prints it.
type Move struct {
	// Descends says the new HEAD descends from the old one (within
	// MaxMoved commits); when it does not (undo, reset, restore), Commits
	// holds the new HEAD alone.
	Descends bool `json:"descends"`
	// Commits are those the move added, newest first (with a path, only
	// those that changed it), walked as Log walks: around the agent's cuts.
	Commits []Commit `json:"commits"`
}

// Moved returns what moving agent's HEAD from one commit to another (to
// descending from from or not) added to its log; path, when set, keeps
// only the commits that changed that key.
func (v *View) Moved(ctx context.Context, agent string, from, to objects.CID, path string) (Move, error) {
	if path != "" {
		if err := objects.ValidateKey(path); err != nil {
			return Move{}, classify(err)
		}
	}
	lo, _, err := v.R.LogOptions(ctx, agent) // a forget may have cut since
	if err != nil {
		return Move{}, classify(err)
	}
	lo.Islands = nil
	var added []dag.LogEntry
	out := Move{Descends: from.IsZero(), Commits: []Commit{}}
	for le, err := range dag.LogWith(ctx, v.R.Blocks, to, lo) {
		if err != nil {
			return Move{}, classify(err)
		}
		if le.CID == from {
			out.Descends = true
			break
		}
		if len(added) == MaxMoved {
			break
		}
		added = append(added, le)
	}
	if !out.Descends {
		added = added[:min(len(added), 1)]
	}
	for _, le := range added {
		if path != "" {
			ok, err := dag.EntryTouchesKey(ctx, v.R.Blocks, le, path)
			if err != nil {
				return Move{}, classify(err)
			}
			if !ok {
				continue
			}
		}
		c, err := v.entryCommit(ctx, le)
		if err != nil {
			return Move{}, err
		}
		c.Cut = le.Cut
		out.Commits = append(out.Commits, c)
	}
	return out, nil
}
