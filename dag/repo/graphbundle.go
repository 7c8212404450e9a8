package repo

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/agentstate/agentstate/objects"
)

// Bundle hashes in the commit graph (docs/format.md, "Commit graph"): a
// record may hold the bundle hash of its commit's tree, so that a log that
// prints every commit's (log --json) reads it with the commit instead of
// diffing every tree against the next and hashing its leaves. The writer
// records it when the tree has at most maxRecordedLeaves bundle leaves: it
// patches the leaf set of the first parent's tree (held since it wrote
// that commit or computed its hash, else read whole, giving up past the
// bound) with the commit's change, reading only the nodes the commit
// changed; what is left is keccak over 32 bytes a leaf, a few microseconds
// for a hundred keys. Trees over the bound are remembered, so a writer of
// a large brain does not read its parent's tree each commit to find out.
// Other commits get a record without one, and readers compute theirs as
// before.

// maxRecordedLeaves bounds the trees whose bundle hash a writer records:
// keccak over 8 KiB and a copy of the leaf set, a few percent of what a
// commit costs (a bound of 1024 made a one-key commit at 1000 keys 2-3x
// slower: workload 6).
const maxRecordedLeaves = 256

// recordedBundle returns the bundle hash to record with a commit of tree
// whose parents are parents, or nil when the writer does not have it at a
// bounded cost (see above). blocks are the commit's new blocks, not yet
// stored. Failing to have it is never an error: the record goes without.
func (r *Repo) recordedBundle(ctx context.Context, tree objects.CID, parents []objects.CID, blocks []objects.Block) *objects.BundleHash {
	if s := r.leafCache.get(tree); s != nil {
		if len(s.keys) > maxRecordedLeaves {
			return nil
		}
		h := s.hash()
		return &h
	}
	bs := overlayBlocks(r.Blocks, blocks)
	var s *leafSet
	if len(parents) == 0 {
		s, _ = wholeLeaves(ctx, bs, tree, maxRecordedLeaves)
	} else {
		pc, err := r.Commit(ctx, parents[0])
		if err != nil {
			return nil
		}
		base, ok := r.boundedSet(ctx, pc.Tree)
		if !ok {
			// A one-key change leaves a tree over the bound over it: the
			// next commit need not read its parent's tree to find out.
			r.leafCache.markOver(tree)
			return nil
		}
		if s, ok, err = patchLeavesIn(ctx, bs, base, pc.Tree, tree, maxRecordedLeaves); err != nil || !ok {
			return nil
		}
	}
	if s == nil || len(s.keys) > maxRecordedLeaves {
		r.leafCache.markOver(tree)
		return nil
	}
	r.leafCache.put(tree, s)
	h := s.hash()
	return &h
}

// boundedSet returns tree's leaf set when it has at most
// maxRecordedLeaves leaves: held, or read whole (at most that many leaves
// and the nodes that hold them; a tree known to be over it is not read).
func (r *Repo) boundedSet(ctx context.Context, tree objects.CID) (*leafSet, bool) {
	if s := r.leafCache.get(tree); s != nil {
		return s, len(s.keys) <= maxRecordedLeaves
	}
	if r.leafCache.over(tree) {
		return nil, false
	}
	s, err := wholeLeaves(ctx, r.Blocks, tree, maxRecordedLeaves)
	if err != nil {
		if errors.Is(err, errTooManyLeaves) {
			r.leafCache.markOver(tree)
		}
		return nil, false
	}
	r.leafCache.put(tree, s)
	return s, true
}

// errTooManyLeaves: wholeLeaves gave up at its bound.
var errTooManyLeaves = errors.New("repo: more bundle leaves than asked for")

// wholeLeaves reads tree's leaf set from bs, giving up with
// errTooManyLeaves past max leaves (max < 0: no bound).
func wholeLeaves(ctx context.Context, bs objects.BlockStore, tree objects.CID, max int) (*leafSet, error) {
	t, err := objects.LoadTree(ctx, bs, tree)
	if err != nil {
		return nil, err
	}
	s := &leafSet{}
	for e, err := range t.Entries(ctx, "") {
		if err != nil {
			return nil, err
		}
		if objects.ExcludedFromBundle(e.Key) {
			continue
		}
		if max >= 0 && len(s.keys) >= max {
			return nil, errTooManyLeaves
		}
		leaf, err := leafOf(ctx, bs, e.Key, e.Value)
		if err != nil {
			return nil, err
		}
		s.keys, s.leaves = append(s.keys, e.Key), append(s.leaves, leaf)
	}
	return s, nil
}

// blockOverlay reads a commit's new blocks, not yet stored, before the
// store (and shares the store's cache of decoded tree nodes).
type blockOverlay struct {
	objects.BlockStore
	blocks map[objects.CID][]byte
}

func overlayBlocks(bs objects.BlockStore, blocks []objects.Block) objects.BlockStore {
	if len(blocks) == 0 {
		return bs
	}
	m := make(map[objects.CID][]byte, len(blocks))
	for _, b := range blocks {
		m[b.CID] = b.Data
	}
	return &blockOverlay{BlockStore: bs, blocks: m}
}

func (o *blockOverlay) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	if d, ok := o.blocks[c]; ok {
		return d, nil
	}
	return o.BlockStore.Get(ctx, c)
}

func (o *blockOverlay) Has(ctx context.Context, c objects.CID) (bool, error) {
	if _, ok := o.blocks[c]; ok {
		return true, nil
	}
	return o.BlockStore.Has(ctx, c)
}

func (o *blockOverlay) Put(context.Context, ...objects.Block) error {
	return errors.New("repo: the overlay of a commit's blocks is read-only")
}

// Nodes shares the store's cache of decoded tree nodes.
func (o *blockOverlay) Nodes() *objects.NodeCache {
	if nc, ok := o.BlockStore.(objects.NodeCacher); ok {
		return nc.Nodes()
	}
	return nil
}

// recordBundle is a record's bundle hash, for verify.
type recordBundle struct {
	seq    uint64
	tree   objects.CID
	bundle objects.BundleHash
}

// verifyGraphBundles checks each recorded bundle hash against the one
// computed from its tree's leaves read from bs (never from a cache of
// hashes), newest record first, each tree's leaf set patched from the one
// before when the diff is small. A tree that cannot be read is reported by
// the block checks.
func verifyGraphBundles(ctx context.Context, bs objects.BlockStore, recs []recordBundle, problem func(string, ...any)) error {
	slices.SortFunc(recs, func(a, b recordBundle) int { return cmp.Compare(b.seq, a.seq) })
	var prev *leafSet
	var prevTree objects.CID
	for _, rb := range recs {
		if err := ctx.Err(); err != nil {
			return err
		}
		var s *leafSet
		if prev != nil {
			if ps, ok, err := patchLeavesIn(ctx, bs, prev, prevTree, rb.tree, len(prev.keys)/4+16); err == nil && ok {
				s = ps
			}
		}
		if s == nil {
			var err error
			if s, err = wholeLeaves(ctx, bs, rb.tree, -1); err != nil {
				if !errors.Is(err, objects.ErrNotFound) {
					problem("record %d: bundle hash of tree %s: %v", rb.seq, rb.tree.Short(), err)
				}
				prev = nil
				continue
			}
		}
		if s.hash() != rb.bundle {
			problem("record %d: bundle hash %s is not its tree's (%s)", rb.seq, rb.bundle, s.hash())
		}
		prev, prevTree = s, rb.tree
	}
	return nil
}
