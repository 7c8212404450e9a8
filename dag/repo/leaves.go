package repo

import (
	"context"
	"encoding"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/crypto/sha3"

	"github.com/agentstate/agentstate/objects"
)

// A leafSet is a tree's bundle-hash leaves in key order (derived files left
// out): keccak256(path || 0x00 || sha256(content)) per key. Keeping the sets
// of recent trees in memory lets the bundle hash of a tree that differs from
// one of them in a few keys be computed from the diff alone, without reading
// the rest of the tree: what a runtime landing task after task needs.
type leafSet struct {
	keys   []string
	leaves [][32]byte

	// base, when the set was patched from another, is that set, whose
	// first same leaves this one shares: its hash resumes from base's
	// keccak states instead of from the first leaf (dropped once hashed).
	base *leafSet
	same int

	sumOnce sync.Once
	hashed  atomic.Bool // sum, states and every are set
	// recorded: BundleHash has written the set's hash as the tree's
	// metadata record (once per set, not once per call).
	recorded atomic.Bool
	sum      objects.BundleHash
	// states[j] is the keccak sponge after the first (j+1)*every leaves, as
	// the hash's AppendBinary encodes it (kept while the set is).
	states [][]byte
	every  int
}

// leafCacheSize bounds the sets kept; maxCachedLeaves bounds one set's size.
const (
	leafCacheSize   = 8
	maxCachedLeaves = 1 << 18
)

type leafCache struct {
	mu   sync.Mutex
	sets map[objects.CID]*leafSet
	lru  []objects.CID // oldest first
	// big holds trees found to have more leaves than a writer records the
	// bundle hash of (graphbundle.go), up to maxOver.
	big map[objects.CID]bool
}

const maxOver = 1 << 12

func (c *leafCache) over(tree objects.CID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.big[tree]
}

func (c *leafCache) markOver(tree objects.CID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.big == nil || len(c.big) >= maxOver {
		c.big = map[objects.CID]bool{}
	}
	c.big[tree] = true
}

func (c *leafCache) get(tree objects.CID) *leafSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sets[tree]
}

// recent returns the cached sets, newest first.
func (c *leafCache) recent() []objects.CID {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]objects.CID, 0, len(c.lru))
	for i := len(c.lru) - 1; i >= 0; i-- {
		out = append(out, c.lru[i])
	}
	return out
}

func (c *leafCache) drop(tree objects.CID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.sets[tree]; !ok {
		return
	}
	delete(c.sets, tree)
	c.lru = slices.DeleteFunc(c.lru, func(id objects.CID) bool { return id == tree })
}

func (c *leafCache) put(tree objects.CID, s *leafSet) {
	if len(s.keys) > maxCachedLeaves {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sets == nil {
		c.sets = map[objects.CID]*leafSet{}
	}
	if _, ok := c.sets[tree]; ok {
		return
	}
	c.sets[tree] = s
	c.lru = append(c.lru, tree)
	if len(c.lru) > leafCacheSize {
		delete(c.sets, c.lru[0])
		c.lru = c.lru[1:]
	}
}

func leafOf(ctx context.Context, bs objects.BlockStore, key string, v objects.CID) ([32]byte, error) {
	sum, err := objects.ContentSHA256(ctx, bs, v)
	if err != nil {
		return [32]byte{}, err
	}
	return objects.BundleLeaf(key, sum), nil
}

// hash is the set's bundle hash (objects.HashLeaves of its leaves),
// computed once. A set patched from another resumes keccak from the last
// state its base kept before the first leaf that differs: a task that
// changes a key halfway down a brain's keys hashes half of the leaves, not
// all of them.
func (s *leafSet) hash() objects.BundleHash {
	s.sumOnce.Do(func() {
		s.sum, s.states, s.every = resumeLeaves(s.leaves, s.base, s.same)
		s.base = nil
		s.hashed.Store(true)
	})
	return s.sum
}

// leavesPerState is the least count of leaves between two kept keccak
// states: 17 leaves are 544 bytes, four whole blocks of keccak256's 136-byte
// rate, so a kept state has nothing buffered. A set keeps at most
// maxStates states (the gap doubles past that): about 60 KiB at most.
const (
	leavesPerState = 17
	maxStates      = 256
)

func stateGap(n int) int {
	every := leavesPerState
	for n/every > maxStates {
		every *= 2
	}
	return every
}

// resumeLeaves returns keccak256 over leaves, which share their first same
// leaves with base's (base may be nil), resuming from base's kept states,
// and the states to keep for the sets patched from this one. A base not
// hashed yet is not waited for (nor hashed): every leaf is hashed.
func resumeLeaves(leaves [][32]byte, base *leafSet, same int) (objects.BundleHash, [][]byte, int) {
	every := stateGap(len(leaves))
	k := sha3.NewLegacyKeccak256()
	save, ok1 := k.(encoding.BinaryAppender)
	load, ok2 := k.(encoding.BinaryUnmarshaler)
	if !ok1 || !ok2 { // not expected of x/crypto's keccak: hash every leaf
		return objects.HashLeaves(leaves), nil, every
	}
	states := make([][]byte, 0, len(leaves)/every)
	start := 0
	if base != nil && base.hashed.Load() {
		if base.every == every {
			n := min(same/every, len(base.states))
			if n > 0 && load.UnmarshalBinary(base.states[n-1]) == nil {
				states, start = append(states, base.states[:n]...), n*every // kept states are never written
			}
		}
	}
	for i := start; i < len(leaves); i++ {
		k.Write(leaves[i][:])
		if (i+1)%every == 0 && states != nil {
			st, err := save.AppendBinary(nil)
			if err != nil {
				states = nil // keep none rather than misplaced ones
				continue
			}
			states = append(states, st)
		}
	}
	var h objects.BundleHash
	copy(h[:], k.Sum(nil))
	return h, states, every
}

// leaves returns the leaf set of tree: from the cache, by patching a cached
// set with the diff to tree when that diff is small, or by walking tree.
func (r *Repo) leaves(ctx context.Context, tree objects.CID) (*leafSet, error) {
	if s, ok := r.patchedLeaves(ctx, tree); ok {
		return s, nil
	}
	s, err := wholeLeaves(ctx, r.Blocks, tree, -1)
	if err != nil {
		return nil, err
	}
	r.leafCache.put(tree, s)
	return s, nil
}

// patchedLeaves returns the leaf set of tree from the cache, or by patching
// a cached set with the diff to tree when that diff is small (ok == false:
// neither).
func (r *Repo) patchedLeaves(ctx context.Context, tree objects.CID) (*leafSet, bool) {
	if s := r.leafCache.get(tree); s != nil {
		return s, true
	}
	for _, base := range r.leafCache.recent() {
		bs := r.leafCache.get(base)
		if bs == nil {
			continue
		}
		s, ok, err := patchLeavesIn(ctx, r.Blocks, bs, base, tree, len(bs.keys)/4+16)
		if err != nil {
			// The patch is a shortcut: a base tree collected since its set
			// was cached (a forget or gc deleted it) is dropped and the next
			// tried; the caller's walk answers whatever else went wrong.
			if errors.Is(err, objects.ErrNotFound) {
				r.leafCache.drop(base)
				continue
			}
			break
		}
		if ok {
			r.leafCache.put(tree, s)
			return s, true
		}
	}
	return nil, false
}

// patchLeavesIn applies the diff from base to tree, read from bs, to
// base's leaf set. It gives up (ok == false) when the diff has more than
// limit changes.
func patchLeavesIn(ctx context.Context, bs objects.BlockStore, base *leafSet, baseTree, tree objects.CID, limit int) (*leafSet, bool, error) {
	var changes []objects.Change
	for ch, err := range objects.DiffTrees(ctx, bs, baseTree, tree) {
		if err != nil {
			return nil, false, err
		}
		if objects.ExcludedFromBundle(ch.Path) {
			continue
		}
		changes = append(changes, ch)
		if len(changes) > limit {
			return nil, false, nil
		}
	}
	out := &leafSet{keys: make([]string, 0, len(base.keys)+len(changes)), leaves: make([][32]byte, 0, len(base.keys)+len(changes)), base: base, same: len(base.keys)}
	i := 0
	for n, ch := range changes {
		for i < len(base.keys) && strings.Compare(base.keys[i], ch.Path) < 0 {
			out.keys, out.leaves = append(out.keys, base.keys[i]), append(out.leaves, base.leaves[i])
			i++
		}
		if n == 0 {
			out.same = i // the leaves before the first change are base's
		}
		if i < len(base.keys) && base.keys[i] == ch.Path {
			i++ // modified or removed: drop the old leaf
		}
		if ch.Change != objects.Removed {
			leaf, err := leafOf(ctx, bs, ch.Path, ch.New)
			if err != nil {
				return nil, false, err
			}
			out.keys, out.leaves = append(out.keys, ch.Path), append(out.leaves, leaf)
		}
	}
	out.keys, out.leaves = append(out.keys, base.keys[i:]...), append(out.leaves, base.leaves[i:]...)
	return out, true, nil
}
