package badger_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

// A deferred write is held in memory and needs no room on the file system
// until the durable write that carries it: a runtime task's blocks, its
// receipt line and a cache record look up the free space once, at the HEAD
// move, not once each.
func TestDeferredWritesLookUpFreeSpaceOnce(t *testing.T) {
	ctx := context.Background()
	s, _ := createSync(t)
	defer s.Close()
	d := badger.Deferred(ctx)
	for i := range 3 {
		before := badger.FreeLookups()
		b := objects.NewValue(fmt.Appendf(nil, "value %d", i))
		if err := s.PutWithMeta(d, []objects.Block{b}, []byte(fmt.Sprintf("graph/%d", i)), []byte("rec")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendLines(d, "a", [][]byte{fmt.Appendf(nil, "line %d", i)}); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMeta(d, fmt.Sprintf("cache/%d", i), []byte("1")); err != nil {
			t.Fatal(err)
		}
		if got := badger.FreeLookups() - before; got != 0 {
			t.Fatalf("round %d: deferred writes looked up the free space %d times, want 0", i, got)
		}
		if err := s.SwapHead(ctx, "a", prevHead(i), uint64(i+1), []byte("entry"), headRec(i)); err != nil {
			t.Fatal(err)
		}
		if got := badger.FreeLookups() - before; got != 1 {
			t.Fatalf("round %d: a durable write carrying three deferred ones looked up the free space %d times, want 1", i, got)
		}
		if n := s.Writes(); n != int64(i+1) {
			t.Fatalf("round %d: %d Badger writes, want %d (one a round)", i, n, i+1)
		}
	}
}

func headRec(i int) []byte { return fmt.Appendf(nil, "head %d", i) }

func prevHead(i int) []byte {
	if i == 0 {
		return nil
	}
	return headRec(i - 1)
}
