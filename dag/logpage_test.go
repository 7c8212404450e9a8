package dag_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// Pages of a log, each going on from the frontier the one before left, are
// the whole log in its order, whatever the page size: over histories of
// many lines that merge, with runs of commits in one second (groups of one
// time split between pages).
func TestLogPagesAreTheLog(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	now := int64(1_700_000_000)
	r = r.WithClock(func() int64 { return now })
	tree, err := r.EmptyTree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 9))
	for round := range 12 {
		var tips []objects.CID
		var top objects.CID
		for i := range 60 {
			if rng.IntN(3) == 0 {
				now++ // else: the same second as the commit before
			}
			var parents []objects.CID
			switch {
			case len(tips) == 0:
			case len(tips) > 1 && rng.IntN(4) == 0: // a merge of two lines
				a, b := rng.IntN(len(tips)), rng.IntN(len(tips)-1)
				if b >= a {
					b++
				}
				parents = []objects.CID{tips[a], tips[b]}
				tips = slices.Delete(tips, max(a, b), max(a, b)+1)
				tips = slices.Delete(tips, min(a, b), min(a, b)+1)
			case rng.IntN(4) == 0: // a new line from an existing one
				parents = []objects.CID{tips[rng.IntN(len(tips))]}
			default:
				k := rng.IntN(len(tips))
				parents = []objects.CID{tips[k]}
				tips = slices.Delete(tips, k, k+1)
			}
			id, _, err := r.WriteCommit(ctx, repo.CommitSpec{Tree: tree, Parents: parents, Message: fmt.Sprint(round, " ", i)})
			if err != nil {
				t.Fatal(err)
			}
			tips = append(tips, id)
			top = id
		}
		for len(tips) > 1 { // everything joins into one top
			now++
			id, _, err := r.WriteCommit(ctx, repo.CommitSpec{Tree: tree, Parents: tips[len(tips)-2:], Message: "join"})
			if err != nil {
				t.Fatal(err)
			}
			tips = append(tips[:len(tips)-2], id)
			top = id
		}
		var whole []objects.CID
		for le, err := range dag.Log(ctx, r.Blocks, top) {
			if err != nil {
				t.Fatal(err)
			}
			whole = append(whole, le.CID)
		}
		for _, size := range []int{1, 2, 3, 7, 50} {
			var paged []objects.CID
			var frontier []objects.CID
			for pages := 0; ; pages++ {
				if pages > len(whole) {
					t.Fatalf("round %d, pages of %d: no end", round, size)
				}
				n := 0
				next, err := dag.LogPage(ctx, r.Blocks, top, frontier, dag.LogOptions{}, func(le dag.LogEntry) (bool, error) {
					paged = append(paged, le.CID)
					n++
					return n < size, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(next) > 0 && n != size {
					t.Fatalf("round %d: a page of %d commits, want %d", round, n, size)
				}
				if next == nil {
					break
				}
				frontier = next
			}
			if !slices.Equal(paged, whole) {
				t.Fatalf("round %d, pages of %d: %d commits paged, %d in the log, or in another order", round, size, len(paged), len(whole))
			}
		}
	}
}
