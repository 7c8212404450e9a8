package dag_test

import (
	"fmt"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// What readers keep decoded in a CommitCache is bounded by the costs they
// give (a reader cannot make a long-lived server hold every block it ever
// read), is kept while used, and gc's Forget drops it.
func TestDecodedBounded(t *testing.T) {
	cc := dag.WithCommitCache(memstore.New(), 16)
	id := func(i int) objects.CID { return objects.Sum(objects.CodecRaw, []byte(fmt.Sprint("block ", i))) }
	const cost = 64 << 10
	hot := id(-1)
	cc.KeepDecoded(hot, "hot", cost)
	for i := range 2000 { // 125 MiB of costs
		cc.KeepDecoded(id(i), i, cost)
		if _, ok := cc.Decoded(hot); !ok {
			t.Fatalf("an entry read after every keep was forgotten after %d keeps", i+1)
		}
	}
	held := 0
	for i := range 2000 {
		if v, ok := cc.Decoded(id(i)); ok {
			if v != i {
				t.Fatalf("entry %d holds %v", i, v)
			}
			held++
		}
	}
	if held == 0 || held*cost > 12<<20 {
		t.Fatalf("%d entries of %d bytes held", held, cost)
	}
	cc.Forget(hot)
	if _, ok := cc.Decoded(hot); ok {
		t.Fatal("Forget left the entry")
	}
}
