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

// Deferred writes are checked for room when they reach the file system:
// the durable write that would carry more than the disk can take is
// refused with ErrDiskFull and writes nothing (the held writes stay held,
// readable), a deferred write that would have to be written at once
// (past MaxHeld) is refused before it is held, and the store reopens
// with everything written durably before.
func TestDiskFullDeferred(t *testing.T) {
	ctx := context.Background()
	fs := smallFS(t, "12m")
	dir := filepath.Join(fs, "s")
	s, err := badger.Create(dir, badger.Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	durable := randomValue(t, 64<<10)
	if err := s.Put(ctx, durable); err != nil {
		t.Fatal(err)
	}
	ballast := filepath.Join(fs, "ballast")
	if err := os.WriteFile(ballast, make([]byte, 6<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	d := badger.Deferred(ctx)
	var held []objects.Block
	for len(held)*(256<<10) < badger.MaxHeld-(256<<10) {
		b := randomValue(t, 256<<10)
		if err := s.Put(d, b); err != nil {
			t.Fatalf("deferred put %d (%d KiB held, in memory): %v", len(held), len(held)*256, err)
		}
		held = append(held, b)
	}
	if err := s.SetMeta(ctx, "x", []byte("1")); !errors.Is(err, badger.ErrDiskFull) {
		t.Fatalf("durable write carrying %d KiB held on a full disk: %v, want ErrDiskFull", len(held)*256, err)
	}
	if _, ok, err := s.GetMeta(ctx, "x"); ok || err != nil {
		t.Fatalf("the refused write's record: %v, %v; want none", ok, err)
	}
	for _, b := range held {
		if _, err := s.Get(ctx, b.CID); err != nil {
			t.Fatalf("a held block after the refusal: %v", err)
		}
	}
	past := randomValue(t, 512<<10)
	if err := s.Put(d, past); !errors.Is(err, badger.ErrDiskFull) {
		t.Fatalf("deferred put past MaxHeld on a full disk: %v, want ErrDiskFull", err)
	}
	if ok, err := s.Has(ctx, past.CID); ok || err != nil {
		t.Fatalf("the refused deferred block: %v, %v; want not held", ok, err)
	}
	if err := s.Close(); !errors.Is(err, badger.ErrDiskFull) {
		t.Fatalf("close with held writes that do not fit: %v, want ErrDiskFull", err)
	}
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	s, err = badger.Open(dir, badger.Options{Sync: true})
	if err != nil {
		t.Fatalf("open after freeing space: %v", err)
	}
	defer s.Close()
	if _, err := s.Get(ctx, durable.CID); err != nil {
		t.Fatalf("the block written durably before: %v", err)
	}
	for _, b := range held {
		if ok, err := s.Has(ctx, b.CID); ok || err != nil {
			t.Fatalf("a deferred block that never fit: %v, %v; want lost with the close", ok, err)
		}
	}
}
