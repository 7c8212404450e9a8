// Package atomicfile is agentstate's one way to replace a file on disk:
// write a temporary file in the target's directory, fsync it, rename it over
// the target, fsync the directory. A reader sees the old file or the new
// one, never a part, and after a crash the rename is either durable or the
// old file is still there.
//
// The NoSync variants (CreateNoSync, WriteFileNoSync) skip both fsyncs: the
// replacement is still atomic for readers, but after a crash the old file,
// the new one or a truncated new one may be there. They are for files that
// can be recomputed and are checked when read back: stat caches (a damaged
// record is a cold cache) and checked-out working directories (the next
// checkout compares and rewrites them). Checkouts write thousands of files,
// and an fsync each would dominate their cost.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// File is a temporary file that becomes its target on Commit. Write to it
// like an *os.File; call Abort (safe after Commit, so defer it) to drop it.
type File struct {
	*os.File
	perm    os.FileMode
	noSync  bool
	done    bool
	pending int64 // bytes written since write-back was last started
}

// writeBackEvery is how many bytes a durable replacement writes between
// asking the kernel to start writing them back (see Write).
const writeBackEvery = 8 << 20

// startWriteBack starts the kernel writing the file's dirty pages to disk
// without waiting for them (a no-op where the system has no such call).
// A variable so that tests can count calls.
var startWriteBack = startWriteBackFile

// Write writes to the temporary file. A durable replacement asks the kernel
// to start writing back what was written every writeBackEvery bytes, so the
// disk writes while the caller produces the rest and Commit's fsync waits
// for the tail, not for the whole file (a large export would otherwise sit
// in the page cache until that fsync).
func (f *File) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	if !f.noSync {
		if f.pending += int64(n); f.pending >= writeBackEvery {
			f.pending = 0
			startWriteBack(f.File)
		}
	}
	return n, err
}

// Create starts a replacement in dir (a temporary file named by pattern, as
// os.CreateTemp names it) that Commit will give mode perm.
func Create(dir, pattern string, perm os.FileMode) (*File, error) {
	return create(dir, pattern, perm, false)
}

// CreateNoSync is Create for a replacement whose Commit does not fsync (see
// the package documentation for when that is right).
func CreateNoSync(dir, pattern string, perm os.FileMode) (*File, error) {
	return create(dir, pattern, perm, true)
}

func create(dir, pattern string, perm os.FileMode, noSync bool) (*File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, fmt.Errorf("atomicfile: %w", err)
	}
	return &File{File: f, perm: perm, noSync: noSync}, nil
}

// Commit makes the written bytes the file at path (in the directory the
// temporary file was created in, or another on the same file system).
func (f *File) Commit(path string) error {
	if f.done {
		return errors.New("atomicfile: already committed or aborted")
	}
	err := f.Chmod(f.perm)
	if err == nil && !f.noSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = replaceable(path)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		f.Abort()
		return fmt.Errorf("atomicfile: writing %s: %w", path, err)
	}
	f.done = true
	if f.noSync {
		return nil
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("atomicfile: writing %s: %w", path, err)
	}
	return nil
}

// ErrNotAFile: Commit's target exists and is neither a regular file nor a
// symbolic link (a device, a FIFO, a socket, a directory). A rename would
// put a regular file in its place (export -o /dev/null once replaced the
// device), so Commit refuses; writing into such a file is its caller's
// choice, not a replacement.
var ErrNotAFile = errors.New("not a regular file")

// replaceable says whether a rename may replace path: it does not exist, or
// it is a regular file or a symbolic link (the link is replaced, as a
// rename does).
func replaceable(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if m := fi.Mode(); !m.IsRegular() && m&fs.ModeSymlink == 0 {
		return fmt.Errorf("%w (%s)", ErrNotAFile, Kind(m))
	}
	return nil
}

// Kind names a file's type for a message ("a FIFO", "a directory", ...).
func Kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "not a regular file"
}

// Abort closes and removes the temporary file unless Commit succeeded.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.Close()
	os.Remove(f.Name())
}

// Write replaces path with what fn writes.
func Write(path string, perm os.FileMode, fn func(w io.Writer) error) error {
	return write(path, perm, false, fn)
}

// WriteFile replaces path with data.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return write(path, perm, false, writeAll(data))
}

// WriteFileNoSync replaces path with data without fsyncing (see the package
// documentation for when that is right).
func WriteFileNoSync(path string, data []byte, perm os.FileMode) error {
	return write(path, perm, true, writeAll(data))
}

func writeAll(data []byte) func(w io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

func write(path string, perm os.FileMode, noSync bool, fn func(w io.Writer) error) error {
	// The temporary name must fit NAME_MAX even when path's does exactly.
	base := filepath.Base(path)
	if len(base) > 64 {
		base = base[:64]
	}
	f, err := create(filepath.Dir(path), ".tmp-"+base+"-*", perm, noSync)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := fn(f); err != nil {
		return err
	}
	return f.Commit(path)
}

// SyncDir fsyncs a directory, making renames and creations in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
