package snapshot

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
)

// CARStats counts what WriteCAR wrote.
type CARStats struct {
	Blocks int
	Bytes  int64
}

// Staged is at least what ReadCAR counts against CAROptions.MaxStaged for
// this CAR: its bytes and CARBlockOverhead per block. A writer whose CAR
// must be read whole (a history pack) bounds this, not Bytes.
func (s CARStats) Staged() int64 { return s.Bytes + int64(s.Blocks)*CARBlockOverhead }

// WriteCAR writes a CARv1 file whose root is commit and which holds every
// block reachable from it (the commit, its ancestors, their tree nodes and
// values), each once, in dag.Walk's order: commits before their trees, a
// tree node before its children and values. A block that is missing or
// corrupt stops the export with an error naming it.
func WriteCAR(ctx context.Context, w io.Writer, bs objects.BlockStore, commit objects.CID) (CARStats, error) {
	return WriteCARCut(ctx, w, bs, commit, nil)
}

// WriteCARCut is WriteCAR over a history a forget cut: parent links for
// which cut reports true are not followed (their commits are gone), so the
// CAR holds the kept history; its commits still name those parents.
func WriteCARCut(ctx context.Context, w io.Writer, bs objects.BlockStore, commit objects.CID, cut func(child, parent objects.CID) bool) (CARStats, error) {
	return WriteCARSince(ctx, w, bs, commit, cut, nil)
}

// WriteCARSince is WriteCARCut that leaves out the blocks skip names: an
// incremental CAR, holding what a receiver that has skip's blocks lacks
// (ReadCAR takes such a CAR into a store that has them).
func WriteCARSince(ctx context.Context, w io.Writer, bs objects.BlockStore, commit objects.CID, cut func(child, parent objects.CID) bool, skip func(objects.CID) bool) (CARStats, error) {
	return WriteCARWith(ctx, w, bs, commit, CARWriteOptions{Cut: cut, Skip: skip})
}

// CARWriteOptions tune WriteCARWith.
type CARWriteOptions struct {
	// Cut names parent links not followed (WriteCARCut).
	Cut func(child, parent objects.CID) bool
	// Skip names blocks left out (WriteCARSince).
	Skip func(objects.CID) bool
	// Absent names the raw blocks of values a redaction removed
	// (dag.WalkOptions.Absent): they are left out, as they are not in the
	// store.
	Absent func(v, c objects.CID) bool
	// Redactions are the lines of the redaction records that cover the
	// blocks Absent leaves out (refs/redaction): each is written after
	// the blocks as a raw block of its own, which no link reaches
	// (ReadCAR with CAROptions.Redactions takes them).
	Redactions [][]byte
}

// WriteCARWith is WriteCAR with options.
func WriteCARWith(ctx context.Context, w io.Writer, bs objects.BlockStore, commit objects.CID, o CARWriteOptions) (CARStats, error) {
	cut, skip := o.Cut, o.Skip
	var st CARStats
	bw := bufio.NewWriterSize(w, 1<<20)
	frame := func(parts ...[]byte) error {
		n := 0
		for _, p := range parts {
			n += len(p)
		}
		var vb [binary.MaxVarintLen64]byte
		k := binary.PutUvarint(vb[:], uint64(n))
		if _, err := bw.Write(vb[:k]); err != nil {
			return err
		}
		for _, p := range parts {
			if _, err := bw.Write(p); err != nil {
				return err
			}
		}
		st.Bytes += int64(k + n)
		return nil
	}
	if err := frame(objects.CARHeader(commit)); err != nil {
		return st, err
	}
	_, problems, err := dag.Walk(ctx, bs, []objects.CID{commit}, dag.WalkOptions{
		Cut:    cut,
		Absent: o.Absent,
		Visit: func(c objects.CID, data []byte) error {
			if skip != nil && skip(c) {
				return nil
			}
			st.Blocks++
			return frame(c.Bytes(), data)
		},
	})
	if err != nil {
		return st, fmt.Errorf("snapshot: CAR: %w", err)
	}
	if len(problems) > 0 {
		return st, fmt.Errorf("snapshot: CAR: %w", problems[0])
	}
	for _, line := range o.Redactions {
		b := objects.NewValue(line)
		if skip != nil && skip(b.CID) {
			continue
		}
		st.Blocks++
		if err := frame(b.CID.Bytes(), b.Data); err != nil {
			return st, err
		}
	}
	return st, bw.Flush()
}
