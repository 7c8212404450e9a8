package repo_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
)

// An embedder names a store's errors through dag/repo alone: the store held
// by another process, a directory that is no store, and the options that
// open it.
func TestEmbedderMatchesStoreErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := repo.Open(dir, repo.Options{LockTimeout: -1}); !errors.Is(err, repo.ErrInUse) {
		t.Fatalf("second open of a held store: %v, want repo.ErrInUse", err)
	}
	plain := t.TempDir()
	var ns *repo.NotStoreError
	if _, err := repo.Open(plain, repo.Options{}); !errors.Is(err, repo.ErrNotStore) || !errors.As(err, &ns) || ns.Dir != plain || ns.HalfMade {
		t.Fatalf("open of a plain directory: %v, want repo.ErrNotStore naming it", err)
	}
	if _, err := repo.Find("", plain); !errors.Is(err, repo.ErrNoStore) {
		t.Fatalf("Find with no store: %v, want repo.ErrNoStore", err)
	}
	var dfe *repo.DiskFullError
	wrapped := fmt.Errorf("writing: %w", &repo.DiskFullError{Dir: dir, Need: 2 << 20, Have: 1 << 20})
	if !errors.Is(wrapped, repo.ErrDiskFull) || !errors.As(wrapped, &dfe) || dfe.Need != 2<<20 {
		t.Fatalf("a DiskFullError: Is %v, As %v", errors.Is(wrapped, repo.ErrDiskFull), errors.As(wrapped, &dfe))
	}
	// The library speaks its own voice: no command-line flags, environment
	// variables or commands in its errors (the CLI adds those).
	for _, e := range []error{errOf(repo.Open(dir, repo.Options{LockTimeout: -1})), errOf(repo.Open(plain, repo.Options{})),
		errOf(repo.Find("", plain)), wrapped, repo.ErrNotFastForward, repo.ErrDamaged} {
		if msg := e.Error(); strings.Contains(msg, "--") || strings.Contains(msg, "AGENTSTATE_") || strings.Contains(msg, "agentstate init") {
			t.Errorf("library error speaks the CLI's language: %q", msg)
		}
	}
}

func errOf[T any](_ T, err error) error { return err }
