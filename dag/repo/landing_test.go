package repo_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/objectstest"
	"github.com/agentstate/agentstate/refs"
)

// countingStorage counts block reads.
type countingStorage struct {
	*memory.Storage
	gets atomic.Int64
}

func (s *countingStorage) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	s.gets.Add(1)
	return s.Storage.Get(ctx, c)
}

// CheckLanding reads what changed, not the whole tree: one key changed in
// a tree of 20,000 is checked with a few dozen reads.
func TestCheckLandingReadsWhatChanged(t *testing.T) {
	ctx := context.Background()
	s := &countingStorage{Storage: memory.New()}
	r := repo.New(s)
	vals := []objects.Block{}
	big, err := r.Edit(ctx, repo.EditRequest{Agent: "a", Create: true, Message: "many",
		Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) {
			for i := range 20000 {
				v := objects.NewValue(fmt.Appendf(nil, "v%d", i))
				vals = append(vals, v)
				if _, err := tr.Put(ctx, fmt.Sprintf("k/%05d", i), v.CID); err != nil {
					return false, err
				}
			}
			return true, nil
		}, Blocks: nil})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Blocks.Put(ctx, vals...); err != nil {
		t.Fatal(err)
	}
	one := mustPut(t, r, "a", "k/10000", "changed")
	s.gets.Store(0)
	if err := r.CheckLanding(ctx, "a", big, one); err != nil {
		t.Fatalf("a sound one-key change: %v", err)
	}
	n := s.gets.Load()
	s.gets.Store(0)
	if err := r.CheckLanding(ctx, "b", objects.CID{}, big); err != nil {
		t.Fatalf("the whole tree as a new agent's: %v", err)
	}
	whole := s.gets.Load()
	t.Logf("block reads: %d for one key changed, %d for the whole tree of 20000 keys", n, whole)
	if n*20 > whole {
		t.Errorf("one key changed took %d reads, the whole tree %d", n, whole)
	}
}

// A node of HEAD's tree linked where it does not fit (two subtrees
// swapped) is refused, though each was checked where it was.
func TestCheckLandingReusedNodeElsewhere(t *testing.T) {
	ctx := context.Background()
	r := repo.New(memory.New())
	v := objects.NewValue([]byte("v"))
	lo, mid, hi := objectstest.KeyAt("a", 0), objectstest.KeyAt("m", 1), objectstest.KeyAt("z", 0)
	leafLo := objectstest.TreeNode(objects.CID{}, objectstest.Entry{Key: lo, Value: v.CID})
	leafHi := objectstest.TreeNode(objects.CID{}, objectstest.Entry{Key: hi, Value: v.CID})
	root := objectstest.TreeNode(leafLo.CID, objectstest.Entry{Key: mid, Value: v.CID, Right: leafHi.CID})
	swapped := objectstest.TreeNode(leafHi.CID, objectstest.Entry{Key: mid, Value: v.CID, Right: leafLo.CID})
	good := objectstest.Commit(root.CID, "good")
	bad, err := (&objects.Commit{Tree: swapped.CID, Parents: []objects.CID{good.CID}, Time: 1_700_000_001, Message: "swapped"}).Block()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Blocks.Put(ctx, v, leafLo, leafHi, root, swapped, good, bad); err != nil {
		t.Fatal(err)
	}
	if err := r.CheckLanding(ctx, "a", objects.CID{}, good.CID); err != nil {
		t.Fatalf("a sound tree: %v", err)
	}
	if _, err := r.Refs.Move(ctx, refs.Move{Agent: "a", New: good.CID, Op: refs.OpCommit, Time: 1}); err != nil {
		t.Fatal(err)
	}
	err = r.CheckLanding(ctx, "a", good.CID, bad.CID)
	if !errors.Is(err, repo.ErrBadLanding) || !errors.Is(err, objects.ErrNonCanonical) {
		t.Fatalf("swapped subtrees: %v, want ErrBadLanding", err)
	}
	t.Log(err)
}

// A commit WriteCommit stored is read back from the commit cache, not the
// store (a task's record and the next task's start read it at once), and
// equals what was stored; changing the caller's commit afterwards does not
// change it.
func TestWrittenCommitIsReadWithoutTheStore(t *testing.T) {
	ctx := context.Background()
	s := &countingStorage{Storage: memory.New()}
	r := repo.New(s)
	tree, err := r.EmptyTree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{"task": "t1", "key": "k"}
	id, c, err := r.WriteCommit(ctx, repo.CommitSpec{Tree: tree, Message: "first", Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	id2, _, err := r.WriteCommit(ctx, repo.CommitSpec{Tree: tree, Message: "second", Parents: []objects.CID{id}, ParentTime: c.Time})
	if err != nil {
		t.Fatal(err)
	}
	meta["task"], c.Metadata["key"] = "changed", "changed"
	s.gets.Store(0)
	got, err := r.Commit(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(ctx, id2); err != nil {
		t.Fatal(err)
	}
	if n := s.gets.Load(); n != 0 {
		t.Fatalf("reading two commits just written read the store %d times, want 0", n)
	}
	data, err := s.Storage.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := objects.DecodeCommit(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Message != stored.Message || got.Time != stored.Time || got.Tree != stored.Tree ||
		fmt.Sprint(got.Metadata) != fmt.Sprint(stored.Metadata) || got.Metadata["task"] != "t1" || got.Metadata["key"] != "k" {
		t.Fatalf("cached commit %+v, stored %+v", got, stored)
	}
}
