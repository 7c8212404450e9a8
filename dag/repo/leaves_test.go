package repo_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// TestBundleHashIncremental: the bundle hash computed by patching cached leaf
// sets equals the one computed from scratch, across random edits, deletes,
// and jumps between unrelated trees.
func TestBundleHashIncremental(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rng := rand.New(rand.NewPCG(5, 5))
	tr := objects.NewTree(r.Blocks)
	var roots []objects.CID
	for step := 0; step < 300; step++ {
		n := 1 + rng.IntN(4)
		if step%50 == 0 {
			n = 200 // a big change: falls back to a full walk
		}
		for j := 0; j < n; j++ {
			k := fmt.Sprintf("skills/%d.md", rng.IntN(400))
			if rng.IntN(5) == 0 {
				if _, err := tr.Delete(ctx, k); err != nil {
					t.Fatal(err)
				}
				continue
			}
			v := objects.NewValue([]byte(fmt.Sprint(step, j)))
			r.Blocks.Put(ctx, v)
			if _, err := tr.Put(ctx, k, v.CID); err != nil {
				t.Fatal(err)
			}
		}
		root, err := tr.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		roots = append(roots, root)
		probe := root
		if step%7 == 0 {
			probe = roots[rng.IntN(len(roots))] // an older tree
		}
		got, err := r.BundleHash(ctx, probe)
		if err != nil {
			t.Fatal(err)
		}
		want, err := objects.TreeBundleHash(ctx, r.Blocks, probe)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("step %d: incremental bundle hash %s, from scratch %s", step, got, want)
		}
	}
}
