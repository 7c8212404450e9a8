package refs

import (
	"context"

	"github.com/agentstate/agentstate/objects"
)

// Cut is where an agent's operation log begins after a forget cut it: the
// entries up to and including Seq are gone, and the first kept entry chains
// to Hash (the hex sha256 of entry Seq's bytes) and starts from New (where
// entry Seq moved HEAD). The checkpoint that records a cut (dag/repo) says
// what else was cut.
type Cut struct {
	Seq  uint64      `json:"seq"`
	Hash string      `json:"hash"`
	New  objects.CID `json:"new"`
}

// CutSource tells Refs where agents' logs were cut.
type CutSource interface {
	// Cut returns agent's cut; ok is false when its log was never cut.
	Cut(ctx context.Context, agent string) (c Cut, ok bool, err error)
}

// LogTrimmer is an optional ability of a Store: deleting an agent's log
// entries up to and including seq (a forget's cut). Entries a trim left
// behind (a process killed half-way) are harmless: Refs skips every entry
// at or before the cut.
type LogTrimmer interface {
	TrimLog(ctx context.Context, agent string, through uint64) error
}

// SetCuts makes r honour the cuts src reports: Log, Entries and Verify start
// after an agent's cut.
func (r *Refs) SetCuts(src CutSource) { r.cuts = src }

func (r *Refs) cut(ctx context.Context, agent string) (Cut, bool, error) {
	if r.cuts == nil {
		return Cut{}, false, nil
	}
	return r.cuts.Cut(ctx, agent)
}

// CutOf returns where agent's log was cut, if it was.
func (r *Refs) CutOf(ctx context.Context, agent string) (Cut, bool, error) { return r.cut(ctx, agent) }
