package badger_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

// create makes a fresh store, closed at the test's end. (The conformance
// suites run from dag/repo/storage's conformance_test.go.)
func create(t *testing.T) *badger.Store {
	s, err := badger.Create(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	s, err := badger.Create(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = badger.Open(dir, badger.Options{LockTimeout: -1})
	if !errors.Is(err, badger.ErrInUse) {
		t.Fatalf("second open: %v, want ErrInUse", err)
	}
}

func TestOpenNotStore(t *testing.T) {
	if _, err := badger.Open(filepath.Join(t.TempDir(), "absent"), badger.Options{}); !errors.Is(err, badger.ErrNotStore) {
		t.Fatalf("open of absent dir: %v", err)
	}
}

// A process killed right after Badger created a log file leaves it empty;
// the store must still open.
func TestOpenAfterEmptyLogFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	s, err := badger.Create(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := objects.NewValue([]byte("kept"))
	if err := s.Put(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, name := range []string{"00099.mem", "000099.vlog"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err = badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatalf("open with empty log files: %v", err)
	}
	defer s.Close()
	if got, err := s.Get(context.Background(), b.CID); err != nil || string(got) != "kept" {
		t.Fatalf("Get after reopen: %q %v", got, err)
	}
}

// An in-memory store holds blocks of every size a value can have (a raw
// value of exactly 1 MiB included, which Badger's own in-memory mode cannot
// hold), and leaves nothing behind when closed.
func TestInMemoryStore(t *testing.T) {
	ctx := context.Background()
	s, err := badger.Create("", badger.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	var blocks []objects.Block
	for _, n := range []int{1, 256 << 10, 300 << 10, objects.ChunkThreshold} {
		blocks = append(blocks, objects.NewValue(bytes.Repeat([]byte{byte(n)}, n)))
	}
	if err := s.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		got, err := s.Get(ctx, b.CID)
		if err != nil || !bytes.Equal(got, b.Data) {
			t.Fatalf("block of %d bytes: %d bytes, %v", len(b.Data), len(got), err)
		}
	}
	before, _ := filepath.Glob(filepath.Join("/dev/shm", "agentstate-mem-*"))
	before2, _ := filepath.Glob(filepath.Join(os.TempDir(), "agentstate-mem-*"))
	if len(before)+len(before2) == 0 {
		t.Fatal("no ephemeral directory while the store is open")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	after, _ := filepath.Glob(filepath.Join("/dev/shm", "agentstate-mem-*"))
	after2, _ := filepath.Glob(filepath.Join(os.TempDir(), "agentstate-mem-*"))
	if len(after)+len(after2) >= len(before)+len(before2) {
		t.Fatalf("the ephemeral directory outlived Close: %v %v", after, after2)
	}
	if _, err := badger.Open("", badger.Options{InMemory: true}); err == nil {
		t.Fatal("an in-memory store opened")
	}
}

// An Open reads the store's format record from the one Badger database it
// opens: a whole store, read-only or not, and a store whose creation was cut
// short (reported as half-made) each cost one Badger open, not a probe
// open and then the real one.
func TestOpenOpensBadgerOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	s, err := badger.Create(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, ro := range []bool{false, true} {
		before := badger.Opens()
		s, err := badger.Open(dir, badger.Options{ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if n := badger.Opens() - before; n != 1 {
			t.Fatalf("Open (read-only %v) opened Badger %d times, want 1", ro, n)
		}
	}
	half := filepath.Join(t.TempDir(), "half")
	os.Mkdir(half, 0o700)
	raw, err := badger.OpenRaw(half)
	if err != nil {
		t.Fatal(err)
	}
	raw.Close()
	before := badger.Opens()
	var ns *badger.NotStoreError
	if _, err := badger.Open(half, badger.Options{}); !errors.As(err, &ns) || !ns.HalfMade || !errors.Is(err, badger.ErrNotStore) {
		t.Fatalf("open of a store without its format record: %v, want a half-made NotStoreError", err)
	}
	if n := badger.Opens() - before; n != 1 {
		t.Fatalf("Open of a half-made store opened Badger %d times, want 1", n)
	}
	// A store directory holding a user's file too is not half-made.
	os.WriteFile(filepath.Join(half, "notes.txt"), []byte("x"), 0o600)
	if _, err := badger.Open(half, badger.Options{}); !errors.Is(err, badger.ErrNotStore) || errors.As(err, &ns) && ns.HalfMade {
		t.Fatalf("open of a store without its format record beside a user's file: %v", err)
	}
}
