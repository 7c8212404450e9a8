package repo

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

// Packer is an optional ability of a Storage: storing groups of blocks
// together, each group one compressed pack, every block still read whole
// by its CID (the Badger store; docs/format.md, "Packs").
type Packer interface {
	Pack(ctx context.Context, groups [][]objects.CID) (badger.PackReport, error)
	SweepPacks(ctx context.Context) (int, error)
}

// Places in a pack group: a chunked value's blocks are grouped by their
// level in its chunk tree and their index there, packChunkPlaces raw chunks
// (512 KiB of 4 KiB SQLite pages) or packNodePlaces list nodes a group.
const (
	packChunkPlaces = 128
	packNodePlaces  = 64
)

// packPlan groups the blocks of every chunked value the kept history
// holds for Pack: the newest version's blocks at their places in value
// order, then each older version's blocks that differ, at the same places
// (what ZSTD compresses against the newest, as git deltas an older blob
// against a newer one). A block is planned once, where it is first met,
// newest first.
func (r *Repo) packPlan(ctx context.Context) ([][]objects.CID, error) {
	type place struct {
		path  string
		level int
		group int
	}
	var order []place
	groups := map[place][]objects.CID{}
	planned := map[objects.CID]bool{}
	children := map[objects.CID][]objects.CID{} // decoded chunk nodes, each read once
	addValue := func(path string, v objects.CID) error {
		if v.Codec() != objects.CodecDagCBOR {
			return nil
		}
		level := []objects.CID{v}
		for depth := 0; len(level) > 0; depth++ {
			var next []objects.CID
			leaves := 0
			for _, c := range level {
				if c.Codec() != objects.CodecDagCBOR {
					p := place{path, -1, leaves / packChunkPlaces}
					leaves++
					if !planned[c] {
						planned[c] = true
						if _, ok := groups[p]; !ok {
							order = append(order, p)
						}
						groups[p] = append(groups[p], c)
					}
					continue
				}
				kids, ok := children[c]
				if !ok {
					data, err := r.Blocks.Get(ctx, c)
					if errors.Is(err, objects.ErrNotFound) {
						continue // redacted: nothing of it to pack
					}
					if err != nil {
						return err
					}
					cn, err := objects.DecodeChunkNode(data)
					if err != nil {
						return nil // not a chunked value: nothing to pack
					}
					kids = cn.Chunks
					children[c] = kids
				}
				next = append(next, kids...)
			}
			// The nodes of this level, by their index in it.
			i := 0
			for _, c := range level {
				if c.Codec() != objects.CodecDagCBOR {
					continue
				}
				p := place{path, depth, i / packNodePlaces}
				i++
				if !planned[c] {
					planned[c] = true
					if _, ok := groups[p]; !ok {
						order = append(order, p)
					}
					groups[p] = append(groups[p], c)
				}
			}
			level = next
		}
		return nil
	}
	heads, err := r.Refs.Agents(ctx)
	if err != nil {
		return nil, err
	}
	for _, h := range heads {
		lo, _, err := r.LogOptions(ctx, h.Agent)
		if err != nil {
			return nil, err
		}
		var newer objects.CID
		for e, err := range dag.LogWith(ctx, r.Blocks, h.Commit, lo) {
			if err != nil {
				return nil, err
			}
			tree := e.Commit.Tree
			if newer.IsZero() {
				t, err := objects.LoadTree(ctx, r.Blocks, tree)
				if err != nil {
					return nil, err
				}
				for ent, err := range t.Entries(ctx, "") {
					if err != nil {
						return nil, err
					}
					if err := addValue(ent.Key, ent.Value); err != nil {
						return nil, err
					}
				}
			} else {
				for ch, err := range objects.DiffTrees(ctx, r.Blocks, tree, newer) {
					if err != nil {
						return nil, err
					}
					if !ch.Old.IsZero() {
						if err := addValue(ch.Path, ch.Old); err != nil {
							return nil, err
						}
					}
				}
			}
			newer = tree
		}
	}
	out := make([][]objects.CID, 0, len(order))
	for _, p := range order {
		if g := groups[p]; len(g) > 1 {
			out = append(out, g)
		}
	}
	return out, nil
}

// repack stores the kept history's chunked values in packs (gc's last
// step) and deletes packs no block points into any more.
func (r *Repo) repack(ctx context.Context) (badger.PackReport, error) {
	pk, ok := r.Storage.(Packer)
	if !ok {
		return badger.PackReport{}, nil
	}
	groups, err := r.packPlan(ctx)
	if err != nil {
		return badger.PackReport{}, fmt.Errorf("gc: planning packs: %w", err)
	}
	rep, err := pk.Pack(ctx, groups)
	if err != nil {
		return rep, fmt.Errorf("gc: packing: %w", err)
	}
	swept, err := pk.SweepPacks(ctx)
	if err != nil {
		return rep, fmt.Errorf("gc: deleting unused packs: %w", err)
	}
	if rc, ok := r.Storage.(Reclaimer); ok && rep.Packs+swept > 0 {
		rc.Reclaim() // the blocks' values before they were packed leave the tables
	}
	return rep, nil
}

// RepairPacks drops the pointers of packed blocks whose pack is missing or
// damaged, so that they read as missing and storing their content again
// stores it (verify --repair); it returns how many.
func (r *Repo) RepairPacks(ctx context.Context) (int, error) {
	if rp, ok := r.Storage.(interface {
		RepairPacks(ctx context.Context) (int, error)
	}); ok {
		return rp.RepairPacks(ctx)
	}
	return 0, nil
}
