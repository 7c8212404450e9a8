package badger_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

// modes returns the permission bits of dir and of every file in it.
func modes(t *testing.T, dir string) map[string]fs.FileMode {
	t.Helper()
	m := map[string]fs.FileMode{}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	m["."] = fi.Mode().Perm()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			m[e.Name()] = fi.Mode().Perm()
		}
	}
	return m
}

func checkPrivate(t *testing.T, dir string) {
	t.Helper()
	for name, m := range modes(t, dir) {
		want := fs.FileMode(badger.FileMode)
		if name == "." {
			want = badger.DirMode
		}
		if m != want {
			t.Errorf("%s has mode %04o, want %04o", name, m, want)
		}
	}
}

// The value log holds plaintext values: the store is the owner's only.
func TestStoreModes(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permission bits on Windows")
	}
	old := umask(0o022)
	defer umask(old)
	dir := filepath.Join(t.TempDir(), "s")
	s, err := badger.Create(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), objects.NewValue([]byte("secret"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkPrivate(t, dir)

	// A store made by an older build: 0755 directory, 0644 files.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name := range modes(t, dir) {
		if name != "." {
			if err := os.Chmod(filepath.Join(dir, name), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A read-only open changes nothing, not even modes.
	before := modes(t, dir)
	s, err = badger.Open(dir, badger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if after := modes(t, dir); !equalModes(before, after) {
		t.Fatalf("read-only open changed the store:\n before %v\n after  %v", before, after)
	}
	// A writable open tightens it.
	s, err = badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m := modes(t, dir)["."]; m != badger.DirMode {
		t.Errorf("directory mode %04o while open, want %04o", m, badger.DirMode)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkPrivate(t, dir)
}

func equalModes(a, b map[string]fs.FileMode) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// A read-only open writes nothing: same files, sizes and modification times.
func TestReadOnlyOpenWritesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	s, err := badger.Create(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), objects.NewValue([]byte("v"))); err != nil {
		t.Fatal(err)
	}
	s.Close()
	snap := func() map[string]string {
		m := map[string]string{}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			fi, _ := e.Info()
			m[e.Name()] = fmt.Sprint(fi.ModTime(), fi.Mode(), fi.Size())
		}
		return m
	}
	before := snap()
	time.Sleep(10 * time.Millisecond)
	s, err = badger.Open(dir, badger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.GetMeta(context.Background(), "format"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	after := snap()
	if len(before) != len(after) {
		t.Fatalf("read-only open changed the file set:\n before %v\n after  %v", before, after)
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("read-only open changed %s: %s -> %s", k, v, after[k])
		}
	}
}

// An open waits for the lock a bounded time, then fails with ErrInUse.
func TestLockWait(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	s, err := badger.Create(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = badger.Open(dir, badger.Options{LockTimeout: 150 * time.Millisecond})
	if !errors.Is(err, badger.ErrInUse) {
		t.Fatalf("open of a held store: %v, want ErrInUse", err)
	}
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Fatalf("gave up after %v, before the 150ms timeout", waited)
	}
	if _, err := badger.Open(dir, badger.Options{LockTimeout: -1}); !errors.Is(err, badger.ErrInUse) {
		t.Fatalf("open without waiting: %v, want ErrInUse", err)
	}

	released := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		released <- s.Close()
	}()
	s2, err := badger.Open(dir, badger.Options{LockTimeout: time.Minute})
	if err != nil {
		t.Fatalf("open after the holder closed: %v", err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	s2.Close()
}

func TestDiskFullError(t *testing.T) {
	err := error(&badger.DiskFullError{Dir: "/x", Need: 3 << 20, Have: 12 << 10})
	if !errors.Is(err, badger.ErrDiskFull) {
		t.Fatal("DiskFullError does not match ErrDiskFull")
	}
	want := "store: not enough free space in /x: need 3072 KiB, have 12 KiB (free some space and retry; nothing was written)"
	if err.Error() != want {
		t.Fatalf("message\n got  %s\n want %s", err, want)
	}
}

func randomValue(t testing.TB, n int) objects.Block {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return objects.NewValue(b)
}
