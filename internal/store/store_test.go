package store_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/internal/store"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/blockstoretest"
)

func TestConformance(t *testing.T) {
	blockstoretest.Run(t, func(t *testing.T) (objects.BlockStore, func(objects.CID, []byte)) {
		s, err := store.Create(t.TempDir(), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s, s.CorruptForTest
	})
}

func TestInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	s, err := store.Create(dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = store.Open(dir, store.Options{LockTimeout: -1})
	if !errors.Is(err, store.ErrInUse) {
		t.Fatalf("second open: %v, want ErrInUse", err)
	}
}

func TestOpenNotStore(t *testing.T) {
	if _, err := store.Open(filepath.Join(t.TempDir(), "absent"), store.Options{}); !errors.Is(err, store.ErrNotStore) {
		t.Fatalf("open of absent dir: %v", err)
	}
}

// A process killed right after Badger created a log file leaves it empty;
// the store must still open.
func TestOpenAfterEmptyLogFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	s, err := store.Create(dir, store.Options{})
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
	s, err = store.Open(dir, store.Options{})
	if err != nil {
		t.Fatalf("open with empty log files: %v", err)
	}
	defer s.Close()
	if got, err := s.Get(context.Background(), b.CID); err != nil || string(got) != "kept" {
		t.Fatalf("Get after reopen: %q %v", got, err)
	}
}
