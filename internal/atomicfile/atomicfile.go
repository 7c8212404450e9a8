// Package atomicfile is agentstate's one way to replace a file on disk:
// write a temporary file in the target's directory, fsync it, rename it over
// the target, fsync the directory. A reader sees the old file or the new
// one, never a part, and after a crash the rename is either durable or the
// old file is still there.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File is a temporary file that becomes its target on Commit. Write to it
// like an *os.File; call Abort (safe after Commit, so defer it) to drop it.
type File struct {
	*os.File
	perm os.FileMode
	done bool
}

// Create starts a replacement in dir (a temporary file named by pattern, as
// os.CreateTemp names it) that Commit will give mode perm.
func Create(dir, pattern string, perm os.FileMode) (*File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, fmt.Errorf("atomicfile: %w", err)
	}
	return &File{File: f, perm: perm}, nil
}

// Commit makes the written bytes the file at path (in the directory the
// temporary file was created in, or another on the same file system).
func (f *File) Commit(path string) error {
	if f.done {
		return errors.New("atomicfile: already committed or aborted")
	}
	err := f.Chmod(f.perm)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		f.Abort()
		return fmt.Errorf("atomicfile: writing %s: %w", path, err)
	}
	f.done = true
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("atomicfile: writing %s: %w", path, err)
	}
	return nil
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
	f, err := Create(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*", perm)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := fn(f); err != nil {
		return err
	}
	return f.Commit(path)
}

// WriteFile replaces path with data.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
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
