package inspect_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs/receipt"
	"github.com/agentstate/agentstate/runtime"
)

// recordFixture lands n tasks one after another through a runtime (two
// puts each, every third a second attempt of the task before it, every
// fifth deleting a key) and reopens the store.
func recordFixture(t *testing.T, n int) (*inspect.View, string) {
	t.Helper()
	dir := t.TempDir()
	landTasks(t, dir, 1, n)
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return inspect.New(r), dir
}

// landTasks lands tasks from to from+n-1 as recordFixture does.
func landTasks(t *testing.T, dir string, from, n int) {
	t.Helper()
	ctx := context.Background()
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := from; i < from+n; i++ {
		task := runtime.Task{ID: "task-" + strconv.Itoa(i), Attempt: "1", Model: "m", Adapter: "a"}
		if i%3 == 0 {
			task = runtime.Task{ID: "task-" + strconv.Itoa(i-1), Attempt: "2", Model: "m2"}
		}
		if _, err := rt.RunTask(ctx, "lumen", task, func(ctx context.Context, tx *runtime.Tx) error {
			if err := tx.Put(ctx, fmt.Sprintf("notes/%d.md", i), []byte(strconv.Itoa(i))); err != nil {
				return err
			}
			if i%5 == 0 {
				return tx.Delete(ctx, fmt.Sprintf("notes/%d.md", i-1))
			}
			return tx.Put(ctx, "state/counter", []byte(strconv.Itoa(i)))
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
}

// The listing from the task records is the walk's, entry for entry,
// whole and by pages, from HEAD and from an older task.
func TestTasksFromRecordsAsWalk(t *testing.T) {
	v, _ := recordFixture(t, 40)
	ctx := context.Background()
	for _, o := range []inspect.TaskOptions{{}, {Limit: 7}, {Skip: 7, Limit: 7}, {Skip: 30, Limit: 20}, {Skip: 100},
		{Rev: "task:task-20"}, {Rev: "HEAD", Skip: 3, Limit: 1}} {
		got, ok, err := inspect.TasksFromRecords(ctx, v, "lumen", o)
		if err != nil || !ok {
			t.Fatalf("%+v: from records: ok %v, %v", o, ok, err)
		}
		walk, err := inspect.TasksByWalk(ctx, v, "lumen", o)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, walk) {
			t.Fatalf("%+v: from records\n%+v\nby the walk\n%+v", o, got, walk)
		}
		if o == (inspect.TaskOptions{}) && len(got.Tasks) != 40 {
			t.Fatalf("listed %d tasks", len(got.Tasks))
		}
		if all, err := v.Tasks(ctx, "lumen", o); err != nil || !reflect.DeepEqual(all, walk) {
			t.Fatalf("%+v: Tasks differs from the walk: %v", o, err)
		}
	}
}

// Where the records do not show the history (a merge, a fork whose tape
// is empty, a store written before records were kept), the listing is
// the walk's.
func TestTasksRecordsFallBack(t *testing.T) {
	ctx := context.Background()
	v, _ := taskFixture(t)
	for _, agent := range []string{"lumen", "copy"} {
		if _, ok, err := inspect.TasksFromRecords(ctx, v, agent, inspect.TaskOptions{}); ok || err != nil {
			t.Fatalf("%s: from records: ok %v, %v", agent, ok, err)
		}
		got, err := v.Tasks(ctx, agent, inspect.TaskOptions{})
		walk, werr := inspect.TasksByWalk(ctx, v, agent, inspect.TaskOptions{})
		if err != nil || werr != nil || !reflect.DeepEqual(got, walk) || len(got.Tasks) == 0 {
			t.Fatalf("%s: %v, %v", agent, err, werr)
		}
	}
	v2, _ := recordFixture(t, 12)
	if err := v2.R.Storage.DeleteMetaPrefix(ctx, repo.TaskRecordPrefix+"lumen/"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := inspect.TasksFromRecords(ctx, v2, "lumen", inspect.TaskOptions{}); ok || err != nil {
		t.Fatalf("no records: ok %v, %v", ok, err)
	}
	got, err := v2.Tasks(ctx, "lumen", inspect.TaskOptions{})
	if err != nil || len(got.Tasks) != 12 {
		t.Fatalf("no records: %d tasks, %v", len(got.Tasks), err)
	}
}

// verify recomputes every task record from its receipt and commits: a
// record that says something else (here: another line's, and bytes that
// are no record) is reported as a task-record problem; verify --repair's
// rebuild writes them right, and the listing from them is the walk's.
func TestTaskRecordsVerifiedRebuilt(t *testing.T) {
	v, _ := recordFixture(t, 10)
	ctx := context.Background()
	rep, err := v.R.Verify(ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("fresh store: %v %v", err, rep.Problems)
	}
	other, ok, err := v.R.Storage.GetMeta(ctx, repo.TaskRecordName("lumen", 4))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := v.R.Storage.SetMeta(ctx, repo.TaskRecordName("lumen", 7), other); err != nil {
		t.Fatal(err)
	}
	if err := v.R.Storage.SetMeta(ctx, repo.TaskRecordName("lumen", 2), []byte("no record")); err != nil {
		t.Fatal(err)
	}
	if err := v.R.Storage.SetMeta(ctx, repo.TaskRecordName("lumen", 11), other); err != nil {
		t.Fatal(err)
	}
	rep, err = v.R.Verify(ctx)
	if err != nil || len(rep.Problems) != 3 || rep.TaskRecordProblems != 3 {
		t.Fatalf("damaged records: %v %q", err, rep.Problems)
	}
	for i, want := range []string{`task records: agent "lumen", line 2: repo: bad task record`,
		`task records: agent "lumen", line 7: the record says task "task-4"`,
		`task records: agent "lumen", line 11: the tape has 10 lines`} {
		if !strings.HasPrefix(rep.Problems[i], want) {
			t.Errorf("problem %d: %s\nwant %s...", i, rep.Problems[i], want)
		}
	}
	// A record that does not decode is never used: the listing is the walk's.
	got, err := v.Tasks(ctx, "lumen", inspect.TaskOptions{})
	walk, werr := inspect.TasksByWalk(ctx, v, "lumen", inspect.TaskOptions{})
	if err != nil || werr != nil || !reflect.DeepEqual(got, walk) {
		t.Fatalf("with damaged records: %v %v", err, werr)
	}
	n, err := v.R.RebuildTaskRecords(ctx)
	if err != nil || n != 10 {
		t.Fatalf("rebuilt %d, %v", n, err)
	}
	rep, err = v.R.Verify(ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("after the rebuild: %v %v", err, rep.Problems)
	}
	got, ok, err = inspect.TasksFromRecords(ctx, v, "lumen", inspect.TaskOptions{})
	if err != nil || !ok || !reflect.DeepEqual(got, walk) {
		t.Fatalf("after the rebuild: ok %v, %v", ok, err)
	}
}

// A receipt on the tape whose commits the store does not hold (a tape
// restored with a snapshot) gets a record naming them: the tasks landed
// after it are still listed from the records, as the walk lists them.
func TestTaskRecordsAbsentCommits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	landTasks(t, dir, 1, 4)
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	nowhere := objects.Sum(objects.CodecDagCBOR, []byte("a commit of another store"))
	rc := &receipt.Receipt{Agent: "lumen", Task: "elsewhere", Attempt: "1", Commit: nowhere, TaskCommit: nowhere, Writes: 1, Time: 1700000000}
	rc.Sign(ed25519.NewKeyFromSeed(make([]byte, 32)))
	if _, err := r.Tape.Append(ctx, "lumen", rc.Line()); err != nil {
		t.Fatal(err)
	}
	r.Close()
	landTasks(t, dir, 5, 4)
	if r, err = repo.Open(dir, repo.Options{}); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	v := inspect.New(r)
	recs, ok, err := r.TaskRecords(ctx, "lumen")
	if err != nil || !ok || len(recs) != 9 || recs[4].Kind != repo.TaskRecordAbsent || recs[4].Commit != nowhere {
		t.Fatalf("records: %d, ok %v, %v", len(recs), ok, err)
	}
	got, ok, err := inspect.TasksFromRecords(ctx, v, "lumen", inspect.TaskOptions{})
	walk, werr := inspect.TasksByWalk(ctx, v, "lumen", inspect.TaskOptions{})
	if err != nil || werr != nil || !ok || !reflect.DeepEqual(got, walk) || len(got.Tasks) != 8 {
		t.Fatalf("from records (ok %v, %v): %d tasks; by the walk (%v): %d", ok, err, len(got.Tasks), werr, len(walk.Tasks))
	}
	if rep, err := r.Verify(ctx); err != nil || len(rep.Problems) != 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
	if n, err := r.RebuildTaskRecords(ctx); err != nil || n != 9 {
		t.Fatalf("rebuilt %d, %v", n, err)
	}
}
