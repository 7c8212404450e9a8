package repo_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

func tree(t *testing.T, r *repo.Repo, kv ...string) objects.CID {
	t.Helper()
	ctx := context.Background()
	tr := objects.NewTree(r.Blocks)
	for i := 0; i < len(kv); i += 2 {
		v := objects.NewValue([]byte(kv[i+1]))
		r.Blocks.Put(ctx, v)
		if _, err := tr.Put(ctx, kv[i], v.CID); err != nil {
			t.Fatal(err)
		}
	}
	root, err := tr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestCommitTreeCASAndNoChange(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000")
	c1, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: tree(t, r, "k", "1"), Message: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: tree(t, r, "k", "1")}); !errors.Is(err, repo.ErrNoChange) {
		t.Fatalf("same tree: %v", err)
	}
	c2, e, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: tree(t, r, "k", "2"), Parent: c1, Task: "t-9"})
	if err != nil || e.Task != "t-9" || e.Old != c1 || e.New != c2 {
		t.Fatalf("commit 2: %+v %v", e, err)
	}
	// A writer that started from c1 finds HEAD moved.
	if _, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: tree(t, r, "k", "3"), Parent: c1}); !errors.Is(err, refs.ErrConflict) {
		t.Fatalf("stale parent: %v", err)
	}
	cm, _ := r.Commit(ctx, c2)
	if cm.Time != 1700000000 || len(cm.Parents) != 1 || cm.Parents[0] != c1 {
		t.Fatalf("commit 2 = %+v", cm)
	}
}

func TestGCKeepsReachableDeletesGarbage(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c1, _, _ := r.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: tree(t, r, "k", "kept-by-oplog")})
	r.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: tree(t, r, "k", "head")})
	// Reset back: the second commit is still reachable through the operation log.
	h, _ := r.Refs.Head(ctx, "a")
	r.Refs.Move(ctx, refs.Move{Agent: "a", Old: h.Commit, New: c1, Op: refs.OpReset})
	// Garbage: a failed task's value and tree.
	garbage := tree(t, r, "k", "failed task")
	rep, err := r.GC(ctx, true)
	if err != nil || rep.Deleted != 2 {
		t.Fatalf("dry run: %+v %v", rep, err)
	}
	if ok, _ := r.Blocks.Has(ctx, garbage); !ok {
		t.Fatal("dry run deleted")
	}
	rep, err = r.GC(ctx, false)
	if err != nil || rep.Deleted != 2 || rep.BytesFreed == 0 {
		t.Fatalf("gc: %+v %v", rep, err)
	}
	if ok, _ := r.Blocks.Has(ctx, garbage); ok {
		t.Fatal("garbage tree survived gc")
	}
	vr, err := r.Verify(ctx)
	if err != nil || len(vr.Problems) != 0 || vr.Commits != 2 {
		t.Fatalf("verify after gc: %+v %v", vr, err)
	}
	if ok, _ := r.Blocks.Has(ctx, objects.NewValue([]byte("head")).CID); !ok {
		t.Fatal("gc deleted a value reachable only through the operation log")
	}
}

func TestFindWalksUp(t *testing.T) {
	root := t.TempDir()
	r, err := repo.Init(filepath.Join(root, repo.DirName), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	deep := filepath.Join(root, "a", "b", "c")
	os.MkdirAll(deep, 0o755)
	got, err := repo.Find("", deep)
	if err != nil || got != filepath.Join(root, repo.DirName) {
		t.Fatalf("Find = %q, %v", got, err)
	}
	if got, _ := repo.Find("/explicit", deep); got != "/explicit" {
		t.Fatalf("explicit store ignored: %q", got)
	}
	if _, err := repo.Find("", t.TempDir()); !errors.Is(err, repo.ErrNoStore) {
		t.Fatalf("no store: %v", err)
	}
}
