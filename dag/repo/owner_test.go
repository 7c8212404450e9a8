package repo_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

// owners runs a test against the repository over each storage.
func owners(t *testing.T, fn func(t *testing.T, r *repo.Repo)) {
	t.Run("badger", func(t *testing.T) {
		r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		fn(t, r)
	})
	t.Run("memory", func(t *testing.T) { fn(t, repo.New(memory.New())) })
}

func put(t *testing.T, r *repo.Repo, agent, key, val string) (objects.CID, error) {
	t.Helper()
	v := objects.NewValue([]byte(val))
	return r.Edit(context.Background(), repo.EditRequest{Agent: agent, Message: "put " + key, Create: true, Blocks: []objects.Block{v},
		Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, key, v.CID) }})
}

func mustPut(t *testing.T, r *repo.Repo, agent, key, val string) objects.CID {
	t.Helper()
	c, err := put(t, r, agent, key, val)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func headOf(t *testing.T, r *repo.Repo, agent string) objects.CID {
	t.Helper()
	h, err := r.Refs.Head(context.Background(), agent)
	if err != nil {
		t.Fatal(err)
	}
	return h.Commit
}

func ops(t *testing.T, r *repo.Repo, agent string) []refs.Op {
	t.Helper()
	es, err := r.Refs.Entries(context.Background(), agent)
	if err != nil {
		t.Fatal(err)
	}
	var out []refs.Op
	for _, e := range es {
		out = append(out, e.Op)
	}
	return out
}

func TestOwnerEditResetUndoRedo(t *testing.T) {
	owners(t, func(t *testing.T, r *repo.Repo) {
		ctx := context.Background()
		c1 := mustPut(t, r, "a", "k", "1")
		c2 := mustPut(t, r, "a", "k", "2")
		// The same value again: no commit, HEAD's CID back.
		if c, err := put(t, r, "a", "k", "2"); !errors.Is(err, repo.ErrNoChange) || c != c2 {
			t.Fatalf("unchanged put = %s, %v; want ErrNoChange at %s", c, err, c2)
		}
		// Editing an agent that does not exist without Create.
		_, err := r.Edit(ctx, repo.EditRequest{Agent: "ghost", Edit: func(context.Context, *objects.Tree) (bool, error) { return true, nil }})
		if !errors.Is(err, refs.ErrNoAgent) {
			t.Fatalf("edit of a missing agent: %v", err)
		}
		if _, err := r.Reset(ctx, "a", c2); !errors.Is(err, repo.ErrNoChange) {
			t.Fatalf("reset to HEAD: %v", err)
		}
		if _, err := r.Reset(ctx, "a", c1); err != nil {
			t.Fatal(err)
		}
		u, err := r.Undo(ctx, "a") // undoes the reset
		if err != nil || u.Target.Op != refs.OpReset || headOf(t, r, "a") != c2 {
			t.Fatalf("undo = %+v, %v; HEAD %s, want %s", u, err, headOf(t, r, "a"), c2)
		}
		if _, err := r.Redo(ctx, "a"); err != nil || headOf(t, r, "a") != c1 {
			t.Fatalf("redo: %v; HEAD %s, want %s", err, headOf(t, r, "a"), c1)
		}
		if _, err := r.Redo(ctx, "a"); !errors.Is(err, refs.ErrNothingRedo) {
			t.Fatalf("second redo: %v", err)
		}
		want := []refs.Op{refs.OpCommit, refs.OpCommit, refs.OpReset, refs.OpUndo, refs.OpRedo}
		if got := ops(t, r, "a"); !slices.Equal(got, want) {
			t.Fatalf("operation log %v, want %v", got, want)
		}
		if p := r.Refs.Verify(ctx, "a"); len(p) != 0 {
			t.Fatal(p)
		}
	})
}

func TestOwnerTimeNeverGoesBack(t *testing.T) {
	owners(t, func(t *testing.T, r *repo.Repo) {
		ctx := context.Background()
		r.Now = func() int64 { return 2000 }
		c1 := mustPut(t, r, "a", "k", "1")
		r.Now = func() int64 { return 1000 } // the clock went back
		c2 := mustPut(t, r, "a", "k", "2")
		p, _ := r.Commit(ctx, c1)
		c, _ := r.Commit(ctx, c2)
		if c.Time != p.Time || c.Time != 2000 {
			t.Fatalf("child time %d, parent %d: want the parent's 2000", c.Time, p.Time)
		}
	})
}

func TestOwnerFork(t *testing.T) {
	owners(t, func(t *testing.T, r *repo.Repo) {
		ctx := context.Background()
		c1 := mustPut(t, r, "a", "k", "1")
		if _, err := r.Fork(ctx, "a", c1, "b"); err != nil {
			t.Fatal(err)
		}
		if headOf(t, r, "b") != c1 {
			t.Fatal("fork is not at the commit it was made from")
		}
		if _, err := r.Fork(ctx, "a", c1, "b"); !errors.Is(err, refs.ErrAgentExists) {
			t.Fatalf("fork onto an existing agent: %v", err)
		}
		if _, err := r.Fork(ctx, "a", objects.Sum(objects.CodecDagCBOR, []byte("nothing")), "c"); err == nil {
			t.Fatal("fork from a commit not in the store succeeded")
		}
		if ok, _ := r.Refs.Exists(ctx, "c"); ok {
			t.Fatal("a failed fork created the agent")
		}
	})
}

// A writer that started at base lands after HEAD moved: disjoint keys merge,
// the same key changed differently conflicts and HEAD stays.
func TestOwnerLandMergesOrConflicts(t *testing.T) {
	owners(t, func(t *testing.T, r *repo.Repo) {
		ctx := context.Background()
		base := mustPut(t, r, "a", "shared", "0")
		baseTree := mustCommit(t, r, base).Tree
		writer := func(key, val string) (objects.CID, objects.CID) {
			tr, err := objects.LoadTree(ctx, r.Blocks, baseTree)
			if err != nil {
				t.Fatal(err)
			}
			v := objects.NewValue([]byte(val))
			tr.Put(ctx, key, v.CID)
			root, nodes := tr.Flush()
			c, _, err := r.WriteCommit(ctx, repo.CommitSpec{Tree: root, Parents: []objects.CID{base}, Blocks: append(nodes, v)})
			if err != nil {
				t.Fatal(err)
			}
			return c, root
		}
		mine, mineTree := writer("mine", "x")
		mustPut(t, r, "a", "theirs", "y") // HEAD moves meanwhile
		l, err := r.Land(ctx, repo.LandRequest{Agent: "a", Start: base, StartTree: baseTree, Last: mine, LastTree: mineTree, MergeMessage: "merge"})
		if err != nil || !l.Merged {
			t.Fatalf("Land = %+v, %v; want a merge", l, err)
		}
		m := mustCommit(t, r, l.Commit)
		if len(m.Parents) != 2 || m.Parents[1] != mine || headOf(t, r, "a") != l.Commit {
			t.Fatalf("merge commit parents %v, HEAD %s", m.Parents, headOf(t, r, "a"))
		}
		keys := treeKeys(t, r, m.Tree)
		if !slices.Equal(keys, []string{"mine", "shared", "theirs"}) {
			t.Fatalf("merged keys %v", keys)
		}

		// Conflict: both sides change "shared" differently.
		before := headOf(t, r, "a")
		clash, clashTree := writer("shared", "mine")
		mustPut(t, r, "a", "shared", "theirs")
		head := headOf(t, r, "a")
		l, err = r.Land(ctx, repo.LandRequest{Agent: "a", Start: base, StartTree: baseTree, Last: clash, LastTree: clashTree})
		var mc *repo.MergeConflictError
		if !errors.As(err, &mc) || !slices.Equal(mc.Keys, []string{"shared"}) || l.From != head {
			t.Fatalf("Land over a conflicting HEAD = %+v, %v", l, err)
		}
		if headOf(t, r, "a") != head || head == before {
			t.Fatal("a conflicting landing moved HEAD")
		}
	})
}

// Concurrent landings from the same start all land, each merging over the
// ones before it.
func TestOwnerConcurrentLandings(t *testing.T) {
	owners(t, func(t *testing.T, r *repo.Repo) {
		ctx := context.Background()
		base := mustPut(t, r, "a", "seed", "0")
		baseTree := mustCommit(t, r, base).Tree
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tr, err := objects.LoadTree(ctx, r.Blocks, baseTree)
				if err != nil {
					errs <- err
					return
				}
				v := objects.NewValue([]byte{byte(i)})
				tr.Put(ctx, string(rune('a'+i)), v.CID)
				root, nodes := tr.Flush()
				c, _, err := r.WriteCommit(ctx, repo.CommitSpec{Tree: root, Parents: []objects.CID{base}, Blocks: append(nodes, v)})
				if err == nil {
					_, err = r.Land(ctx, repo.LandRequest{Agent: "a", Start: base, StartTree: baseTree, Last: c, LastTree: root})
				}
				errs <- err
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		keys := treeKeys(t, r, mustCommit(t, r, headOf(t, r, "a")).Tree)
		if len(keys) != 9 {
			t.Fatalf("HEAD holds %v, want seed and 8 task keys", keys)
		}
		if p := r.Refs.Verify(ctx, "a"); len(p) != 0 {
			t.Fatal(p)
		}
	})
}

func mustCommit(t *testing.T, r *repo.Repo, c objects.CID) *objects.Commit {
	t.Helper()
	cm, err := r.Commit(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

func treeKeys(t *testing.T, r *repo.Repo, root objects.CID) []string {
	t.Helper()
	tr, err := objects.LoadTree(context.Background(), r.Blocks, root)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for e, err := range tr.Entries(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Key)
	}
	return out
}

// A landing given a time records that time in its operation-log entry, a
// plain move and a merge alike (a writer that signs what follows the
// landing while it is written names the time first); without one, Now.
func TestOwnerLandAtGivenTime(t *testing.T) {
	owners(t, func(t *testing.T, r *repo.Repo) {
		ctx := context.Background()
		base := mustPut(t, r, "a", "shared", "0")
		baseTree := mustCommit(t, r, base).Tree
		writer := func(key, val string) (objects.CID, objects.CID) {
			tr, err := objects.LoadTree(ctx, r.Blocks, baseTree)
			if err != nil {
				t.Fatal(err)
			}
			v := objects.NewValue([]byte(val))
			tr.Put(ctx, key, v.CID)
			root, nodes := tr.Flush()
			c, _, err := r.WriteCommit(ctx, repo.CommitSpec{Tree: root, Parents: []objects.CID{base}, Blocks: append(nodes, v)})
			if err != nil {
				t.Fatal(err)
			}
			return c, root
		}
		const given = 1_700_000_123
		mine, mineTree := writer("mine", "x")
		l, err := r.Land(ctx, repo.LandRequest{Agent: "a", Start: base, StartTree: baseTree, Last: mine, LastTree: mineTree, Time: given})
		if err != nil || l.Merged || l.Entry.Time != given {
			t.Fatalf("plain landing at a given time = %+v, %v", l, err)
		}
		other, otherTree := writer("other", "y")
		l, err = r.Land(ctx, repo.LandRequest{Agent: "a", Start: base, StartTree: baseTree, Last: other, LastTree: otherTree, Time: given + 1, MergeMessage: "merge"})
		if err != nil || !l.Merged || l.Entry.Time != given+1 {
			t.Fatalf("merged landing at a given time = %+v, %v", l, err)
		}
		third, thirdTree := writer("third", "z")
		l, err = r.Land(ctx, repo.LandRequest{Agent: "a", Start: base, StartTree: baseTree, Last: third, LastTree: thirdTree, MergeMessage: "merge"})
		if err != nil || l.Entry.Time != r.Now() && l.Entry.Time+1 != r.Now() {
			t.Fatalf("landing without a time = %+v (now %d), %v", l, r.Now(), err)
		}
		var times []int64
		for e, err := range r.Refs.Log(ctx, "a") {
			if err != nil {
				t.Fatal(err)
			}
			times = append(times, e.Time)
		}
		if len(times) < 3 || times[len(times)-3] != given || times[len(times)-2] != given+1 {
			t.Fatalf("operation log times %v", times)
		}
	})
}
