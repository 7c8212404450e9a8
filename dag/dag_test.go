package dag_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

func TestParseRev(t *testing.T) {
	for _, tc := range []struct {
		in    string
		agent string
		base  string
		steps int
	}{
		{"HEAD", "", "HEAD", 0},
		{"HEAD~3", "", "HEAD", 1},
		{"HEAD~", "", "HEAD", 1},
		{"HEAD^2~1", "", "HEAD", 2},
		{"nova@HEAD~2", "nova", "HEAD", 1},
		{"nova@", "nova", "HEAD", 0},
		{"bafyreiabcdefgh", "", "bafyreiabcdefgh", 0},
	} {
		r, err := dag.ParseRev(tc.in)
		if err != nil {
			t.Fatalf("ParseRev(%q): %v", tc.in, err)
		}
		if r.Agent != tc.agent || r.Base != tc.base || len(r.Steps) != tc.steps {
			t.Fatalf("ParseRev(%q) = %+v", tc.in, r)
		}
	}
	for _, bad := range []string{"", "@HEAD", "~1", "bafy", "HEAD~x1", "BAFYREIABCDEFG", "bafyrei!bcdefgh", "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG", "HEAD~99999999999"} {
		if _, err := dag.ParseRev(bad); !errors.Is(err, dag.ErrBadRev) {
			t.Errorf("ParseRev(%q) error = %v, want ErrBadRev", bad, err)
		}
	}
}

func FuzzParseRev(f *testing.F) {
	for _, s := range []string{"HEAD", "HEAD~2", "a@HEAD^2", "bafyreiabcdefghij~1^1", "x@"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := dag.ParseRev(s)
		if err != nil {
			return
		}
		if r.Base == "" {
			t.Fatalf("ParseRev(%q) accepted an empty base", s)
		}
	})
}

// history builds a linear history of n commits for agent a and returns them, oldest first.
func history(t *testing.T, r *repo.Repo, n int) []objects.CID {
	ctx := context.Background()
	var out []objects.CID
	tick := int64(1000)
	r.Now = func() int64 { tick++; return tick }
	for i := 0; i < n; i++ {
		tr := objects.NewTree(r.Blocks)
		v := objects.NewValue([]byte(fmt.Sprint(i)))
		r.Blocks.Put(ctx, v)
		tr.Put(ctx, "k", v.CID)
		if i%2 == 0 {
			tr.Put(ctx, "even", v.CID)
		}
		root, _ := tr.Commit(ctx)
		c, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: root, Message: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func TestResolveAndLog(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cs := history(t, r, 30)
	for i, tc := range map[string]int{"HEAD": 29, "HEAD~1": 28, "HEAD~29": 0, "a@HEAD~3": 26, "HEAD^1": 28, "HEAD^~2": 26} {
		got, err := r.Resolve(ctx, "a", i)
		if err != nil || got != cs[tc] {
			t.Fatalf("Resolve(%q) = %s, %v; want commit %d", i, got, err, tc)
		}
	}
	// Abbreviations resolve when unambiguous.
	full := cs[7].String()
	for _, n := range []int{10, 16, 30, len(full)} {
		got, err := r.Resolve(ctx, "a", full[:n])
		if err != nil || got != cs[7] {
			t.Fatalf("Resolve(%d-char prefix) = %s, %v", n, got, err)
		}
	}
	if _, err := r.Resolve(ctx, "a", "bafyreiaaaaaaaaaaaaaaaaaa"); !errors.Is(err, dag.ErrUnknown) {
		t.Fatalf("unknown prefix: %v", err)
	}
	// "bafyrei" + one char matches many commits (tree nodes are not commits).
	if _, err := r.Resolve(ctx, "a", "HEAD~30"); !errors.Is(err, dag.ErrUnknown) {
		t.Fatalf("past the root: %v", err)
	}
	if _, err := r.Resolve(ctx, "ghost", "HEAD"); err == nil {
		t.Fatal("HEAD of a missing agent resolved")
	}
	// Log: newest first, every commit once.
	n := 29
	for le, err := range dag.Log(ctx, r.Blocks, cs[29]) {
		if err != nil {
			t.Fatal(err)
		}
		if le.CID != cs[n] {
			t.Fatalf("log position %d is %s, want %s", 29-n, le.CID, cs[n])
		}
		n--
	}
	if n != -1 {
		t.Fatalf("log stopped early at %d", n)
	}
	// TouchesKey: "even" changes on every commit (added or removed).
	cm, _ := r.Commit(ctx, cs[5])
	if ok, _ := dag.TouchesKey(ctx, r.Blocks, cm, "even"); !ok {
		t.Fatal("commit 5 removed 'even' but TouchesKey says no")
	}
	if ok, _ := dag.TouchesKey(ctx, r.Blocks, cm, "absent"); ok {
		t.Fatal("TouchesKey true for a key never written")
	}
	// Merge base of a fork.
	mb, err := dag.MergeBase(ctx, r.Blocks, cs[20], cs[29])
	if err != nil || mb != cs[20] {
		t.Fatalf("MergeBase = %s, %v", mb, err)
	}
	if ok, _ := dag.IsAncestor(ctx, r.Blocks, cs[3], cs[10]); !ok {
		t.Fatal("IsAncestor(3, 10) false")
	}
	if ok, _ := dag.IsAncestor(ctx, r.Blocks, cs[10], cs[3]); ok {
		t.Fatal("IsAncestor(10, 3) true")
	}
	// A value CID is not a commit.
	v := objects.NewValue([]byte("1"))
	if _, err := dag.ReadCommit(ctx, r.Blocks, v.CID); !errors.Is(err, dag.ErrNotCommit) {
		t.Fatalf("ReadCommit(value): %v", err)
	}
}

func TestWalkFindsMissingBlocks(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cs := history(t, r, 5)
	reach, problems, err := dag.Walk(ctx, r.Blocks, cs[4:], dag.WalkOptions{VerifyValues: true})
	if err != nil || len(problems) != 0 {
		t.Fatalf("walk: %v %v", err, problems)
	}
	if len(reach) < 5+5+5 {
		t.Fatalf("reach has %d blocks", len(reach))
	}
	r.Storage.(interface{ CorruptForTest(objects.CID, []byte) }).CorruptForTest(objects.NewValue([]byte("2")).CID, []byte("rot"))
	_, problems, _ = dag.Walk(ctx, r.Blocks, cs[4:], dag.WalkOptions{VerifyValues: true})
	if len(problems) != 1 || !errors.Is(problems[0].Err, objects.ErrHashMismatch) {
		t.Fatalf("corrupt value not reported: %v", problems)
	}
	rep, _ := r.Verify(ctx)
	if len(rep.Problems) != 1 {
		t.Fatalf("verify problems %v", rep.Problems)
	}
	// gc never deletes a reachable block, corrupt or not.
	if _, err := r.GC(ctx, false); err != nil {
		t.Fatal(err)
	}
	if ok, _ := r.Blocks.Has(ctx, objects.NewValue([]byte("2")).CID); !ok {
		t.Fatal("gc deleted a reachable (corrupt) block")
	}
}

// Commits of the same second (a runtime lands many tasks a second) still
// come before their parents: a merge whose first parent's line is longer
// than its second's, all at one time.
func TestLogSameSecond(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r = r.WithClock(func() int64 { return 1_700_000_000 })
	tree, err := r.EmptyTree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(msg string, parents ...objects.CID) objects.CID {
		id, _, err := r.WriteCommit(ctx, repo.CommitSpec{Tree: tree, Parents: parents, Message: msg})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	for round := range 20 { // CIDs vary with the messages: many tie orders
		root := commit(fmt.Sprint("root ", round))
		a1 := commit("a1", root)
		a2 := commit("a2", a1)
		a3 := commit("a3", a2)
		b1 := commit("b1", root)
		m := commit("merge", a3, b1)
		top := commit("top", m)
		pos := map[objects.CID]int{}
		var order []*objects.Commit
		for le, err := range dag.Log(ctx, r.Blocks, top) {
			if err != nil {
				t.Fatal(err)
			}
			pos[le.CID] = len(order)
			order = append(order, le.Commit)
		}
		if len(order) != 7 {
			t.Fatalf("round %d: %d commits, want 7", round, len(order))
		}
		for id, i := range pos {
			for _, p := range order[i].Parents {
				if pos[p] <= i {
					t.Fatalf("round %d: parent %s shown before its child %s", round, p.Short(), id.Short())
				}
			}
		}
	}
}
