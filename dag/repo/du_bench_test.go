package repo_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// duStore writes commits to agent "a" of a Badger store (and a few to "b"):
// every commit changes three of 400 keys, path-nested two deep, and every
// 250th rewrites a chunked value, so the store holds many shared tree nodes,
// small values and some chunks. Agent "b" is written to when named.
func duStore(b testing.TB, commits int, agents ...string) *repo.Repo {
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
		if i%10 == 0 && slices.Contains(agents, "b") {
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
	r := duStore(b, 2000, "b")
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

// Every commit's Size is the bytes of the commit and of every block its
// tree reaches, each once (a walk of that commit alone, the independent
// count); every live block was added by exactly one commit of the one
// agent's history; a key's Current is its value at HEAD, every byte of it.
// The history nests subtrees, shares them between commits and rewrites a
// chunked value.
func TestDiskUsageCountsEveryBlockOnce(t *testing.T) {
	r := duStore(t, 160)
	ctx := context.Background()
	u, err := r.DiskUsage(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Commits) != 160 {
		t.Fatalf("%d commits", len(u.Commits))
	}
	var added int64
	for _, c := range u.Commits {
		var size int64
		_, ps, err := dag.Walk(ctx, r.Blocks, []objects.CID{c.CID}, dag.WalkOptions{
			Cut:   func(child, parent objects.CID) bool { return true },
			Visit: func(_ objects.CID, data []byte) error { size += int64(len(data)); return nil },
		})
		if err != nil || len(ps) > 0 {
			t.Fatal(err, ps)
		}
		if c.Size != size || c.Shared != c.Size-c.Added || c.Added <= 0 {
			t.Fatalf("commit %s: %+v, its blocks hold %d bytes", c.CID, c, size)
		}
		added += c.Added
	}
	if added != u.Store.LiveBytes {
		t.Fatalf("the commits added %d bytes, %d are live", added, u.Store.LiveBytes)
	}
	head, err := r.Tree(ctx, u.Commits[0].CID)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range u.Keys {
		v, ok, err := head.Get(ctx, k.Key)
		if err != nil || !ok {
			t.Fatal(k.Key, ok, err)
		}
		var size int64
		if err := objects.CheckValue(ctx, r.Blocks, v, func(_ objects.CID, data []byte) error { size += int64(len(data)); return nil }); err != nil {
			t.Fatal(err)
		}
		if k.Current != size || k.Versions < 1 || k.Bytes < k.Current {
			t.Fatalf("key %+v, its value at HEAD holds %d bytes", k, size)
		}
	}
	if u.Keys[0].Key != "big" || u.Keys[0].Versions != 1 {
		t.Fatalf("keys by growth: %+v", u.Keys[0])
	}
}
