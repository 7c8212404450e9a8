package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	reposerver "github.com/agentstate/agentstate/dag/repo/remote"
)

// The runtime applies its retention policy beside its tasks, and a client of
// its server forgets too (the Forget RPC): every task lands, the store
// verifies clean, and history stays bounded.
func TestRetentionBesideTasks(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var forgets atomic.Int64
	var ferr atomic.Value
	rt := openTest(t, Options{Store: dir, Retention: &Retention{Policy: repo.Policy{Last: 5}, Every: 20 * time.Millisecond,
		OnForget: func(agent string, rep repo.ForgetReport, err error) {
			if err != nil {
				ferr.Store(err)
				return
			}
			forgets.Add(1)
		}}})
	c, err := reposerver.Dial(ctx, reposerver.SocketPath(dir), reposerver.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	client := repo.New(c)
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				_, err := rt.RunTask(ctx, "lumen", Task{ID: fmt.Sprintf("w%d-%d", w, i)}, put(fmt.Sprintf("k%d", w), fmt.Sprint(i), fmt.Sprintf("big/%d", w), fmt.Sprint(w, i, "-", i*i)))
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	// A client of the server forgets while the tasks land.
	for range 5 {
		if _, err := client.Forget(ctx, "lumen", repo.Policy{Last: 3}, false); err != nil {
			t.Errorf("forget through the server: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a task failed beside forget: %v", err)
	}
	time.Sleep(60 * time.Millisecond) // one more retention round
	if forgets.Load() == 0 {
		t.Fatalf("the retention loop never forgot (last error %v)", ferr.Load())
	}
	rep, err := rt.repo.Verify(ctx)
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
	lo, _, err := rt.repo.LogOptions(ctx, "lumen")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range dag.LogWith(ctx, rt.repo.Blocks, mustHead(t, rt, "lumen"), lo) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n > 100 {
		t.Fatalf("history holds %d commits after retention with --keep-last 5", n)
	}
}
