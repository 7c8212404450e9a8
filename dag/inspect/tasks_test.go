package inspect_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/runtime"
)

// taskFixture lands, through a runtime: "write" (two puts), "retry" twice
// (attempts 1 and 2), "slow" as a merge beside "fast", and "gone" (a put
// and a delete); then forks lumen to "copy", whose tape holds no receipt.
func taskFixture(t *testing.T) (*inspect.View, map[string]*runtime.Receipt) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		t.Fatal(err)
	}
	rcs := map[string]*runtime.Receipt{}
	land := func(name string, task runtime.Task, fn func(context.Context, *runtime.Tx) error) {
		rc, err := rt.RunTask(ctx, "lumen", task, fn)
		if err != nil {
			t.Fatal(err)
		}
		rcs[name] = rc
	}
	land("write", runtime.Task{ID: "write", Model: "m-1", Adapter: "a-1"}, put("notes.md", "one\n", "facts.md", "sky\n"))
	land("retry1", runtime.Task{ID: "retry", Attempt: "1", Model: "m-1"}, put("notes.md", "two\n"))
	land("retry2", runtime.Task{ID: "retry", Attempt: "2", Model: "m-2"}, put("notes.md", "three\n"))
	in, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		land("slow", runtime.Task{ID: "slow"}, func(ctx context.Context, tx *runtime.Tx) error {
			if err := tx.Put(ctx, "skills/a.md", []byte("a\n")); err != nil {
				return err
			}
			close(in)
			<-release
			return nil
		})
	}()
	<-in
	land("fast", runtime.Task{ID: "fast"}, put("facts.md", "sea\n"))
	close(release)
	wg.Wait()
	land("gone", runtime.Task{ID: "gone"}, func(ctx context.Context, tx *runtime.Tx) error {
		if err := tx.Put(ctx, "tmp", []byte("x")); err != nil {
			return err
		}
		return tx.Delete(ctx, "facts.md")
	})
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	head, err := r.Resolve(ctx, "lumen", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Fork(ctx, "lumen", head, "copy"); err != nil {
		t.Fatal(err)
	}
	return inspect.New(r), rcs
}

// A task revision names the commit the task landed, wherever a revision
// is resolved: the latest attempt, a chosen attempt, steps after it,
// another agent's, and, where the tape has no receipt, from the commits.
func TestTaskRevisions(t *testing.T) {
	v, rcs := taskFixture(t)
	ctx := context.Background()
	for rev, want := range map[string]objects.CID{
		"task:write":       rcs["write"].Commit,
		"task:retry":       rcs["retry2"].Commit,
		"task:retry@1":     rcs["retry1"].Commit,
		"task:retry@2":     rcs["retry2"].Commit,
		"task:retry~1":     rcs["retry1"].Commit,
		"task:retry@2^1":   rcs["retry1"].Commit,
		"task:slow":        rcs["slow"].Commit,
		"task:slow^2":      rcs["slow"].TaskCommit,
		"lumen@task:fast":  rcs["fast"].Commit,
		"copy@task:gone":   rcs["gone"].Commit,
		"copy@task:retry":  rcs["retry2"].Commit,
		"copy@task:slow^2": rcs["slow"].TaskCommit,
	} {
		got, err := v.R.Resolve(ctx, "lumen", rev)
		if err != nil || got != want {
			t.Errorf("Resolve(%q) = %s, %v; want %s", rev, got.Short(), err, want.Short())
		}
	}
	// From the fork's side, with no receipt: the landing from metadata.
	got, err := v.R.Resolve(ctx, "copy", "task:retry@1")
	if err != nil || got != rcs["retry1"].Commit {
		t.Errorf("copy task:retry@1 = %s, %v", got.Short(), err)
	}
	for rev, want := range map[string]string{
		"task:wrte":            `no task "wrte" landed for agent lumen; did you mean "write"?`,
		"task:retry@3":         `task "retry" of agent lumen has no landed attempt "3" (its attempts: "1", "2")`,
		"copy@task:fas":        `no task "fas" landed for agent copy; did you mean "fast"?`,
		"task:nothing-like-it": `no task "nothing-like-it" landed for agent lumen`,
	} {
		_, err := v.R.Resolve(ctx, "lumen", rev)
		if !errors.Is(err, dag.ErrNoTask) || !errors.Is(err, dag.ErrUnknown) || err.Error() != want {
			t.Errorf("Resolve(%q): %v; want %q", rev, err, want)
		}
	}
	if _, err := v.R.Resolve(ctx, "lumen", "task:"); !errors.Is(err, dag.ErrBadRev) {
		t.Errorf("task: with no ID: %v", err)
	}
	// The read model's errors are of its kinds.
	if _, err := v.Show(ctx, "lumen", "task:wrte", false); !errors.Is(err, inspect.ErrNotFound) || !strings.Contains(err.Error(), "did you mean") {
		t.Errorf("Show(task:wrte): %v", err)
	}
	if sh, err := v.Show(ctx, "lumen", "task:write", false); err != nil || sh.Commit.CID != rcs["write"].Commit {
		t.Errorf("Show(task:write): %v", err)
	}
}

// The task log has one entry per landed task, newest first, with what
// each folded; it pages; the fork's, found from commits, says the same
// with no receipt.
func TestTasks(t *testing.T) {
	v, rcs := taskFixture(t)
	ctx := context.Background()
	lg, err := v.Tasks(ctx, "lumen", inspect.TaskOptions{Verify: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, tk := range lg.Tasks {
		ids = append(ids, tk.ID+"@"+tk.Attempt)
		if tk.Receipt != inspect.ReceiptVerified {
			t.Errorf("task %s: receipt %s %s", tk.ID, tk.Receipt, tk.ReceiptError)
		}
	}
	if got := strings.Join(ids, " "); got != "gone@ slow@ fast@ retry@2 retry@1 write@" {
		t.Fatalf("tasks: %s", got)
	}
	byID := map[string]inspect.Task{}
	for _, tk := range lg.Tasks {
		byID[tk.ID+tk.Attempt] = tk
	}
	w := byID["write"]
	if w.Commits != 2 || strings.Join(w.Keys, ",") != "facts.md,notes.md" || w.Model != "m-1" || w.Adapter != "a-1" || w.Merge ||
		w.Commit != rcs["write"].Commit || !w.Start.IsZero() || w.BundleAfter != rcs["write"].BundleAfter.String() {
		t.Errorf("write: %+v", w)
	}
	s := byID["slow"]
	if !s.Merge || s.Commits != 2 || s.TaskCommit != rcs["slow"].TaskCommit || strings.Join(s.Keys, ",") != "skills/a.md" {
		t.Errorf("slow: %+v", s)
	}
	if g := byID["gone"]; strings.Join(g.Keys, ",") != "facts.md,tmp" || g.Commits != 2 {
		t.Errorf("gone: %+v", g)
	}
	// Pages.
	p, err := v.Tasks(ctx, "lumen", inspect.TaskOptions{Skip: 2, Limit: 2})
	if err != nil || len(p.Tasks) != 2 || p.Tasks[0].ID != "fast" || p.Tasks[1].Attempt != "2" || !p.More || p.Tasks[0].Receipt != inspect.ReceiptUnchecked {
		t.Errorf("page: %+v, %v", p, err)
	}
	p, err = v.Tasks(ctx, "lumen", inspect.TaskOptions{Skip: 4, Limit: 2})
	if err != nil || len(p.Tasks) != 2 || p.More {
		t.Errorf("last page: %+v, %v", p, err)
	}
	// The fork: the same tasks, from commits.
	c, err := v.Tasks(ctx, "copy", inspect.TaskOptions{})
	if err != nil || len(c.Tasks) != 6 {
		t.Fatalf("copy: %+v, %v", c, err)
	}
	for i, tk := range c.Tasks {
		o := lg.Tasks[i]
		if tk.Receipt != inspect.ReceiptNone || tk.ID != o.ID || tk.Attempt != o.Attempt || tk.Commit != o.Commit || tk.Commits != o.Commits ||
			strings.Join(tk.Keys, ",") != strings.Join(o.Keys, ",") || tk.BundleAfter != o.BundleAfter || tk.BundleBefore != o.BundleBefore || tk.Start != o.Start || tk.Model != o.Model {
			t.Errorf("copy task %d: %+v\nlumen's: %+v", i, tk, o)
		}
	}
	if _, err := v.Tasks(ctx, "nobody", inspect.TaskOptions{}); !errors.Is(err, inspect.ErrNotFound) {
		t.Errorf("unknown agent: %v", err)
	}
}

// One task: its receipt verified, its commits, its whole change from the
// commit it started from (a merge's: the task's own, not the other
// side's).
func TestTask(t *testing.T) {
	v, rcs := taskFixture(t)
	ctx := context.Background()
	d, err := v.Task(ctx, "lumen", "slow", true)
	if err != nil {
		t.Fatal(err)
	}
	if d.Receipt == nil || !*d.Receipt.Verified || d.Receipt.Receipt.Task != "slow" || len(d.Commits) != 2 ||
		d.Commits[0].CID != rcs["slow"].Commit || d.Commits[1].CID != rcs["slow"].TaskCommit {
		t.Errorf("slow: %+v", d)
	}
	if len(d.Changes) != 1 || d.Changes[0].Path != "skills/a.md" || d.Changes[0].Change != objects.Added || !strings.Contains(d.Changes[0].Patch, "+a") {
		t.Errorf("slow's change: %+v", d.Changes)
	}
	d, err = v.Task(ctx, "lumen", "task:retry@1", false)
	if err != nil || d.Task.Attempt != "1" || len(d.Changes) != 1 || d.Changes[0].Change != objects.Modified {
		t.Errorf("retry@1: %+v, %v", d, err)
	}
	d, err = v.Task(ctx, "copy", "write", false)
	if err != nil || d.Receipt != nil || d.Task.Receipt != inspect.ReceiptNone || len(d.Changes) != 2 || len(d.Commits) != 2 {
		t.Errorf("copy write: %+v, %v", d, err)
	}
	for _, id := range []string{"wrte", "retry~1", "retry@9"} {
		if _, err := v.Task(ctx, "lumen", id, false); !errors.Is(err, inspect.ErrNotFound) {
			t.Errorf("Task(%q): %v", id, err)
		}
	}
}

// On histories a forget cut, the task log lists what is left and a task
// whose start is gone says so instead of failing: the agent cut, the fork
// that reaches the cut commits, the fork made on the cut history.
func TestTasksCut(t *testing.T) {
	c := inspecttest.NewCut(t)
	v := inspect.New(c.R)
	ctx := context.Background()
	for agent, want := range map[string]string{
		inspecttest.A:    "step-6 step-5 step-2",
		inspecttest.Fork: "step-3 step-2 step-1",
		inspecttest.Late: "step-5",
	} {
		lg, err := v.Tasks(ctx, agent, inspect.TaskOptions{Verify: true})
		if err != nil {
			t.Fatalf("%s: %v", agent, err)
		}
		var ids []string
		for _, tk := range lg.Tasks {
			ids = append(ids, tk.ID)
		}
		if got := strings.Join(ids, " "); got != want {
			t.Errorf("%s: tasks %s, want %s", agent, got, want)
		}
	}
	if _, err := v.Tasks(ctx, inspecttest.Empty, inspect.TaskOptions{}); !errors.Is(err, inspect.ErrNotFound) {
		t.Errorf("agent with no commits: %v", err)
	}
	for _, agent := range []string{inspecttest.A, inspecttest.Late} {
		d, err := v.Task(ctx, agent, "step-5", false)
		if err != nil || !d.StartGone || len(d.Changes) != 0 || len(d.Commits) != 1 {
			t.Errorf("%s step-5: %+v, %v", agent, d, err)
		}
	}
	// The receipt of a task whose commits were forgotten stays.
	d, err := v.Task(ctx, inspecttest.A, "step-4", false)
	if err != nil || d.Receipt == nil || !d.StartGone || len(d.Commits) != 0 || !strings.Contains(d.Receipt.Note, "forgotten") {
		t.Errorf("A step-4: %+v, %v", d, err)
	}
}

// A history of many tasks (enough that the listing reads commits ahead in
// parallel) lists the same tasks whole as page by page, and each entry is
// what one task's view says.
func TestTasksMany(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		t.Fatal(err)
	}
	const n = 150
	for i := range n {
		if _, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: "t-" + fmtInt(i)}, put("k/"+fmtInt(i), "v", "counter", fmtInt(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(dir, repo.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	v := inspect.New(r)
	all, err := v.Tasks(ctx, "lumen", inspect.TaskOptions{})
	if err != nil || len(all.Tasks) != n || all.More {
		t.Fatalf("%d tasks, more %v, %v", len(all.Tasks), all.More, err)
	}
	var paged []inspect.Task
	for skip := 0; ; skip += 40 {
		p, err := v.Tasks(ctx, "lumen", inspect.TaskOptions{Skip: skip, Limit: 40})
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, p.Tasks...)
		if !p.More {
			break
		}
	}
	if len(paged) != n {
		t.Fatalf("pages hold %d tasks", len(paged))
	}
	for i, tk := range all.Tasks {
		if tk.ID != paged[i].ID || tk.Commit != paged[i].Commit || strings.Join(tk.Keys, ",") != "counter,k/"+fmtInt(n-1-i) || tk.Commits != 2 {
			t.Fatalf("task %d: %+v; paged %+v", i, tk, paged[i])
		}
	}
	d, err := v.Task(ctx, "lumen", all.Tasks[n/2].ID, false)
	if err != nil || d.Task.Commit != all.Tasks[n/2].Commit || len(d.Changes) != 2 {
		t.Fatalf("task %s: %+v, %v", all.Tasks[n/2].ID, d, err)
	}
}

func fmtInt(i int) string { return strconv.Itoa(i) }
