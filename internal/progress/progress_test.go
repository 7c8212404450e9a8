package progress

import (
	"context"
	"sync"
	"testing"
)

func TestCounter(t *testing.T) {
	if c := Start(context.Background(), 10); c != nil {
		t.Fatal("a context with no reporter gave a counter")
	}
	var nilc *Counter
	nilc.Add(1) // no panic
	nilc.SetTotal(3)

	var mu sync.Mutex
	var last [2]int64
	calls := 0
	ctx := With(context.Background(), func(done, total int64) {
		mu.Lock()
		last, calls = [2]int64{done, total}, calls+1
		mu.Unlock()
	})
	c := Start(ctx, -1)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				c.Add(1)
			}
		}()
	}
	wg.Wait()
	c.SetTotal(800)
	if last != [2]int64{800, 800} || calls != 802 {
		t.Fatalf("last report %v after %d calls", last, calls)
	}
}
