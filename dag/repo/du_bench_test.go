package repo_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// duStore writes commits to agent "a" of a Badger store (and a few to "b"):
// every commit changes three of 400 keys, path-nested two deep, and every
// 250th rewrites a chunked value, so the store holds many shared tree nodes,
// small values and some chunks.
func duStore(b *testing.B, commits int) *repo.Repo {
	b.Helper()
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(b.TempDir(), "s"), repo.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	clock := int64(1_700_000_000)
	r = r.WithClock(func() int64 { clock++; return clock })
	rng := rand.New(rand.NewPCG(1, 2))
	commit := func(agent string, i int) {
		var blocks []objects.Block
		type kv struct {
			k string
			v objects.CID
		}
		var puts []kv
		for j := range 3 {
			k := fmt.Sprintf("d%d/e%d/k%d", rng.IntN(8), rng.IntN(5), rng.IntN(10))
			v := objects.NewValue(fmt.Appendf(nil, "%s %d %d %x", k, i, j, rng.Uint64()))
			blocks = append(blocks, v)
			puts = append(puts, kv{k, v.CID})
		}
		if i%250 == 0 {
			content := make([]byte, 3*objects.ChunkThreshold)
			for n := range content {
				content[n] = byte(rng.Uint32())
			}
			v, bs := objects.NewFileValue(content)
			blocks = append(blocks, bs...)
			puts = append(puts, kv{"big", v})
		}
		_, err := r.Edit(ctx, repo.EditRequest{Agent: agent, Message: fmt.Sprint("commit ", i), Create: true, Blocks: blocks,
			Edit: func(ctx context.Context, t *objects.Tree) (bool, error) {
				for _, p := range puts {
					if _, err := t.Put(ctx, p.k, p.v); err != nil {
						return false, err
					}
				}
				return true, nil
			}})
		if err != nil {
			b.Fatal(err)
		}
	}
	for i := range commits {
		commit("a", i)
		if i%10 == 0 {
			commit("b", i)
		}
	}
	return r
}

// BenchmarkDiskUsage measures du of one agent's history of 2000 commits
// (about 16,000 blocks): its time, what it allocates and the most heap it
// held live (peak-live-MB: the live heap after each collection, sampled
// every millisecond).
func BenchmarkDiskUsage(b *testing.B) {
	r := duStore(b, 2000)
	ctx := context.Background()
	runtime.GC()
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	base := sample[0].Value.Uint64()
	var peak atomic.Uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		s := []metrics.Sample{{Name: sample[0].Name}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				metrics.Read(s)
				if v := s[0].Value.Uint64(); v > base && v-base > peak.Load() {
					peak.Store(v - base)
				}
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		u, err := r.DiskUsage(ctx, "a")
		if err != nil {
			b.Fatal(err)
		}
		if len(u.Commits) != 2000 {
			b.Fatalf("%d commits", len(u.Commits))
		}
	}
	b.StopTimer()
	close(done)
	<-sampled
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-live-MB")
}
