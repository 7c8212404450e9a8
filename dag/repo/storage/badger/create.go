package badger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// A store is created whole or not at all. Create builds it in a private
// directory beside its target (newPrefix + the target's name + a random
// tail), writes its format record, closes it and only then moves it into
// place: by one rename when the target does not exist, or, into an empty
// directory that does, entry by entry with the marker (MANIFEST) last. A
// process killed at any instant therefore leaves either no store at the
// target, or a whole one, or entries without a marker that HalfMade
// recognises and Create replaces. Building directories left behind by a
// killed Create are removed by the next Create beside them, once no process
// holds their lock.

// newPrefix begins the name of the directory a store is built in.
const newPrefix = ".agentstate-new-"

// madeNames reports whether name is one a store puts in its directory:
// Badger's files, the store's lock and socket, the stat caches and the
// push staging directory.
func madeNames(name string) bool {
	switch name {
	case markerFile, "MANIFEST-REWRITE", "KEYREGISTRY", "KEYREGISTRY-REWRITE", "DISCARD", "LOCK",
		LockFile, "agentstate.sock", "statcache", "tmp":
		return true
	}
	for _, ext := range []string{".sst", ".vlog", ".mem"} {
		if strings.HasSuffix(name, ext) && strings.Trim(strings.TrimSuffix(name, ext), "0123456789") == "" {
			return true
		}
	}
	return false
}

// HalfMade reports whether dir holds a store whose creation was
// interrupted: entries a store makes and nothing else, without a marker, or
// a marker whose database never received its format record. Such a
// directory holds nothing of a user's, so Create may replace it.
func HalfMade(dir string) bool {
	if !onlyMadeNames(dir) {
		return false
	}
	if !IsStoreDir(dir) {
		return true
	}
	s, err := open(dir, Options{ReadOnly: true, LockTimeout: -1})
	if err != nil {
		return false
	}
	defer s.Close()
	_, ok, err := s.GetMeta(context.Background(), "format")
	return err == nil && !ok
}

// onlyMadeNames reports whether dir has entries and all of them are names
// a store makes (madeNames).
func onlyMadeNames(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return false
	}
	for _, e := range ents {
		if !madeNames(e.Name()) {
			return false
		}
	}
	return true
}

// createWhole makes a store at dir as described above and opens it.
func createWhole(dir string, opts Options) (*Store, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved
	}
	exists := false
	switch fi, err := os.Stat(dir); {
	case err == nil && !fi.IsDir():
		return nil, fmt.Errorf("store: %s is not a directory", dir)
	case err == nil:
		exists = true
		if HalfMade(dir) {
			if err := clearMade(dir); err != nil {
				return nil, err
			}
		} else if ents, err := os.ReadDir(dir); err != nil {
			return nil, fmt.Errorf("store: reading %s: %w", dir, err)
		} else if len(ents) > 0 {
			return nil, fmt.Errorf("store: %s is not empty", dir)
		}
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("store: %s: %w", dir, err)
	}
	parent, base := filepath.Split(dir)
	if err := os.MkdirAll(parent, 0o777); err != nil {
		return nil, fmt.Errorf("store: creating %s: %w", parent, err)
	}
	if err := checkFree(parent, diskUse{}.openNeed()); err != nil {
		return nil, err
	}
	removeAbandoned(parent, base)
	tmp, err := os.MkdirTemp(parent, newPrefix+base+"-")
	if err != nil {
		return nil, fmt.Errorf("store: creating a store beside %s: %w", dir, err)
	}
	// The building directory is always locked: by this process before and
	// after the store is open in it, by Badger's directory lock while it is.
	hold, err := holdDir(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, err
	}
	defer func() { hold.Close() }()
	built := false
	defer func() {
		if !built {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, DirMode); err != nil {
		return nil, fmt.Errorf("store: setting the mode of %s: %w", tmp, err)
	}
	hold.Close()
	s, err := initFormat(tmp, opts)
	if err != nil {
		hold = nil
		return nil, err
	}
	if err := s.Close(); err != nil {
		hold = nil
		return nil, fmt.Errorf("store: initialising %s: %w", dir, err)
	}
	if hold, err = holdDir(tmp); err != nil {
		return nil, err
	}
	if err := syncDir(tmp); err != nil {
		return nil, err
	}
	if !exists {
		if err := os.Rename(tmp, dir); err != nil {
			return nil, fmt.Errorf("store: moving the new store to %s: %w", dir, err)
		}
		built = true
	} else {
		if err := moveEntries(tmp, dir); err != nil {
			return nil, err
		}
		if err := os.Chmod(dir, DirMode); err != nil {
			return nil, fmt.Errorf("store: setting the mode of %s: %w", dir, err)
		}
	}
	if err := syncDir(parent); err != nil {
		return nil, err
	}
	hold.Close() // the lock moved with the directory: Badger takes its own
	hold = nil
	return open(dir, opts)
}

// initFormat opens a new store in the empty directory dir and writes its
// format record, the first thing any store holds.
func initFormat(dir string, opts Options) (*Store, error) {
	s, err := open(dir, opts)
	if err != nil {
		return nil, err
	}
	if err := s.SetMeta(context.Background(), "format", []byte(FormatVersion)); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: initialising %s: %w", dir, err)
	}
	return s, nil
}

// moveEntries moves every entry of from into the empty directory to, the
// marker last, makes to durable, and removes from.
func moveEntries(from, to string) error {
	ents, err := os.ReadDir(from)
	if err != nil {
		return fmt.Errorf("store: reading %s: %w", from, err)
	}
	var names []string
	for _, e := range ents {
		if e.Name() != markerFile {
			names = append(names, e.Name())
		}
	}
	names = append(names, markerFile)
	for i, n := range names {
		if i == len(names)-1 {
			if err := syncDir(to); err != nil { // every other entry is in place first
				return err
			}
		}
		if err := os.Rename(filepath.Join(from, n), filepath.Join(to, n)); err != nil {
			return fmt.Errorf("store: moving the new store into %s: %w", to, err)
		}
	}
	if err := syncDir(to); err != nil {
		return err
	}
	return os.RemoveAll(from)
}

// clearMade removes the entries of a half-made store (HalfMade).
func clearMade(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("store: reading %s: %w", dir, err)
	}
	// The marker first: from here on the directory is never taken for a store.
	for _, e := range ents {
		if e.Name() == markerFile {
			if err := os.Remove(filepath.Join(dir, markerFile)); err != nil {
				return fmt.Errorf("store: replacing the half-made store in %s: %w", dir, err)
			}
		}
	}
	for _, e := range ents {
		if e.Name() == markerFile || !madeNames(e.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("store: replacing the half-made store in %s: %w", dir, err)
		}
	}
	return nil
}

// abandonedAfter is how long a building directory must have been left
// alone before another Create removes it.
const abandonedAfter = time.Minute

// removeAbandoned removes the building directories of stores meant for
// parent/base that no live Create holds.
func removeAbandoned(parent, base string) {
	ents, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range ents {
		n := e.Name()
		if !e.IsDir() || !strings.HasPrefix(n, newPrefix+base+"-") {
			continue
		}
		p := filepath.Join(parent, n)
		if fi, err := e.Info(); err != nil || time.Since(fi.ModTime()) < abandonedAfter {
			continue // perhaps between the locks of a Create at work
		}
		f, err := holdDir(p)
		if err != nil {
			continue // held by a Create still at work, or gone
		}
		os.RemoveAll(p)
		f.Close()
	}
}

// syncDir makes dir's entries durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("store: syncing %s: %w", dir, err)
	}
	return nil
}
