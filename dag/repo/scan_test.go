package repo_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
)

// getCounting is in-memory storage that counts the blocks read from it
// one at a time (Get), beside its one-pass scan.
type getCounting struct {
	*memory.Storage
	gets atomic.Int64
}

func (s *getCounting) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	s.gets.Add(1)
	return s.Storage.Get(ctx, c)
}

// unscanned is the same storage without the one-pass scan (as a served
// store's client is): every command reads block by block.
type unscanned struct {
	*memory.Storage
	ScanBlocks struct{} // hides the scan
}

// scanHistory writes 60 commits to agent "a" of s: three of 200 nested keys
// each, and a chunked value rewritten every 20th. It returns a plain value,
// a tree node and a chunk of a chunked value reachable from HEAD.
func scanHistory(t *testing.T, s repo.Storage) (r *repo.Repo, value, node, chunk objects.CID) {
	t.Helper()
	ctx := context.Background()
	r = repo.New(s)
	clock := int64(1_700_000_000)
	r = r.WithClock(func() int64 { clock++; return clock })
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 60 {
		var blocks []objects.Block
		puts := map[string]objects.CID{}
		for range 3 {
			k := fmt.Sprintf("d%d/e%d/k%d", rng.IntN(4), rng.IntN(5), rng.IntN(10))
			v := objects.NewValue(fmt.Appendf(nil, "%s %d %x", k, i, rng.Uint64()))
			blocks = append(blocks, v)
			puts[k] = v.CID
		}
		if i%20 == 0 {
			content := make([]byte, 3*objects.ChunkThreshold)
			for n := range content {
				content[n] = byte(rng.Uint32())
			}
			v, bs := objects.NewFileValue(content)
			blocks = append(blocks, bs...)
			puts["big"] = v
		}
		if _, err := r.Edit(ctx, repo.EditRequest{Agent: "a", Message: fmt.Sprint("commit ", i), Create: true, Blocks: blocks,
			Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) {
				for k, v := range puts {
					if _, err := tr.Put(ctx, k, v); err != nil {
						return false, err
					}
				}
				return true, nil
			}}); err != nil {
			t.Fatal(err)
		}
	}
	hc, err := r.Commit(ctx, mustHead(t, r))
	if err != nil {
		t.Fatal(err)
	}
	node = hc.Tree
	head, err := objects.LoadTree(ctx, r.Blocks, hc.Tree)
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range head.Entries(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		k, v := e.Key, e.Value
		if k == "big" {
			data, err := r.Blocks.Get(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			links, err := objects.ChunkLinks(data)
			if err != nil {
				t.Fatal(err)
			}
			chunk = links[len(links)/2]
		} else if value.IsZero() {
			value = v
		}
	}
	if value.IsZero() || chunk.IsZero() || chunk.Codec() != objects.CodecRaw {
		t.Fatalf("value %s chunk %s", value, chunk)
	}
	return r, value, node, chunk
}

func mustHead(t *testing.T, r *repo.Repo) objects.CID {
	t.Helper()
	h, _, err := r.HeadCommit(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// Verify reads the store in one pass: after it, the only blocks read one by
// one are the chunks of chunked values (read again in order for the
// content's sha256); before, every reachable block was its own read. Its
// report is the one the block-by-block walk gives.
func TestVerifyReadsTheStoreOnce(t *testing.T) {
	ctx := context.Background()
	cs := &getCounting{Storage: memory.New()}
	r, _, _, _ := scanHistory(t, cs)
	chunkSet := map[objects.CID]bool{}
	for c, err := range cs.AllCIDs(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		data, _ := cs.Storage.Get(ctx, c)
		if links, err := objects.ChunkLinks(data); err == nil && c.Codec() == objects.CodecDagCBOR {
			for _, l := range links {
				chunkSet[l] = true
			}
		}
	}
	chunks := len(chunkSet)
	cs.gets.Store(0)
	rep, err := repo.New(cs).Verify(ctx)
	if err != nil || len(rep.Problems) > 0 {
		t.Fatal(err, rep.Problems)
	}
	if got := cs.gets.Load(); got > int64(chunks) {
		t.Fatalf("verify read %d blocks one by one; the chunks of chunked values are %d, the store %d blocks", got, chunks, rep.Blocks)
	}
	if rep.Hashed == 0 || rep.Hashed != rep.Scanned {
		t.Fatalf("the scan read %d bytes and re-hashed %d", rep.Scanned, rep.Hashed)
	}
	plain, err := repo.New(&unscanned{Storage: cs.Storage}).Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rep.Scanned, rep.Hashed = 0, 0
	if !reflect.DeepEqual(rep, plain) {
		t.Fatalf("scanned %+v, block by block %+v", rep, plain)
	}
	_ = r
}

// A block whose bytes no longer match its CID is reported by the scanning
// verify as by the block-by-block one, whether it is a plain value, a tree
// node or a chunk of a chunked value.
func TestVerifyScanFindsCorruptBlocks(t *testing.T) {
	ctx := context.Background()
	for _, which := range []string{"value", "node", "chunk"} {
		t.Run(which, func(t *testing.T) {
			ms := memory.New()
			_, value, node, chunk := scanHistory(t, ms)
			bad := map[string]objects.CID{"value": value, "node": node, "chunk": chunk}[which]
			ms.Corrupt(bad, []byte("rotted"))
			for name, s := range map[string]repo.Storage{"scanned": ms, "block by block": &unscanned{Storage: ms}} {
				rep, err := repo.New(s).Verify(ctx)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, p := range rep.Problems {
					found = found || strings.Contains(p, bad.String())
				}
				if !found {
					t.Fatalf("%s: %s %s corrupt, problems %q", name, which, bad, rep.Problems)
				}
			}
		})
	}
}

// du reads the store in one pass and nothing one by one after it, and
// counts what the block-by-block walk counts.
func TestDiskUsageReadsTheStoreOnce(t *testing.T) {
	ctx := context.Background()
	cs := &getCounting{Storage: memory.New()}
	scanHistory(t, cs)
	// Some garbage: blocks nothing reaches.
	if err := cs.Put(ctx, objects.NewValue([]byte("stray")), objects.NewValue([]byte("stray 2"))); err != nil {
		t.Fatal(err)
	}
	cs.gets.Store(0)
	u, err := repo.New(cs).DiskUsage(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.gets.Load(); got != 0 {
		t.Fatalf("du read %d blocks one by one after its scan", got)
	}
	plain, err := repo.New(&unscanned{Storage: cs.Storage}).DiskUsage(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(u, plain) {
		t.Fatalf("scanned %+v\nblock by block %+v", u, plain)
	}
	if u.Store.Reclaimable != 2 || len(u.Commits) != 60 || u.Store.LiveBlocks == 0 {
		t.Fatalf("%+v", u.Store)
	}
}

// du's count of the live blocks through the scan (gc's walk marking one
// set of bits, started from what the history walked) is gc's: with a
// forget's cut in one agent's history, a fork that needs what lies behind
// the cut, a tag, and garbage, for either agent and for none.
func TestDiskUsageScanCountsWhatGCKeeps(t *testing.T) {
	ctx := context.Background()
	ms := memory.New()
	r, _, _, _ := scanHistory(t, ms)
	log := logCIDs(t, r, "a")
	// b forks at the commit a's forget will make its horizon: a's walk
	// stops there, b's must go on below it.
	if _, err := r.Fork(ctx, "a", log[1], "b"); err != nil {
		t.Fatal(err)
	}
	if err := r.SetTag(ctx, "a", "old", log[40]); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Forget(ctx, "a", repo.Policy{Last: 2}, false); err != nil {
		t.Fatal(err)
	}
	if err := ms.Put(ctx, objects.NewValue([]byte("stray"))); err != nil {
		t.Fatal(err)
	}
	gcKeeps, err := r.GC(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, agent := range []string{"a", "b", ""} {
		u, err := repo.New(ms).DiskUsage(ctx, agent)
		if err != nil {
			t.Fatal(err)
		}
		plain, err := repo.New(&unscanned{Storage: ms}).DiskUsage(ctx, agent)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(u, plain) {
			t.Fatalf("agent %q: scanned %+v\nblock by block %+v", agent, u.Store, plain.Store)
		}
		if u.Store.LiveBlocks != gcKeeps.Kept || u.Store.Reclaimable != gcKeeps.Deleted || u.Store.Reclaimable != 1 {
			t.Fatalf("agent %q: du %+v, gc keeps %d and would delete %d", agent, u.Store, gcKeeps.Kept, gcKeeps.Deleted)
		}
	}
}

// logCIDs is agent's history, newest first.
func logCIDs(t *testing.T, r *repo.Repo, agent string) []objects.CID {
	t.Helper()
	ctx := context.Background()
	h, err := r.Refs.Head(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	var out []objects.CID
	for c := h.Commit; !c.IsZero(); {
		out = append(out, c)
		cm, err := r.Commit(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(cm.Parents) == 0 {
			break
		}
		c = cm.Parents[0]
	}
	return out
}

// A tree node whose bytes no longer match its CID stops du, through the
// scan (its nodes decoded before the walk) as block by block.
func TestDiskUsageScanStopsAtACorruptNode(t *testing.T) {
	ctx := context.Background()
	ms := memory.New()
	_, _, node, _ := scanHistory(t, ms)
	ms.Corrupt(node, []byte("rotted"))
	for name, s := range map[string]repo.Storage{"scanned": ms, "block by block": &unscanned{Storage: ms}} {
		if _, err := repo.New(s).DiskUsage(ctx, "a"); err == nil || !strings.Contains(err.Error(), node.String()) {
			t.Fatalf("%s: du of a store whose tree node %s rotted: %v", name, node, err)
		}
	}
}
