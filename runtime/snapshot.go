package runtime

import (
	"context"
	"errors"
	"fmt"

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
}

// pipelineSnapshotter pushes through export/snapshot.
type pipelineSnapshotter struct{ p *snapshot.Pipeline }

func (s pipelineSnapshotter) Push(ctx context.Context, agent string, commit objects.CID) (SnapshotResult, error) {
	rec, err := s.p.Push(ctx, agent, commit)
	if err != nil {
		return SnapshotResult{}, err
	}
	return SnapshotResult{BlobID: string(rec.BlobID), BundleHash: rec.BundleHash, Size: rec.Size, Pointer: rec.Pointer,
		EndEpoch: rec.EndEpoch, AlreadyCertified: rec.AlreadyCertified}, nil
}

// pipelineRestorer restores through export/snapshot.
type pipelineRestorer struct{ p *snapshot.Pipeline }

func (s pipelineRestorer) Restore(ctx context.Context, agent string) (RestoreResult, error) {
	rec, err := s.p.Restore(ctx, agent, snapshot.RestoreOptions{})
	if errors.Is(err, snapshot.ErrNoPointer) {
		return RestoreResult{}, fmt.Errorf("%w: %v", ErrNoSnapshot, err)
	}
	if err != nil {
		return RestoreResult{}, err
	}
	return RestoreResult{Commit: rec.Commit, BundleHash: rec.BundleHash, BlobID: string(rec.BlobID), Pointer: rec.Pointer, Receipts: rec.Receipts}, nil
}
