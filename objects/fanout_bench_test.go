package objects_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// BenchmarkFanout measures what the choice of LayerBits (fanout 2^bits)
// costs a brain: for a 100k-key tree, the time and bytes of one one-key write
// (load the path, put, encode and hash the changed nodes), the nodes a
// one-key diff reads, and the size of the whole tree. docs/performance.md
// reports it; format.md's fanout comes from it.
//
//	go test -run '^$' -bench Fanout -benchtime 2000x ./objects/
func BenchmarkFanout(b *testing.B) {
	const n = 100_000
	for _, bits := range []int{2, 3, 4, 5, 6} {
		b.Run(fmt.Sprintf("fanout=%d", 1<<bits), func(b *testing.B) {
			defer objects.SetLayerBitsForBenchmark(bits)()
			ctx := context.Background()
			bs := memstore.New()
			tr := objects.NewTree(bs)
			val := objects.NewValue([]byte("v")).CID
			for i := 0; i < n; i++ {
				tr.Put(ctx, fmt.Sprintf("skills/s%07d.md", i), val)
			}
			root, blocks := tr.Flush()
			bs.Put(ctx, blocks...)
			treeBytes := 0
			for _, blk := range blocks {
				treeBytes += len(blk.Data)
			}
			b.ReportAllocs()
			b.ResetTimer()
			written, touched := 0, 0
			for i := 0; i < b.N; i++ {
				t, err := objects.LoadTree(ctx, bs, root)
				if err != nil {
					b.Fatal(err)
				}
				v := objects.NewValue([]byte(fmt.Sprint(i))).CID
				if _, err := t.Put(ctx, fmt.Sprintf("skills/s%07d.md", (i*7919)%n), v); err != nil {
					b.Fatal(err)
				}
				_, nb := t.Flush()
				touched += len(nb)
				for _, blk := range nb {
					written += len(blk.Data)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(written)/float64(b.N), "writeB/op")
			b.ReportMetric(float64(touched)/float64(b.N), "nodes/op")
			// Nodes one one-key diff reads.
			t, _ := objects.LoadTree(ctx, bs, root)
			t.Put(ctx, "skills/s0050000.md", objects.NewValue([]byte("x")).CID)
			other, nb := t.Flush()
			bs.Put(ctx, nb...)
			cs := &countingStore{BlockStore: bs}
			for range objects.DiffTrees(ctx, cs, root, other) {
			}
			b.ReportMetric(float64(cs.gets), "diffReads")
			b.ReportMetric(float64(len(blocks)), "nodes")
			b.ReportMetric(float64(treeBytes)/float64(n), "treeB/key")
		})
	}
}
