package repo_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

func history(t *testing.T, r *repo.Repo, agent string) []objects.CID {
	t.Helper()
	var out []objects.CID
	for le, err := range dag.Log(context.Background(), r.Blocks, headOf(t, r, agent)) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, le.CID)
	}
	return out
}

func pull(t *testing.T, dst, src *repo.Repo, agent string, ffOnly bool) (repo.SyncStats, repo.Integration, error) {
	t.Helper()
	ctx := context.Background()
	h := headOf(t, src, agent)
	st, err := dst.Fetch(ctx, src, h)
	if err != nil {
		return st, repo.Integration{}, err
	}
	in, err := dst.Integrate(ctx, agent, h, ffOnly, refs.OpPull, "")
	return st, in, err
}

func TestCloneAndPull(t *testing.T) {
	ctx := context.Background()
	src, err := repo.Init(filepath.Join(t.TempDir(), "src"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := repo.New(memory.New())
	for i := range 30 {
		mustPut(t, src, "a", "k"+string(rune('a'+i%5)), string(rune('0'+i)))
	}
	st, in, err := pull(t, dst, src, "a", false)
	if err != nil || in.Outcome != "created" || st.Commits != 30 || st.Haves != 0 {
		t.Fatalf("clone: %+v %+v %v", st, in, err)
	}
	if !slices.Equal(history(t, dst, "a"), history(t, src, "a")) {
		t.Fatal("the cloned log differs")
	}
	// Nothing new: nothing moves.
	st, in, err = pull(t, dst, src, "a", true)
	if err != nil || in.Outcome != "up to date" || st.Blocks != 0 || st.Haves != 1 {
		t.Fatalf("pull with nothing new: %+v %+v %v", st, in, err)
	}
	// One new commit: only its blocks move (commit, a path of tree nodes,
	// the value).
	mustPut(t, src, "a", "new", "v")
	st, in, err = pull(t, dst, src, "a", true)
	if err != nil || in.Outcome != "fast-forward" || st.Commits != 1 || st.Blocks > 4 {
		t.Fatalf("pull of one commit: %+v %+v %v", st, in, err)
	}
	// Diverged on disjoint keys: merged as tasks merge.
	mustPut(t, src, "a", "theirs", "1")
	mustPut(t, dst, "a", "ours", "2")
	_, _, err = pull(t, dst, src, "a", true)
	if !errors.Is(err, repo.ErrNotFastForward) {
		t.Fatalf("--ff-only over diverged histories: %v", err)
	}
	_, in, err = pull(t, dst, src, "a", false)
	if err != nil || in.Outcome != "merged" {
		t.Fatalf("merge: %+v %v", in, err)
	}
	tr, _ := dst.Tree(ctx, headOf(t, dst, "a"))
	for _, k := range []string{"theirs", "ours", "new"} {
		if _, ok, _ := tr.Get(ctx, k); !ok {
			t.Fatalf("%s missing after the merge", k)
		}
	}
	// The same key changed on both sides: refused with the key, HEAD stays.
	mustPut(t, src, "a", "ka", "src")
	mustPut(t, dst, "a", "ka", "dst")
	before := headOf(t, dst, "a")
	_, _, err = pull(t, dst, src, "a", false)
	var mc *repo.MergeConflictError
	if !errors.As(err, &mc) || !slices.Contains(mc.Keys, "ka") || headOf(t, dst, "a") != before {
		t.Fatalf("conflicting pull: %v", err)
	}
}

// A sender that lacks a block its history names is refused, and the
// receiver's HEAD does not move.
func TestFetchFromALyingSender(t *testing.T) {
	ctx := context.Background()
	ms := memory.New()
	src := repo.New(ms)
	for i := range 5 {
		mustPut(t, src, "a", "k", string(rune('0'+i)))
	}
	h := headOf(t, src, "a")
	cm, _ := src.Commit(ctx, h)
	first := history(t, src, "a")[4]
	if err := ms.Delete(ctx, first); err != nil { // the root commit is gone
		t.Fatal(err)
	}
	dst := repo.New(memory.New())
	if _, err := dst.Fetch(ctx, src, h); err == nil {
		t.Fatal("a history with a missing commit was fetched")
	}
	if _, err := dst.Refs.Head(ctx, "a"); !errors.Is(err, refs.ErrNoAgent) {
		t.Fatalf("the receiver has an agent after a failed fetch: %v", err)
	}
	_ = cm
}

// Pulls work across a history a forget cut: the cuts travel with it, the
// receiver verifies clean and later pulls fast-forward.
func TestPullAcrossACut(t *testing.T) {
	ctx := context.Background()
	src := repo.New(memory.New())
	clock := int64(1_700_000_000)
	src = src.WithClock(func() int64 { return clock })
	hourly(t, src, &clock, "a", 10)
	if err := src.SetTag(ctx, "a", "old", history(t, src, "a")[15]); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Forget(ctx, "a", repo.Policy{Last: 3}, false); err != nil {
		t.Fatal(err)
	}
	dst := repo.New(memory.New())
	h := headOf(t, src, "a")
	st, err := dst.Fetch(ctx, src, h)
	if err != nil || len(st.Cuts) == 0 {
		t.Fatalf("fetch of a cut history: %+v %v", st, err)
	}
	if err := dst.AdoptCuts(ctx, "a", st.Cuts); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Integrate(ctx, "a", h, true, refs.OpClone, ""); err != nil {
		t.Fatal(err)
	}
	verifyClean(t, dst)
	if got, want := len(logOf(t, dst, "a")), 3; got != want {
		t.Fatalf("the received log has %d commits, want %d", got, want)
	}
	clock += 3600
	mustPut(t, src, "a", "later", "x")
	if _, in, err := pull(t, dst, src, "a", true); err != nil || in.Outcome != "fast-forward" {
		t.Fatalf("pull after the cut: %+v %v", in, err)
	}
	verifyClean(t, dst)
	// A cut is never recorded over a parent the receiver holds.
	var all []objects.CID
	for _, le := range logOf(t, src, "a") {
		all = append(all, le.CID)
	}
	if err := dst.AdoptCuts(ctx, "a", []repo.CutLink{{Commit: all[0], Parents: []objects.CID{all[1]}}}); err != nil {
		t.Fatal(err)
	}
	if cp, _, _ := dst.CheckpointOf(ctx, "a"); cp.IsCut(all[0], all[1]) {
		t.Fatal("a cut was recorded over a parent the store holds")
	}
}

// A sender whose blocks hash right but are not what their links say they
// are (a commit, or a chunked value, where a tree node belongs), or that lacks a value deep in a tree, is refused: the copy
// is typed, and nothing moves.
func TestFetchWrongKinds(t *testing.T) {
	ctx := context.Background()
	for name, mk := range map[string]func(t *testing.T, ms *memory.Storage) objects.CID{
		"tree is a commit": func(t *testing.T, ms *memory.Storage) objects.CID {
			inner := &objects.Commit{Tree: objects.EmptyTreeCID, Time: 1, Message: "inner"}
			ib, err := inner.Block()
			if err != nil {
				t.Fatal(err)
			}
			c := &objects.Commit{Tree: ib.CID, Time: 2, Message: "x"}
			b, err := c.Block()
			if err != nil {
				t.Fatal(err)
			}
			if err := ms.Put(ctx, ib, b); err != nil {
				t.Fatal(err)
			}
			return b.CID
		},
		"tree is a chunked value": func(t *testing.T, ms *memory.Storage) objects.CID {
			root, blocks := objects.NewFileValue(bytes.Repeat([]byte("chunky "), 200_000))
			if root.Codec() != objects.CodecDagCBOR {
				t.Fatal("the value is not chunked")
			}
			c := &objects.Commit{Tree: root, Time: 1, Message: "x"}
			b, err := c.Block()
			if err != nil {
				t.Fatal(err)
			}
			if err := ms.Put(ctx, append(blocks, b)...); err != nil {
				t.Fatal(err)
			}
			return b.CID
		},
		"a value is missing": func(t *testing.T, ms *memory.Storage) objects.CID {
			src := repo.New(ms)
			mustPut(t, src, "a", "deep/in/the/tree", "gone")
			mustPut(t, src, "a", "other", "v")
			if err := ms.Delete(ctx, objects.NewValue([]byte("gone")).CID); err != nil {
				t.Fatal(err)
			}
			return headOf(t, src, "a")
		},
	} {
		t.Run(name, func(t *testing.T) {
			ms := memory.New()
			head := mk(t, ms)
			dst := repo.New(memory.New())
			if _, err := dst.Fetch(ctx, repo.New(ms), head); err == nil {
				t.Fatal("fetched")
			} else {
				t.Log(err)
			}
			if _, err := dst.Integrate(ctx, "a", head, false, refs.OpPull, ""); err == nil {
				t.Fatal("a refused history was integrated")
			}
		})
	}
}
