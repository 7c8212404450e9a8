package repo

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

// A leaf set patched from another resumes keccak from the base's kept
// states: its hash is always objects.HashLeaves of its leaves, and the
// states before the first changed leaf are the base's own (not hashed
// again), across sizes around the gap between states, changes at the
// first, a middle and the last leaf, inserts and removals, and a base not
// yet hashed (which is not used).
func TestLeafSetResumesFromBaseStates(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 24))
	leaf := func() (l [32]byte) {
		for i := range l {
			l[i] = byte(rng.IntN(256))
		}
		return l
	}
	for _, n := range []int{0, 1, 16, 17, 18, 33, 34, 35, 500, 1000, 17*maxStates + 1, 17*maxStates*2 + 5} {
		base := &leafSet{}
		for range n {
			base.leaves = append(base.leaves, leaf())
		}
		if got, want := base.hash(), objects.HashLeaves(base.leaves); got != want {
			t.Fatalf("%d leaves: hash %x, want %x", n, got, want)
		}
		if len(base.states) != n/stateGap(n) || len(base.states) > maxStates {
			t.Fatalf("%d leaves: %d states kept (gap %d)", n, len(base.states), base.every)
		}
		for _, at := range []int{0, n / 2, n - 1, n, rng.IntN(n + 1)} {
			for _, op := range []string{"modify", "insert", "remove"} {
				if at < 0 || (op != "insert" && at >= n) {
					continue
				}
				next := slices.Clone(base.leaves)
				switch op {
				case "modify":
					next[at] = leaf()
				case "insert":
					next = slices.Insert(next, at, leaf())
				case "remove":
					next = slices.Delete(next, at, at+1)
				}
				s := &leafSet{leaves: next, base: base, same: at}
				name := fmt.Sprintf("%d leaves, %s at %d", n, op, at)
				if got, want := s.hash(), objects.HashLeaves(next); got != want {
					t.Fatalf("%s: hash %x, want %x", name, got, want)
				}
				if s.base != nil {
					t.Fatalf("%s: the base is still held after hashing", name)
				}
				reused := 0
				if s.every == base.every {
					reused = min(at/s.every, len(base.states))
				}
				for j := range reused {
					if &s.states[j][0] != &base.states[j][0] {
						t.Fatalf("%s: state %d was computed again, not resumed from the base's", name, j)
					}
				}
				if n >= 1000 && op == "modify" && at == n-1 && reused < len(base.states)-1 {
					t.Fatalf("%s: only %d of %d states resumed", name, reused, len(base.states))
				}
			}
		}
		// A base not yet hashed is not used (nor hashed by its patch).
		fresh := &leafSet{leaves: slices.Clone(base.leaves)}
		s := &leafSet{leaves: slices.Clone(base.leaves), base: fresh, same: n}
		if s.hash() != objects.HashLeaves(base.leaves) || fresh.hashed.Load() {
			t.Fatalf("%d leaves: patched from an unhashed base: hash wrong or base hashed", n)
		}
	}
}
