package inspect_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/runtime"
)

// revertStore lands tasks: t1 writes a.md and b.md (two commits), t2
// writes c.md, t3 changes a.md; returns a view and each task's landing.
func revertStore(t *testing.T) (*inspect.View, map[string]objects.CID) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]objects.CID{}
	for _, tk := range []struct {
		id string
		kv []string
	}{
		{"t0", []string{"a.md", "a0\n"}},
		{"t1", []string{"a.md", "a1\n", "b.md", "b1\n"}},
		{"t2", []string{"c.md", "c2\n"}},
	} {
		rc, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: tk.id}, put(tk.kv...))
		if err != nil {
			t.Fatal(err)
		}
		ids[tk.id] = rc.Commit
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return inspect.New(r), ids
}

func valueOf(t *testing.T, v *inspect.View, rev, key string) string {
	t.Helper()
	val, err := v.Get(context.Background(), "lumen", rev, key, -1)
	if errors.Is(err, inspect.ErrNotFound) {
		return "(absent)"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(val.Data)
}

func actions(p inspect.RevertPlan) string {
	var out []string
	for _, k := range p.Keys {
		out = append(out, k.Key+":"+string(k.Action))
	}
	return strings.Join(out, " ")
}

// Reverting a task undoes its whole change (every commit of it, from the
// commit it started from); reverting a commit undoes that commit's change
// alone. The revert is one commit with its operation-log entry and says
// what it reverted.
func TestRevertTaskAndCommit(t *testing.T) {
	ctx := context.Background()
	v, ids := revertStore(t)
	p, err := v.PlanRevert(ctx, "lumen", "task:t1", nil)
	if err != nil || actions(p) != "a.md:restore b.md:delete" || p.Task != "t1" || p.Commit != ids["t1"] || p.Base != ids["t0"] {
		t.Fatalf("plan task:t1: %+v %v", p, err)
	}
	// The commit t1 landed is its last put (b.md) alone.
	p, err = v.PlanRevert(ctx, "lumen", ids["t1"].String(), nil)
	if err != nil || actions(p) != "b.md:delete" || p.Task != "" {
		t.Fatalf("plan of t1's commit: %+v %v", p, err)
	}
	ops, _ := v.Oplog(ctx, "lumen", 0)
	head, _ := v.Head(ctx, "lumen")
	p, err = v.Revert(ctx, "lumen", "task:t1", nil, inspect.WriteOptions{})
	if err != nil || p.New.IsZero() || p.Head != head {
		t.Fatalf("revert task:t1: %+v %v", p, err)
	}
	if a, b, c := valueOf(t, v, "", "a.md"), valueOf(t, v, "", "b.md"), valueOf(t, v, "", "c.md"); a != "a0\n" || b != "(absent)" || c != "c2\n" {
		t.Fatalf("after the revert: a.md %q b.md %q c.md %q", a, b, c)
	}
	sh, err := v.Show(ctx, "lumen", "", false)
	if err != nil || sh.Commit.CID != p.New || sh.Commit.Message != "revert task:t1" || sh.Commit.Metadata["op"] != "revert" ||
		sh.Commit.Metadata["revert"] != ids["t1"].String() || sh.Commit.Metadata["revertTask"] != "t1" || len(sh.Changes) != 2 {
		t.Fatalf("the revert's commit: %+v %v", sh, err)
	}
	ops2, _ := v.Oplog(ctx, "lumen", 0)
	if len(ops2) != len(ops)+1 || ops2[0].New != p.New || ops2[0].Old != head {
		t.Fatalf("operation log after the revert: %+v", ops2[0])
	}
	// Again: nothing to do.
	if _, err := v.Revert(ctx, "lumen", "task:t1", nil, inspect.WriteOptions{}); !errors.Is(err, inspect.ErrNoChange) {
		t.Fatalf("a second revert: %v", err)
	}
	// Revert the revert: the task's change is back.
	if _, err := v.Revert(ctx, "lumen", "HEAD", nil, inspect.WriteOptions{Message: "reapply t1"}); err != nil {
		t.Fatal(err)
	}
	if a, b := valueOf(t, v, "", "a.md"), valueOf(t, v, "", "b.md"); a != "a1\n" || b != "b1\n" {
		t.Fatalf("after reverting the revert: a.md %q b.md %q", a, b)
	}
}

// A key a later commit changed to a third value refuses the whole revert,
// naming it, and nothing is written; the same key changed and changed
// back to the reverted value is reverted; named keys limit the revert.
func TestRevertConflicts(t *testing.T) {
	ctx := context.Background()
	v, ids := revertStore(t)
	if _, err := v.Put(ctx, "lumen", "a.md", []byte("a later\n"), inspect.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	head, _ := v.Head(ctx, "lumen")
	p, err := v.PlanRevert(ctx, "lumen", "task:t1", nil)
	if err != nil || actions(p) != "a.md:conflict b.md:delete" || !slices.Equal(p.Conflicts(), []string{"a.md"}) {
		t.Fatalf("plan: %+v %v", p, err)
	}
	_, err = v.Revert(ctx, "lumen", "task:t1", nil, inspect.WriteOptions{})
	var ce *inspect.RevertConflictError
	if !errors.As(err, &ce) || !errors.Is(err, inspect.ErrRevertConflict) || !slices.Equal(ce.Keys, []string{"a.md"}) ||
		!strings.Contains(err.Error(), `later commits changed key "a.md" too`) {
		t.Fatalf("revert over a later change: %v", err)
	}
	if h, _ := v.Head(ctx, "lumen"); h != head {
		t.Fatal("a refused revert moved HEAD")
	}
	// Only b.md: no conflict.
	p, err = v.Revert(ctx, "lumen", "task:t1", []string{"b.md"}, inspect.WriteOptions{})
	if err != nil || actions(p) != "b.md:delete" {
		t.Fatalf("revert -- b.md: %+v %v", p, err)
	}
	// a.md set back to t1's value by a later commit: revertable.
	if _, err := v.Put(ctx, "lumen", "a.md", []byte("a1\n"), inspect.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if p, err = v.Revert(ctx, "lumen", "task:t1", []string{"a.md"}, inspect.WriteOptions{}); err != nil || actions(p) != "a.md:restore" || valueOf(t, v, "", "a.md") != "a0\n" {
		t.Fatalf("revert of a key changed and changed back: %+v %v", p, err)
	}
	// Bad requests, changing nothing.
	head, _ = v.Head(ctx, "lumen")
	for _, tc := range []struct {
		rev  string
		keys []string
		kind error
		says string
	}{
		{"task:t2", []string{"a.md"}, inspect.ErrBadRequest, `task t2 did not change key "a.md"`},
		{ids["t2"].String(), []string{"../x"}, inspect.ErrBadRequest, ""},
		{"task:nope", nil, inspect.ErrNotFound, ""},
		{"HEAD~99", nil, inspect.ErrNotFound, ""},
	} {
		_, err := v.Revert(ctx, "lumen", tc.rev, tc.keys, inspect.WriteOptions{})
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("revert %s %v: %v, want %v saying %q", tc.rev, tc.keys, err, tc.kind, tc.says)
		}
	}
	if _, err := v.Revert(ctx, "nobody", "HEAD", nil, inspect.WriteOptions{}); !errors.Is(err, inspect.ErrNotFound) {
		t.Errorf("revert on an agent with no commits: %v", err)
	}
	if h, _ := v.Head(ctx, "lumen"); h != head {
		t.Fatal("a refused revert moved HEAD")
	}
}

// A merge is reverted against its first parent: what the merged line of
// work brought in goes.
func TestRevertMerge(t *testing.T) {
	ctx := context.Background()
	v, ids := fixture(t) // slow landed as a merge beside fast
	// The task that landed as a merge: its own change, not fast's.
	p, err := v.PlanRevert(ctx, "lumen", "task:slow", nil)
	if err != nil || actions(p) != "skills/a.md:delete" || p.Commit != ids["slow"] {
		t.Fatalf("plan task:slow: %+v %v", p, err)
	}
	p, err = v.Revert(ctx, "lumen", ids["slow"].String(), nil, inspect.WriteOptions{})
	if err != nil || actions(p) != "skills/a.md:delete" {
		t.Fatalf("revert of the merge: %+v %v", p, err)
	}
	if valueOf(t, v, "", "skills/a.md") != "(absent)" || valueOf(t, v, "", "notes.md") != "one\nTWO\nthree\n" {
		t.Fatal("the merge's revert touched the wrong keys")
	}
	sh, err := v.Show(ctx, "lumen", "", false)
	if want := "revert " + ids["slow"].Short() + ` "merge task slow"`; err != nil || sh.Commit.Message != want {
		t.Fatalf("the revert's message %q, want %q (%v)", sh.Commit.Message, want, err)
	}
}

// A change whose base a forget cut is refused: what it changed is not known.
func TestRevertCut(t *testing.T) {
	ctx := context.Background()
	c := inspecttest.NewCut(t)
	v := inspect.New(c.R)
	head, _ := v.Head(ctx, inspecttest.A)
	_, err := v.Revert(ctx, inspecttest.A, "HEAD~1", nil, inspect.WriteOptions{})
	if !errors.Is(err, inspect.ErrBadRequest) || !strings.Contains(err.Error(), "was forgotten") {
		t.Fatalf("revert of a commit whose parent a forget cut: %v", err)
	}
	if h, _ := v.Head(ctx, inspecttest.A); h != head {
		t.Fatal("HEAD moved")
	}
	// HEAD's own change (step 5 → step 6) is known and reverts.
	if _, err := v.Revert(ctx, inspecttest.A, "HEAD", nil, inspect.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := valueOf(t, v, "", "memory.md"); got != "step 5\n" {
		t.Fatalf("memory.md after reverting step 6: %q", got)
	}
}

// A revert racing a writer of the same key never undoes the writer's
// value: it is judged against the HEAD it lands on, so either it lands
// first (and the writer's value comes after) or it sees the writer's value
// and is refused.
func TestRevertRacesAWriter(t *testing.T) {
	ctx := context.Background()
	v := inspect.New(repo.New(memory.New()))
	refused := 0
	for i := range 40 {
		if _, err := v.Put(ctx, "lumen", "a.md", []byte("before\n"), inspect.WriteOptions{}); err != nil && !errors.Is(err, inspect.ErrNoChange) {
			t.Fatal(err)
		}
		c, err := v.Put(ctx, "lumen", "a.md", []byte("reverted\n"), inspect.WriteOptions{})
		if err != nil {
			t.Fatal(err)
		}
		later := fmt.Sprintf("later %d\n", i)
		done := make(chan error)
		go func() {
			_, err := v.Put(ctx, "lumen", "a.md", []byte(later), inspect.WriteOptions{})
			done <- err
		}()
		_, rerr := v.Revert(ctx, "lumen", c.String(), nil, inspect.WriteOptions{})
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if rerr != nil && !errors.Is(rerr, inspect.ErrRevertConflict) {
			t.Fatal(rerr)
		}
		if rerr != nil {
			refused++
		}
		if got := valueOf(t, v, "", "a.md"); got != later {
			t.Fatalf("round %d: a.md is %q after the revert (refused: %v), want the writer's %q", i, got, rerr, later)
		}
	}
	t.Logf("%d of 40 reverts refused (the writer landed first)", refused)
}
