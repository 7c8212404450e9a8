package badger_test

import (
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
)

// Options.Locked runs once the open holds the store's lock: not while
// another open holds it, and not at all when the open gives up waiting.
func TestLockedRunsOnceTheLockIsHeld(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	first, err := badger.Create(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := badger.Open(dir, badger.Options{LockTimeout: -1, Locked: func() { t.Error("Locked ran for an open that did not get the lock") }}); !errors.Is(err, badger.ErrInUse) {
		t.Fatalf("open of a held store: %v, want ErrInUse", err)
	}
	var firstClosed atomic.Bool
	calls := make(chan bool, 2)
	opened := make(chan error, 1)
	go func() {
		s, err := badger.Open(dir, badger.Options{LockTimeout: 30 * time.Second, Locked: func() { calls <- firstClosed.Load() }})
		if err == nil {
			err = s.Close()
		}
		opened <- err
	}()
	time.Sleep(300 * time.Millisecond) // the second open waits for the lock meanwhile
	if len(calls) != 0 {
		t.Fatal("Locked ran while another open held the store")
	}
	firstClosed.Store(true)
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || !<-calls {
		t.Fatal("Locked did not run once, after the first open released the store")
	}
}
