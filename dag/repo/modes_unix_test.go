//go:build unix

package repo_test

import (
	"bytes"
	"context"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// While a store is open, every file and directory under it is the owner's
// only: Badger's live value log, memtable and LOCK, and the stat cache,
// whatever the umask the process started with.
func TestStoreFilesPrivateWhileOpen(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "s")
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// A value small enough for the memtable, one large enough for the
	// value log, and a stat cache record.
	if err := r.Blocks.Put(ctx, objects.NewValue([]byte("secret")), objects.NewValue(bytes.Repeat([]byte("s"), 300<<10))); err != nil {
		t.Fatal(err)
	}
	if err := r.StatCache().SetMeta("statcache/"+dir, []byte("x")); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		n := 0
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			fi, err := d.Info()
			if err != nil {
				return nil // removed meanwhile (a socket's private directory)
			}
			n++
			if m := fi.Mode().Perm(); m&0o077 != 0 {
				t.Errorf("%s: %s has mode %04o", when, p, m)
			}
			return nil
		})
		if n < 4 {
			t.Fatalf("%s: only %d entries under the store", when, n)
		}
	}
	check("open")
	// A second store opened and closed meanwhile does not lift the mask
	// while the first is still open.
	r2, err := repo.Init(filepath.Join(t.TempDir(), "s2"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r2.Close()
	if err := r.Blocks.Put(ctx, objects.NewValue(bytes.Repeat([]byte("t"), 300<<10))); err != nil {
		t.Fatal(err)
	}
	check("open, after another store closed")
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	check("closed")
	if m := syscall.Umask(0o022); m != 0o022 {
		t.Errorf("umask after the last close %04o, want the process's 0022 back", m)
	}
}
