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

// metaCounting counts the metadata records read.
type metaCounting struct {
	repo.Storage
	gets int
}

func (m *metaCounting) GetMeta(ctx context.Context, name string) ([]byte, bool, error) {
	m.gets++
	return m.Storage.GetMeta(ctx, name)
}

// The bundle hash of a tree a few keys from one whose leaf set is held (a
// writer's next tree) is patched from that set without looking up the
// tree's metadata record, which a new tree has not, and the record is
// written once: a reader without the set in memory (another process)
// finds it.
func TestBundleHashOfNextTreeReadsNoRecord(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tr := objects.NewTree(r.Blocks)
	for i := range 600 {
		v := objects.NewValue(fmt.Appendf(nil, "seed %d", i))
		if err := r.Blocks.Put(ctx, v); err != nil {
			t.Fatal(err)
		}
		tr.Put(ctx, fmt.Sprintf("notes/%d.md", i), v.CID)
	}
	root, err := tr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.BundleHash(ctx, root); err != nil {
		t.Fatal(err)
	}
	mc := &metaCounting{Storage: r.Storage}
	r.Storage = mc
	for i := range 20 {
		v := objects.NewValue(fmt.Appendf(nil, "task %d", i))
		if err := r.Blocks.Put(ctx, v); err != nil {
			t.Fatal(err)
		}
		tr.Put(ctx, fmt.Sprintf("notes/%d.md", i*29%600), v.CID)
		if root, err = tr.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		h, err := r.BundleHash(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		if want, err := objects.TreeBundleHash(ctx, r.Blocks, root); err != nil || h != want {
			t.Fatalf("task %d: bundle hash %s, want %s (%v)", i, h, want, err)
		}
		again, _ := r.BundleHash(ctx, root)
		rec, ok, err := mc.Storage.GetMeta(ctx, "bundle/"+string(root.Bytes()))
		if again != h || err != nil || !ok || string(rec) != string(h[:]) {
			t.Fatalf("task %d: the tree's record is %x, %v, %v; want %s", i, rec, ok, err, h)
		}
	}
	if mc.gets != 0 {
		t.Fatalf("20 next trees' bundle hashes looked up %d metadata records", mc.gets)
	}
}
