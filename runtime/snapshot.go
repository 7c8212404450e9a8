package runtime

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/history"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
)

// Restorer brings an agent's state back from its published snapshot.
// Restore must move nothing unless the snapshot's content hashes to the
// lineage (bundle hash) it claims, and must report an agent that has no
// snapshot with an error matching ErrNoSnapshot.
type Restorer interface {
	Restore(ctx context.Context, agent string) (RestoreResult, error)
}

// RestoreResult describes a cold restore.
type RestoreResult struct {
	Commit     objects.CID // the agent's HEAD after the restore
	BundleHash string
	BlobID     string
	Pointer    string
	Receipts   int // receipt lines re-ingested into the tape
	// History is set when the whole history was restored (Options.History):
	// BlobID is then the manifest's blob and Pointer the history pointer.
	History bool
}

// pipelineSnapshotter pushes through export/snapshot, then (with
// Options.History) the history through export/history.
type pipelineSnapshotter struct {
	p    *snapshot.Pipeline
	hist *history.Shipper
	key  ed25519.PrivateKey
}

func (s pipelineSnapshotter) Push(ctx context.Context, agent string, commit objects.CID) (SnapshotResult, error) {
	rec, err := s.p.Push(ctx, agent, commit)
	if err != nil {
		return SnapshotResult{}, err
	}
	res := SnapshotResult{BlobID: string(rec.BlobID), BundleHash: rec.BundleHash, Size: rec.Size, Pointer: rec.Pointer,
		EndEpoch: rec.EndEpoch, AlreadyCertified: rec.AlreadyCertified}
	if s.hist != nil {
		m, err := s.hist.Push(ctx, agent, s.key)
		if err != nil {
			return res, fmt.Errorf("runtime: snapshot %s pushed, its history not: %w", rec.BlobID, err)
		}
		res.HistoryPacks = len(m.Packs)
	}
	return res, nil
}

// pipelineRestorer restores through export/history when a history is
// published (Options.History), else through export/snapshot.
type pipelineRestorer struct {
	p    *snapshot.Pipeline
	hist *history.Shipper
}

func (s pipelineRestorer) Restore(ctx context.Context, agent string) (RestoreResult, error) {
	if s.hist != nil {
		// The keys the store trusts to sign this agent's history: the
		// operator keys, this runtime's among them (Open records it), and
		// the agent's own; never a key only learned from another store.
		trusted, err := s.p.Repo.TrustedKeys(ctx, agent, repo.KeySignsHistory)
		if err != nil {
			return RestoreResult{}, err
		}
		res, err := s.hist.Restore(ctx, agent, trusted, history.RestoreOptions{})
		switch {
		case err == nil:
			return RestoreResult{Commit: res.Manifest.Head, BundleHash: res.Manifest.BundleHash, BlobID: string(res.Ref.Blob),
				Pointer: res.Ref.String(), Receipts: res.Receipts, History: true}, nil
		case !errors.Is(err, history.ErrNoHistory):
			return RestoreResult{}, fmt.Errorf("runtime: restoring the history of %q: %w", agent, err)
		}
	}
	rec, err := s.p.Restore(ctx, agent, snapshot.RestoreOptions{})
	if errors.Is(err, snapshot.ErrNoPointer) {
		return RestoreResult{}, fmt.Errorf("%w: %v", ErrNoSnapshot, err)
	}
	if err != nil {
		return RestoreResult{}, err
	}
	return RestoreResult{Commit: rec.Commit, BundleHash: rec.BundleHash, BlobID: string(rec.BlobID), Pointer: rec.Pointer, Receipts: rec.Receipts}, nil
}
