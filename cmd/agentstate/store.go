package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/store"
)

func (e *env) storeDir() (string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return repo.Find(e.storeFlag, cwd)
}

// open opens the store for a command.
func (e *env) open() (*repo.Repo, error) {
	dir, err := e.storeDir()
	if err != nil {
		return nil, err
	}
	lt, err := lockTimeout()
	if err != nil {
		return nil, err
	}
	return repo.Open(dir, repo.Options{Sync: os.Getenv("AGENTSTATE_SYNC") == "1", LockTimeout: lt})
}

// lockTimeout reads AGENTSTATE_LOCK_TIMEOUT (see parseLockTimeout).
func lockTimeout() (time.Duration, error) {
	return parseLockTimeout(os.Getenv("AGENTSTATE_LOCK_TIMEOUT"))
}

// parseLockTimeout parses AGENTSTATE_LOCK_TIMEOUT: how long a command waits
// for another process to release the store, as a Go duration ("10s",
// "500ms") or a number of seconds; "0" fails at once. The result is a
// repo.Options.LockTimeout: 0 (unset) means store.DefaultLockTimeout, a
// negative value fails at once.
func parseLockTimeout(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		s, serr := strconv.ParseFloat(v, 64)
		if serr != nil || math.IsNaN(s) {
			return 0, usagef("AGENTSTATE_LOCK_TIMEOUT=%q: want a duration such as 10s or 500ms, or a number of seconds", v)
		}
		if s > float64(math.MaxInt64/int64(time.Second)) {
			return 0, usagef("AGENTSTATE_LOCK_TIMEOUT=%q: too long", v)
		}
		d = time.Duration(s * float64(time.Second))
		if s < 0 {
			d = -1
		}
	}
	if d < 0 {
		return 0, usagef("AGENTSTATE_LOCK_TIMEOUT=%q: must not be negative", v)
	}
	if d == 0 {
		d = -1 // store.Options: negative fails at once, zero is the default
	}
	return d, nil
}

// withRepo opens the store, runs fn and closes the store.
func (e *env) withRepo(fn func(r *repo.Repo) error) error {
	return e.withRepoMode(false, fn)
}

// withRepoRead is withRepo for commands that only read: the store is opened
// read-only (faster to open), falling back to a normal open when Badger
// refuses read-only (for example after an unclean shutdown, which a writer
// must replay first).
func (e *env) withRepoRead(fn func(r *repo.Repo) error) error {
	return e.withRepoMode(true, fn)
}

func (e *env) withRepoMode(readOnly bool, fn func(r *repo.Repo) error) error {
	var r *repo.Repo
	var err error
	if readOnly {
		dir, derr := e.storeDir()
		if derr != nil {
			return derr
		}
		lt, lerr := lockTimeout()
		if lerr != nil {
			return lerr
		}
		// A read-only open writes nothing. When Badger refuses it (an unclean
		// shutdown left logs a writer must replay), the writable open below
		// does the recovery, within the same free-space check as any write.
		r, err = repo.Open(dir, repo.Options{ReadOnly: true, LockTimeout: lt})
		if err != nil && !errors.Is(err, store.ErrInUse) && !errors.Is(err, store.ErrNotStore) && !errors.Is(err, store.ErrDiskFull) {
			r, err = e.open()
		}
	} else {
		r, err = e.open()
	}
	if err != nil {
		return err
	}
	err = fn(r)
	if cerr := r.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing store: %w", cerr)
	}
	return err
}
