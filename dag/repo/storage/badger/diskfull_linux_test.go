//go:build linux

package badger_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

// A full file system gives ErrDiskFull, never SIGBUS, and loses nothing that
// was stored (issue 13, finding 6).
func TestDiskFull(t *testing.T) {
	ctx := context.Background()
	fs := smallFS(t, "4m")
	dir := filepath.Join(fs, "s")
	s, err := badger.Create(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var kept []objects.Block
	for i := 0; ; i++ {
		if i > 100 {
			t.Fatal("a 4 MiB file system never filled")
		}
		n := 100 << 10
		if i%2 == 1 {
			n = 300 << 10 // above the value threshold: the value log
		}
		b := randomValue(t, n)
		err := s.Put(ctx, b)
		if errors.Is(err, badger.ErrDiskFull) {
			t.Logf("full after %d values: %v", len(kept), err)
			break
		}
		if err != nil {
			t.Fatalf("put %d: %v", i, err)
		}
		kept = append(kept, b)
	}
	if len(kept) == 0 {
		t.Fatal("nothing fit")
	}
	if err := s.SetMeta(context.Background(), "x", make([]byte, 1<<20)); !errors.Is(err, badger.ErrDiskFull) {
		t.Fatalf("SetMeta on a full store: %v, want ErrDiskFull", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close of a nearly full store: %v", err)
	}

	// Someone else takes the rest of the space.
	ballast := fillUp(t, fs)
	if _, err := badger.Open(dir, badger.Options{}); !errors.Is(err, badger.ErrDiskFull) {
		t.Fatalf("writable open with no space left: %v, want ErrDiskFull", err)
	}
	ro, err := badger.Open(dir, badger.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open with no space left: %v", err)
	}
	for _, b := range kept {
		if _, err := ro.Get(ctx, b.CID); err != nil {
			t.Fatalf("read-only get with no space left: %v", err)
		}
	}
	ro.Close()

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	s, err = badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatalf("open after freeing space: %v", err)
	}
	defer s.Close()
	for _, b := range kept {
		if _, err := s.Get(ctx, b.CID); err != nil {
			t.Fatalf("a value stored before the disk filled: %v", err)
		}
	}
	n := 0
	for _, err := range s.AllCIDs(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(kept) {
		t.Fatalf("%d blocks after reopening, want the %d stored", n, len(kept))
	}
}
