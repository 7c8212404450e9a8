package dag

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

// The log's queue pops entries newest first, then highest CID, whatever
// the order of pushes and pops: held to a sorted list of what it holds.
func TestLogQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	entry := func(i int) LogEntry {
		return LogEntry{CID: objects.NewValue([]byte(fmt.Sprint(i))).CID, Commit: &objects.Commit{Time: int64(rng.IntN(5))}}
	}
	newer := func(a, b LogEntry) int { // ascending: the one to pop first sorts last
		if a.Commit.Time != b.Commit.Time {
			return int(a.Commit.Time - b.Commit.Time)
		}
		return a.CID.Compare(b.CID)
	}
	for round := range 200 {
		var q logQueue
		var ref []LogEntry
		for i := range 60 {
			if rng.IntN(3) > 0 || len(ref) == 0 {
				e := entry(round*100 + i)
				q.push(e)
				ref = append(ref, e)
				continue
			}
			slices.SortFunc(ref, newer)
			want := ref[len(ref)-1]
			ref = ref[:len(ref)-1]
			if got := q.pop(); got.CID != want.CID {
				t.Fatalf("round %d: popped %s (time %d), want %s (time %d)", round, got.CID.Short(), got.Commit.Time, want.CID.Short(), want.Commit.Time)
			}
		}
		for len(ref) > 0 {
			slices.SortFunc(ref, newer)
			want := ref[len(ref)-1]
			ref = ref[:len(ref)-1]
			if got := q.pop(); got.CID != want.CID {
				t.Fatalf("round %d, draining: popped %s, want %s", round, got.CID.Short(), want.CID.Short())
			}
		}
		if q.Len() != 0 {
			t.Fatalf("round %d: %d left", round, q.Len())
		}
	}
}
