package repo

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
)

// Bundle hashes in the commit graph (docs/format.md, "Commit graph"): a
// record may hold the bundle hash of its commit's tree, so that a log that
// prints every commit's (log --json) reads it with the commit instead of
// diffing every tree against the next and hashing its leaves. The writer
// records it when it has it at a cost bounded by the tree's size: it holds
// the leaf set of the first parent's tree (it wrote that commit in this
// process, or computed its bundle hash), and the tree has at most
// maxRecordedLeaves bundle leaves. Patching that set with the diff to the
// new tree reads only the nodes the commit changed; what is left is keccak
// over 32 bytes a leaf, a few microseconds for a hundred keys. Other
// commits get a record without one, and readers compute theirs as before.

// maxRecordedLeaves bounds the trees whose bundle hash a writer records:
// keccak over 8 KiB and a copy of the leaf set, a few percent of what a
// commit costs (a bound of 1024 made a one-key commit at 1000 keys 2-3x
// slower: workload 6).
const maxRecordedLeaves = 256

// recordedBundle returns the bundle hash to record with a commit of tree
// whose parents are parents, or nil when the writer does not have it at a
// bounded cost (see above). blocks are the commit's new blocks, not yet
// stored; backfill says the commit is stored already (AddToGraph).
// Failing to have it is never an error: the record goes without.
func (r *Repo) recordedBundle(ctx context.Context, tree objects.CID, parents []objects.CID, blocks []objects.Block, backfill bool) *objects.BundleHash {
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
		// The first parent's leaves, patched with the commit's change. A
		// backfill or rebuild (blocks == nil), whose order leaves fewer
		// sets in hand, tries the others held too, each only as far as a
		// small diff: a writer's commit does not (diffing another agent's
		// tree until it gives up would cost it more than the hash).
		var first objects.CID
		if pc, err := r.Commit(ctx, parents[0]); err == nil {
			first = pc.Tree
		}
		bases := []objects.CID{first}
		if backfill {
			bases = r.leafCache.recent()
			if i := slices.Index(bases, first); i > 0 {
				bases = append(append([]objects.CID{first}, bases[:i]...), bases[i+1:]...)
			}
		}
		for _, base := range bases {
			bset := r.leafCache.get(base)
			if bset == nil || len(bset.keys) > maxRecordedLeaves {
				continue
			}
			limit := len(bset.keys)/4 + 16
			if base == first {
				limit = maxRecordedLeaves
			}
			ps, ok, err := patchLeavesIn(ctx, bs, bset, base, tree, limit)
			if err == nil && ok {
				s = ps
				break
			}
		}
	}
	if s == nil || len(s.keys) > maxRecordedLeaves {
		return nil
	}
	r.leafCache.put(tree, s)
	h := s.hash()
	return &h
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

// knownBundle returns tree's bundle hash when a commit-graph record this
// process read held it.
func (r *Repo) knownBundle(tree objects.CID) (objects.BundleHash, bool) {
	if cc, ok := r.Blocks.(*dag.CommitCache); ok {
		return cc.KnownBundle(tree)
	}
	return objects.BundleHash{}, false
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
