//go:build linux

package badger_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// smallFS mounts a tmpfs of size bytes and unmounts it when the test ends. It
// needs root (CI runs as root); elsewhere the test is skipped.
func smallFS(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs to fill needs root")
	}
	dir := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("root without the right to mount (a restricted container): %v", err)
		}
		t.Fatalf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmounting %s: %v", dir, err)
		}
	})
	return dir
}

// fillUp writes a file in dir until the file system has no space left and
// returns its path.
func fillUp(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "ballast")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return p
			}
			t.Fatal(err)
		}
	}
}
