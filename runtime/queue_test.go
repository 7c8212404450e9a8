package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/objects"
)

// fakeSnap records pushes; each push first runs hook (which may block or fail).
type fakeSnap struct {
	mu     sync.Mutex
	pushes []objects.CID
	hook   func(ctx context.Context, n int, commit objects.CID) error
}

func (f *fakeSnap) Push(ctx context.Context, agent string, commit objects.CID) (SnapshotResult, error) {
	f.mu.Lock()
	n := len(f.pushes)
	f.pushes = append(f.pushes, commit)
	f.mu.Unlock()
	if f.hook != nil {
		if err := f.hook(ctx, n, commit); err != nil {
			return SnapshotResult{}, err
		}
	}
	return SnapshotResult{BlobID: fmt.Sprintf("blob-%d", n)}, nil
}

func (f *fakeSnap) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.pushes)
}

type events struct {
	mu  sync.Mutex
	evs []SnapshotEvent
	ch  chan SnapshotEvent
}

func newEvents() *events { return &events{ch: make(chan SnapshotEvent, 1000)} }

func (e *events) add(ev SnapshotEvent) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
	e.ch <- ev
}

func (e *events) next(t *testing.T) SnapshotEvent {
	t.Helper()
	select {
	case ev := <-e.ch:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no snapshot event")
		return SnapshotEvent{}
	}
}

// A blob store that blocks forever never slows or fails a task, and Close
// still returns, reporting the push it cancelled.
func TestBlockedSnapshotterNeverBlocksTasks(t *testing.T) {
	ctx := context.Background()
	entered := make(chan struct{}, 1)
	snap := &fakeSnap{hook: func(ctx context.Context, n int, _ objects.CID) error {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-ctx.Done() // blocked until cancelled
		return ctx.Err()
	}}
	ev := newEvents()
	rt := openTest(t, Options{Snapshotter: snap, OnSnapshot: ev.add, Queue: QueueOptions{DrainTimeout: 50 * time.Millisecond, Workers: 1}})
	if _, err := rt.RunTask(ctx, "a", Task{ID: "first"}, put("k", "0")); err != nil {
		t.Fatal(err)
	}
	<-entered // the push is now stuck inside the blob store
	for i := range 50 {
		if _, err := rt.RunTask(ctx, "a", Task{ID: fmt.Sprint(i)}, put("k", fmt.Sprint(i+1))); err != nil {
			t.Fatalf("task %d failed while the blob store was blocked: %v", i, err)
		}
	}
	st := rt.SnapshotStatus("a")
	if !st.InFlight || !st.Queued || st.Commit != mustHead(t, rt, "a") {
		t.Fatalf("status %+v", st)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	var closedEvents int
	for range 2 { // the cancelled push, and the commit still queued
		e := ev.next(t)
		if !errors.Is(e.Err, ErrClosed) || !e.Final {
			t.Fatalf("event %+v", e)
		}
		closedEvents++
	}
	if snap.count() != 1 {
		t.Fatalf("%d pushes, want 1", snap.count())
	}
}

func TestQueueCoalescesToNewestCommit(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	snap := &fakeSnap{hook: func(ctx context.Context, n int, _ objects.CID) error {
		entered <- struct{}{}
		if n == 0 {
			<-release
		}
		return nil
	}}
	ev := newEvents()
	rt := openTest(t, Options{Snapshotter: snap, OnSnapshot: ev.add, Queue: QueueOptions{Workers: 3}})
	first, _ := rt.RunTask(ctx, "a", Task{ID: "0"}, put("k", "0"))
	<-entered
	for i := 1; i <= 5; i++ {
		rt.RunTask(ctx, "a", Task{ID: fmt.Sprint(i)}, put("k", fmt.Sprint(i)))
	}
	close(release)
	if err := rt.WaitSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	head := mustHead(t, rt, "a")
	e1, e2 := ev.next(t), ev.next(t)
	if e1.Commit != first.Commit || e2.Commit != head || e2.Coalesced != 4 || !e2.Final || e2.Err != nil {
		t.Fatalf("events %+v / %+v", e1, e2)
	}
	if snap.count() != 2 {
		t.Fatalf("%d pushes, want 2 (one in flight, then the newest)", snap.count())
	}
	if last := rt.SnapshotStatus("a").Last; last == nil || last.Result.BlobID != "blob-1" {
		t.Fatalf("last %+v", last)
	}
}

func TestQueueRetriesWithBackoffThenGivesUp(t *testing.T) {
	ctx := context.Background()
	flaky := errors.New("503 BLOB_UNAVAILABLE")
	var stamps []time.Time
	var mu sync.Mutex
	snap := &fakeSnap{hook: func(ctx context.Context, n int, _ objects.CID) error {
		mu.Lock()
		stamps = append(stamps, time.Now())
		mu.Unlock()
		if n < 2 {
			return flaky
		}
		return nil
	}}
	ev := newEvents()
	rt := openTest(t, Options{Snapshotter: snap, OnSnapshot: ev.add, Queue: QueueOptions{Backoff: 20 * time.Millisecond, MaxBackoff: time.Second}})
	rt.RunTask(ctx, "a", Task{ID: "0"}, put("k", "0"))
	for i, want := range []struct {
		final bool
		err   bool
	}{{false, true}, {false, true}, {true, false}} {
		e := ev.next(t)
		if e.Final != want.final || (e.Err != nil) != want.err || e.Attempt != i+1 {
			t.Fatalf("event %d: %+v", i, e)
		}
		if want.err && !errors.Is(e.Err, flaky) {
			t.Fatalf("event %d: %v", i, e.Err)
		}
	}
	// The second retry waited about twice as long as the first (jitter ±20%).
	d1, d2 := stamps[1].Sub(stamps[0]), stamps[2].Sub(stamps[1])
	if d1 < 16*time.Millisecond || d2 < 32*time.Millisecond {
		t.Fatalf("backoff too short: %v then %v", d1, d2)
	}

	// A store that always fails: the queue gives up after MaxAttempts and says so.
	snap2 := &fakeSnap{hook: func(context.Context, int, objects.CID) error { return flaky }}
	ev2 := newEvents()
	rt2 := openTest(t, Options{Snapshotter: snap2, OnSnapshot: ev2.add, Queue: QueueOptions{Backoff: time.Millisecond, MaxAttempts: 3}})
	if _, err := rt2.RunTask(ctx, "a", Task{ID: "0"}, put("k", "0")); err != nil {
		t.Fatal(err) // the task itself never fails
	}
	var last SnapshotEvent
	for range 3 {
		last = ev2.next(t)
	}
	if !last.Final || last.Attempt != 3 || !errors.Is(last.Err, flaky) {
		t.Fatalf("final event %+v", last)
	}
	rt2.WaitSnapshots(ctx)
	if snap2.count() != 3 {
		t.Fatalf("%d pushes, want 3", snap2.count())
	}
}

func TestQueueBounded(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	snap := &fakeSnap{hook: func(ctx context.Context, n int, _ objects.CID) error {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}}
	ev := newEvents()
	rt := openTest(t, Options{Snapshotter: snap, OnSnapshot: ev.add, Queue: QueueOptions{MaxAgents: 1, Workers: 1}})
	rt.RunTask(ctx, "a", Task{ID: "0"}, put("k", "0")) // in flight (taken off the queue)
	for snap.count() == 0 {
		time.Sleep(time.Millisecond)
	}
	rt.RunTask(ctx, "b", Task{ID: "0"}, put("k", "0")) // queued: the queue is now full
	if _, err := rt.RunTask(ctx, "c", Task{ID: "0"}, put("k", "0")); err != nil {
		t.Fatal(err)
	}
	e := ev.next(t)
	if e.Agent != "c" || !errors.Is(e.Err, ErrQueueFull) || !e.Final {
		t.Fatalf("event %+v", e)
	}
	close(release)
	if err := rt.WaitSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
}

// Only a landing that moves the bundle hash queues a snapshot.
func TestSnapshotOnlyWhenBundleMoved(t *testing.T) {
	ctx := context.Background()
	snap := &fakeSnap{}
	rt := openTest(t, Options{Snapshotter: snap})
	rt.RunTask(ctx, "a", Task{ID: "1"}, put("k", "v"))
	rec, err := rt.RunTask(ctx, "a", Task{ID: "2"}, func(ctx context.Context, tx *Tx) error {
		tx.Put(ctx, "tmp", []byte("x"))
		return tx.Delete(ctx, "tmp")
	})
	if err != nil || rec == nil || rec.BundleBefore != rec.BundleAfter {
		t.Fatalf("%+v %v", rec, err)
	}
	rt.WaitSnapshots(ctx)
	if snap.count() != 1 {
		t.Fatalf("%d pushes, want 1", snap.count())
	}
	if err := rt.Snapshot(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	rt.WaitSnapshots(ctx)
	if snap.count() != 2 {
		t.Fatalf("explicit snapshot: %d pushes", snap.count())
	}
	rt2 := openTest(t, Options{})
	if err := rt2.WaitSnapshots(ctx); !errors.Is(err, ErrSnapshotsOff) {
		t.Fatal(err)
	}
}
