package remote_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/refs"
)

// An undo from a client beside a writer in the server that lands without
// pause: the undo takes its turn in the server, so it neither loses every
// race ("HEAD moved N times") nor undoes anything but the newest operation.
func TestClientUndoBesideAFastServerWriter(t *testing.T) {
	ctx := context.Background()
	r, _, c := startServed(t, remote.Options{})
	// More operations than the undos below, so that they never reach the
	// first one however few the writer lands meanwhile.
	for i := 0; i < 25; i++ {
		putKey(t, r, "lumen", "k", fmt.Sprint("before-", i))
	}
	client := repo.New(c)

	stop := make(chan struct{})
	var landed atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			putKey(t, r, "lumen", "k", fmt.Sprint("during-", i))
			landed.Add(1)
		}
	}()
	for i := 0; i < 20; i++ {
		u, err := client.Undo(ctx, "lumen")
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatalf("undo %d beside a writer (%d landed): %v", i, landed.Load(), err)
		}
		if u.Entry.Op != refs.OpUndo || u.Entry.Target != u.Target.Seq || u.Entry.New != u.Target.Old {
			t.Fatalf("undo %d: entry %+v does not undo target %+v", i, u.Entry, u.Target)
		}
	}
	close(stop)
	wg.Wait()
	if landed.Load() == 0 {
		t.Fatal("the writer landed nothing: the test raced no one")
	}
	verifyClean(t, r)

	// The refusals keep their kinds across the wire.
	putKey(t, r, "solo", "k", "v")
	if _, err := client.Undo(ctx, "solo"); !errors.Is(err, refs.ErrNothingUndo) {
		t.Fatalf("undo of a first operation: %v, want refs.ErrNothingUndo", err)
	}
	if _, err := client.Redo(ctx, "solo"); !errors.Is(err, refs.ErrNothingRedo) {
		t.Fatalf("redo with nothing undone: %v, want refs.ErrNothingRedo", err)
	}
	if _, err := client.Undo(ctx, "nobody"); !errors.Is(err, refs.ErrNoAgent) {
		t.Fatalf("undo of an unknown agent: %v, want refs.ErrNoAgent", err)
	}
	if _, err := client.Undo(ctx, "../x"); err == nil {
		t.Fatalf("undo of a bad agent name: %v", err)
	}
}
