//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Commit never renames over a FIFO (nor a device, a socket or a
// directory): it would leave a regular file where the FIFO was.
func TestCommitRefusesToReplaceAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "p")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(fifo, []byte("x"), 0o600)
	if !errors.Is(err, ErrNotAFile) {
		t.Fatalf("WriteFile over a FIFO: %v, want ErrNotAFile", err)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatalf("after the refusal %s is %v, %v; want the FIFO", fifo, fi.Mode(), err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want the FIFO alone (no temporary file left)", len(ents))
	}
	// A symbolic link is replaced, as a rename does.
	link := filepath.Join(dir, "l")
	if err := os.Symlink(fifo, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("x"), 0o600); err != nil {
		t.Fatalf("WriteFile over a symlink: %v", err)
	}
	if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("the symlink was not replaced by a file: %v, %v", fi, err)
	}
}
