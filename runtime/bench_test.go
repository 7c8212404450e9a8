package runtime

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// BenchmarkRunTask lands one task per iteration, each writing writes keys,
// on an on-disk store with and without durable sync. ns/op is the cost of
// one whole task (writes, landing, receipt).
func BenchmarkRunTask(b *testing.B) {
	for _, sync := range []bool{false, true} {
		for _, writes := range []int{1, 10} {
			b.Run(fmt.Sprintf("sync=%v/writes=%d", sync, writes), func(b *testing.B) {
				ctx := context.Background()
				rt := openWith(b, Options{Store: filepath.Join(b.TempDir(), "s"), Signer: testKey("bench"), Sync: sync})
				// A brain of 1000 keys to write into.
				rt.RunTask(ctx, "a", Task{ID: "seed"}, func(ctx context.Context, tx *Tx) error {
					for i := range 1000 {
						tx.Put(ctx, fmt.Sprintf("k/%04d", i), []byte("seed"))
					}
					return nil
				})
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					_, err := rt.RunTask(ctx, "a", Task{ID: fmt.Sprint(i)}, func(ctx context.Context, tx *Tx) error {
						for w := range writes {
							if err := tx.Put(ctx, fmt.Sprintf("k/%04d", (i*writes+w)%1000), []byte(fmt.Sprint(i))); err != nil {
								return err
							}
						}
						return nil
					})
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
			})
		}
	}
}

// BenchmarkParallelAgents runs one-write tasks of 8 agents from parallel
// goroutines: tasks of different agents do not serialize on each other.
func BenchmarkParallelAgents(b *testing.B) {
	ctx := context.Background()
	rt := openWith(b, Options{Store: filepath.Join(b.TempDir(), "s"), Signer: testKey("bench")})
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		agent := fmt.Sprintf("agent-%d", n.Add(1)%8)
		for i := 0; pb.Next(); i++ {
			if _, err := rt.RunTask(ctx, agent, Task{ID: fmt.Sprint(i)}, put(fmt.Sprintf("k/%d", i%100), fmt.Sprint(i))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tasks/s")
}
