package repo_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/memory"
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
