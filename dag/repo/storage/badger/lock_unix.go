//go:build unix

package badger

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes the store's own lock: an flock on LockFile, exclusive for a
// writer, shared for a reader, as Badger locks its directory. Taking it
// before Badger opens makes a busy store a typed condition (errLocked)
// rather than a Badger message, and covers the maintenance done before
// Badger opens (removing empty logs, fixing modes).
func lockDir(dir string, shared bool) (*os.File, error) {
	p := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, FileMode)
	if err != nil && shared {
		f, err = os.Open(p) // a reader of a store it may not write
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil // nothing to lock: Badger's own shared lock remains
		}
	}
	if err != nil {
		return nil, err
	}
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	for {
		err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, err
	}
	return f, nil
}

// holdDir takes an exclusive lock on the directory itself, without waiting.
func holdDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store: locking %s: %w", dir, err)
	}
	return f, nil
}
