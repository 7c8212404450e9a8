package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

func TestTaskLandsOneMoveWithEveryWriteInHistory(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	task := Task{ID: "task-42", Attempt: "a1", Model: "m-1", Adapter: "hermes"}
	rec, err := rt.RunTask(ctx, "lumen", task, func(ctx context.Context, tx *Tx) error {
		if _, err := tx.Get(ctx, "memory/facts.json"); !errors.Is(err, ErrKeyNotFound) {
			return fmt.Errorf("want ErrKeyNotFound, got %v", err)
		}
		if err := tx.Put(ctx, "memory/facts.json", []byte(`{"a":1}`)); err != nil {
			return err
		}
		got, err := tx.Get(ctx, "memory/facts.json") // own write
		if err != nil || string(got) != `{"a":1}` {
			return fmt.Errorf("own write: %q %v", got, err)
		}
		if err := tx.Put(ctx, "skills/reentrancy.md", []byte("# reentrancy")); err != nil {
			return err
		}
		if err := tx.Put(ctx, "patterns/old.md", []byte("old")); err != nil {
			return err
		}
		if err := tx.Delete(ctx, "patterns/old.md"); err != nil {
			return err
		}
		// No-op writes write nothing.
		if err := tx.Put(ctx, "skills/reentrancy.md", []byte("# reentrancy")); err != nil {
			return err
		}
		if err := tx.Delete(ctx, "never/there"); err != nil {
			return err
		}
		keys, err := tx.List(ctx, "skills/")
		if err != nil || !slices.Equal(keys, []string{"skills/reentrancy.md"}) {
			return fmt.Errorf("list: %v %v", keys, err)
		}
		// Nothing visible outside the task yet.
		if h := mustHead(t, rt, "lumen"); !h.IsZero() {
			return fmt.Errorf("HEAD moved before landing: %s", h)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Writes != 4 || rec.Merged() || !rec.Parent.IsZero() || !rec.From.IsZero() {
		t.Fatalf("receipt: %+v", rec)
	}
	if h := mustHead(t, rt, "lumen"); h != rec.Commit {
		t.Fatalf("HEAD %s, receipt says %s", h, rec.Commit)
	}
	// One op-log entry, carrying the task id.
	ents, err := rt.repo.Refs.Entries(ctx, "lumen")
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 || ents[0].Task != "task-42" || ents[0].Op != refs.OpCommit || ents[0].New != rec.Commit {
		t.Fatalf("op log: %+v", ents)
	}
	// History shows every write, each commit carrying the task metadata.
	var msgs []string
	for e, err := range dag.Log(ctx, rt.repo.Blocks, rec.Commit) {
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, e.Commit.Message)
		m := e.Commit.Metadata
		if m["task"] != "task-42" || m["attempt"] != "a1" || m["model"] != "m-1" || m["adapter"] != "hermes" || m["agent"] != "lumen" {
			t.Fatalf("metadata of %q: %v", e.Commit.Message, m)
		}
	}
	want := []string{"delete patterns/old.md", "put patterns/old.md", "put skills/reentrancy.md", "put memory/facts.json"}
	if !slices.Equal(msgs, want) {
		t.Fatalf("history %q, want %q", msgs, want)
	}
	if err := rec.Verify(rt.PublicKey()); err != nil {
		t.Fatal(err)
	}
	v, _ := rt.View(ctx, "lumen", "")
	bh, _ := v.BundleHash(ctx)
	if rec.BundleAfter != bh || rec.BundleBefore != emptyBundle || rec.StateDeltaHash != objects.StateDeltaHash(emptyBundle, bh) {
		t.Fatalf("receipt hashes %s %s, HEAD %s", rec.BundleBefore, rec.BundleAfter, bh)
	}
	recs, err := rt.Receipts(ctx, "lumen")
	if err != nil || len(recs) != 1 || string(recs[0].Line()) != string(rec.Line()) {
		t.Fatalf("tape: %v %v", recs, err)
	}
}

func TestFailedTasksMoveNothing(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	first, err := rt.RunTask(ctx, "a", Task{ID: "t0"}, put("k", "v0"))
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("model refused")
	cctx, cancel := context.WithCancel(ctx)
	cases := map[string]struct {
		ctx  context.Context
		fn   func(context.Context, *Tx) error
		want error
	}{
		"error":       {ctx, func(ctx context.Context, tx *Tx) error { tx.Put(ctx, "k", []byte("x")); return boom }, boom},
		"panic":       {ctx, func(ctx context.Context, tx *Tx) error { tx.Put(ctx, "k", []byte("x")); panic("tool crashed") }, ErrTaskPanicked},
		"panic error": {ctx, func(ctx context.Context, tx *Tx) error { tx.Put(ctx, "k", []byte("x")); panic(boom) }, boom},
		"cancelled": {cctx, func(ctx context.Context, tx *Tx) error {
			tx.Put(ctx, "k", []byte("x"))
			cancel()
			return nil
		}, context.Canceled},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			rec, err := rt.RunTask(c.ctx, "a", Task{ID: "t-" + name}, c.fn)
			if !errors.Is(err, c.want) || rec != nil {
				t.Fatalf("got %v, %v; want %v", rec, err, c.want)
			}
			if h := mustHead(t, rt, "a"); h != first.Commit {
				t.Fatalf("HEAD moved to %s", h)
			}
			if got := getAt(t, rt, "a", "HEAD", "k"); got != "v0" {
				t.Fatalf("k = %q", got)
			}
		})
	}
	ents, _ := rt.repo.Refs.Entries(ctx, "a")
	recs, _ := rt.Receipts(ctx, "a")
	if len(ents) != 1 || len(recs) != 1 {
		t.Fatalf("%d op-log entries, %d receipts; want 1 and 1", len(ents), len(recs))
	}
	var pe *PanicError
	_, err = rt.RunTask(ctx, "a", Task{ID: "p"}, func(context.Context, *Tx) error { panic("x") })
	if !errors.As(err, &pe) || len(pe.Stack) == 0 {
		t.Fatalf("panic error: %v", err)
	}
}

func TestTxUnusableAfterReturn(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	var kept *Tx
	if _, err := rt.RunTask(ctx, "a", Task{ID: "t"}, func(ctx context.Context, tx *Tx) error { kept = tx; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := kept.Put(ctx, "k", []byte("v")); !errors.Is(err, ErrTxDone) {
		t.Fatalf("put after return: %v", err)
	}
	if _, err := kept.Get(ctx, "k"); !errors.Is(err, ErrTxDone) {
		t.Fatalf("get after return: %v", err)
	}
}

func TestReadOnlyTaskLandsNothing(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	if _, err := rt.RunTask(ctx, "a", Task{ID: "w"}, put("k", "v")); err != nil {
		t.Fatal(err)
	}
	h := mustHead(t, rt, "a")
	rec, err := rt.RunTask(ctx, "a", Task{ID: "r"}, func(ctx context.Context, tx *Tx) error {
		_, err := tx.Get(ctx, "k")
		return errors.Join(err, tx.Put(ctx, "k", []byte("v")))
	})
	if err != nil || rec != nil {
		t.Fatalf("read-only task: %v %v", rec, err)
	}
	ents, _ := rt.repo.Refs.Entries(ctx, "a")
	if mustHead(t, rt, "a") != h || len(ents) != 1 {
		t.Fatal("a task without writes moved HEAD or logged")
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	noop := func(context.Context, *Tx) error { return nil }
	for _, c := range []struct {
		agent string
		task  Task
		want  error
	}{
		{"../x", Task{ID: "t"}, refs.ErrBadAgent},
		{"", Task{ID: "t"}, refs.ErrBadAgent},
		{"a", Task{}, ErrBadTask},
		{"a", Task{ID: "t\n"}, ErrBadTask},
		{"a", Task{ID: strings.Repeat("x", 300)}, ErrBadTask},
	} {
		if _, err := rt.RunTask(ctx, c.agent, c.task, noop); !errors.Is(err, c.want) {
			t.Errorf("%q %+v: %v, want %v", c.agent, c.task, err, c.want)
		}
	}
	for _, key := range []string{"/abs", "a/../b", "a//b", "", "x\x00y", "bundle.lock.json", "receipts.ndjson"} {
		_, err := rt.RunTask(ctx, "a", Task{ID: "t"}, put(key, "v"))
		if !errors.Is(err, objects.ErrBadKey) {
			t.Errorf("key %q: %v", key, err)
		}
	}
	if h := mustHead(t, rt, "a"); !h.IsZero() {
		t.Fatal("bad input moved HEAD")
	}
	if _, err := Open(ctx, Options{InMemory: true}); !errors.Is(err, ErrNoSigner) {
		t.Fatalf("no signer: %v", err)
	}
}

func TestConcurrentDisjointTasksMerge(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	if _, err := rt.RunTask(ctx, "a", Task{ID: "base"}, put("shared", "0")); err != nil {
		t.Fatal(err)
	}
	base := mustHead(t, rt, "a")
	inA, release := make(chan struct{}), make(chan struct{})
	var recA *Receipt
	var errA error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		recA, errA = rt.RunTask(ctx, "a", Task{ID: "slow"}, func(ctx context.Context, tx *Tx) error {
			if err := tx.Put(ctx, "skills/a.md", []byte("A")); err != nil {
				return err
			}
			close(inA)
			<-release
			return nil
		})
	}()
	<-inA
	recB, err := rt.RunTask(ctx, "a", Task{ID: "fast"}, func(ctx context.Context, tx *Tx) error {
		if _, err := tx.Get(ctx, "skills/a.md"); !errors.Is(err, ErrKeyNotFound) {
			return fmt.Errorf("saw another task's in-flight write: %v", err)
		}
		return tx.Put(ctx, "memory/b.json", []byte("B"))
	})
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	wg.Wait()
	if errA != nil {
		t.Fatal(errA)
	}
	if recB.Merged() || recB.Parent != base {
		t.Fatalf("fast task: %+v", recB)
	}
	if !recA.Merged() || recA.Parent != base || recA.From != recB.Commit {
		t.Fatalf("slow task should have merged onto the fast one: %+v", recA)
	}
	c, err := rt.repo.Commit(ctx, recA.Commit)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Parents, []objects.CID{recB.Commit, recA.TaskCommit}) {
		t.Fatalf("merge parents %v", c.Parents)
	}
	for k, v := range map[string]string{"skills/a.md": "A", "memory/b.json": "B", "shared": "0"} {
		if got := getAt(t, rt, "a", "HEAD", k); got != v {
			t.Fatalf("%s = %q", k, got)
		}
	}
	ents, _ := rt.repo.Refs.Entries(ctx, "a")
	if last := ents[len(ents)-1]; last.Op != refs.OpMerge || last.Task != "slow" {
		t.Fatalf("last op %+v", last)
	}
	// The receipts chain: the merge's before is the fast task's after.
	if recA.BundleBefore != recB.BundleAfter {
		t.Fatal("receipt chain broken")
	}
	// Each receipt names its own landing (the fast one's is prepared while
	// the landing is written; the slow one's, a merge, after it): the commit
	// HEAD moved to, the time of its operation-log entry, that commit's
	// bundle hash, signed by the operator.
	for i, rec := range []*Receipt{recB, recA} {
		e := ents[len(ents)-2+i]
		want, err := rt.repo.CommitBundleHash(ctx, e.New)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Commit != e.New || rec.From != e.Old || rec.Time != e.Time || rec.BundleAfter != want || rec.Verify(rt.pub) != nil {
			t.Fatalf("receipt of task %q does not name its landing %+v: %+v", rec.Task, e, rec)
		}
	}
}

func TestConcurrentSameKeyConflicts(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	if _, err := rt.RunTask(ctx, "a", Task{ID: "base"}, put("k", "0", "gone", "x")); err != nil {
		t.Fatal(err)
	}
	inA, release := make(chan struct{}), make(chan struct{})
	var errA error
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, errA = rt.RunTask(ctx, "a", Task{ID: "late"}, func(ctx context.Context, tx *Tx) error {
			tx.Put(ctx, "k", []byte("late"))
			tx.Put(ctx, "gone", []byte("edited"))
			tx.Put(ctx, "same", []byte("S"))
			close(inA)
			<-release
			return nil
		})
	}()
	<-inA
	early, err := rt.RunTask(ctx, "a", Task{ID: "early"}, func(ctx context.Context, tx *Tx) error {
		tx.Put(ctx, "k", []byte("early"))
		tx.Put(ctx, "same", []byte("S")) // same change on both sides is not a conflict
		return tx.Delete(ctx, "gone")
	})
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	<-done
	var ce *ConflictError
	if !errors.As(errA, &ce) || !errors.Is(errA, ErrConflict) {
		t.Fatalf("want a conflict, got %v", errA)
	}
	if !slices.Equal(ce.Keys, []string{"gone", "k"}) || ce.Head != early.Commit {
		t.Fatalf("conflict %+v", ce)
	}
	if !strings.Contains(errA.Error(), `"k"`) {
		t.Fatalf("message does not name the key: %v", errA)
	}
	if h := mustHead(t, rt, "a"); h != early.Commit {
		t.Fatal("HEAD moved after a conflict")
	}
}

// Many goroutines, several agents: every task lands (disjoint keys merge),
// nothing is lost, every receipt verifies and chains.
func TestManyConcurrentTasks(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	const agents, perAgent = 4, 24
	var wg sync.WaitGroup
	errs := make(chan error, agents*perAgent)
	for a := range agents {
		for i := range perAgent {
			wg.Add(1)
			go func() {
				defer wg.Done()
				agent := fmt.Sprintf("agent-%d", a)
				_, err := rt.RunTask(ctx, agent, Task{ID: fmt.Sprintf("t%d", i)}, func(ctx context.Context, tx *Tx) error {
					if _, err := tx.List(ctx, ""); err != nil {
						return err
					}
					return tx.Put(ctx, fmt.Sprintf("k/%03d", i), []byte(fmt.Sprint(i)))
				})
				errs <- err
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for a := range agents {
		agent := fmt.Sprintf("agent-%d", a)
		v, _ := rt.View(ctx, agent, "")
		keys, _ := v.List(ctx, "k/")
		if len(keys) != perAgent {
			t.Fatalf("%s has %d keys, want %d", agent, len(keys), perAgent)
		}
		recs, err := rt.Receipts(ctx, agent)
		if err != nil || len(recs) != perAgent {
			t.Fatalf("%s: %d receipts, %v", agent, len(recs), err)
		}
		for i, r := range recs {
			if err := r.Verify(rt.PublicKey()); err != nil {
				t.Fatal(err)
			}
			if i > 0 && (r.From != recs[i-1].Commit || r.BundleBefore != recs[i-1].BundleAfter) {
				t.Fatalf("%s receipt %d does not chain onto %d", agent, i, i-1)
			}
		}
		if errs := rt.repo.Refs.Verify(ctx, agent); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
}

// A task of one agent that never returns does not hold up another agent.
func TestAgentsDoNotWaitOnEachOther(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := rt.RunTask(ctx, "stuck", Task{ID: "t"}, func(ctx context.Context, tx *Tx) error {
			tx.Put(ctx, "k", []byte("v"))
			close(inside)
			<-release
			return nil
		})
		done <- err
	}()
	<-inside
	for i := range 20 {
		if _, err := rt.RunTask(ctx, "free", Task{ID: fmt.Sprint(i)}, put("k", fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestViewAtAnyCommit(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	r1, _ := rt.RunTask(ctx, "a", Task{ID: "1"}, put("k", "one"))
	r2, _ := rt.RunTask(ctx, "a", Task{ID: "2"}, put("k", "two", "j", "x"))
	if got := getAt(t, rt, "a", "HEAD", "k"); got != "two" {
		t.Fatal(got)
	}
	if got := getAt(t, rt, "a", r1.Commit.String(), "k"); got != "one" {
		t.Fatal(got)
	}
	if got := getAt(t, rt, "a", "HEAD~1", "k"); got != "two" { // HEAD~1 is the task's first write
		t.Fatal(got)
	}
	v, err := rt.ViewCommit(ctx, r2.TaskCommit)
	if err != nil || v.Metadata()["task"] != "2" {
		t.Fatal(err)
	}
	empty, err := rt.View(ctx, "nobody", "")
	if err != nil || !empty.Commit().IsZero() {
		t.Fatal(err)
	}
	if _, err := empty.Get(ctx, "k"); !errors.Is(err, ErrKeyNotFound) {
		t.Fatal(err)
	}
	if _, err := rt.View(ctx, "a", "HEAD~9"); err == nil {
		t.Fatal("resolved a revision past the root")
	}
}

func TestForkDivergesIndependently(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	rt.RunTask(ctx, "a", Task{ID: "1"}, put("k", "one"))
	if _, err := rt.Fork(ctx, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Fork(ctx, "a", "b"); !errors.Is(err, ErrAgentExists) {
		t.Fatalf("fork onto an existing agent: %v", err)
	}
	rt.RunTask(ctx, "b", Task{ID: "2"}, put("k", "fork"))
	rt.RunTask(ctx, "a", Task{ID: "3"}, put("k", "orig"))
	if getAt(t, rt, "a", "", "k") != "orig" || getAt(t, rt, "b", "", "k") != "fork" {
		t.Fatal("fork did not diverge")
	}
}

func TestCloseRefusesNewWork(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	started, release := make(chan struct{}), make(chan struct{})
	res := make(chan error)
	go func() {
		_, err := rt.RunTask(ctx, "a", Task{ID: "t"}, func(ctx context.Context, tx *Tx) error {
			close(started)
			<-release
			return tx.Put(ctx, "k", []byte("v"))
		})
		res <- err
	}()
	<-started
	closed := make(chan error)
	go func() { closed <- rt.Close() }()
	for !rt.closed.Load() { // Close has begun (it now waits for the running task)
		time.Sleep(time.Millisecond)
	}
	if _, err := rt.RunTask(ctx, "a", Task{ID: "u"}, put("k", "v")); !errors.Is(err, ErrClosed) {
		t.Fatalf("task after Close: %v", err)
	}
	close(release)
	if err := <-res; err != nil {
		t.Fatalf("running task during Close: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
}

// A new version of a large value stores only the chunks the old version did
// not have, and both versions read back whole; verify walks every value.
func TestPutNewVersionOfALargeValue(t *testing.T) {
	ctx := context.Background()
	rt, err := Open(ctx, Options{InMemory: true, Signer: testKey("operator")})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	v1 := make([]byte, 3<<20)
	for i := range v1 {
		v1[i] = byte(rng.Uint32())
	}
	v2 := bytes.Clone(v1)
	for _, i := range []int{1000, 1 << 20, 2 << 20} { // three edits
		v2[i] ^= 0xff
	}
	v2 = append(v2, []byte("and a tail")...)
	for _, v := range [][]byte{v1, v2} {
		if _, err := rt.RunTask(ctx, "lumen", Task{ID: fmt.Sprint(len(v))}, func(ctx context.Context, tx *Tx) error {
			return tx.Put(ctx, "memory.db", v)
		}); err != nil {
			t.Fatal(err)
		}
	}
	for rev, want := range map[string][]byte{"HEAD": v2, "HEAD~1": v1} {
		view, err := rt.View(ctx, "lumen", rev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := view.Get(ctx, "memory.db")
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, %v; want %d bytes", rev, len(got), err, len(want))
		}
	}
	rep, err := rt.repo.Verify(ctx)
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
	_, blocks := objects.NewFileValue(v2)
	_, old := objects.NewFileValue(v1)
	if n := len(rt.unstored(ctx, old[len(old)-1].CID, blocks)); n >= len(blocks)/2 || n == 0 {
		t.Fatalf("unstored kept %d of %d blocks of the new version", n, len(blocks))
	}
}
