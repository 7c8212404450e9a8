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
