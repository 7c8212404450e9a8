package badger

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	badger "github.com/dgraph-io/badger/v4"
)

// Badger memory-maps its memtable write-ahead logs, value logs and new tables
// as sparse files. When the file system fills, a store to a mapped page that
// has no block behind it kills the process with SIGBUS (no error is possible),
// so a store checks for room before every write instead: it refuses with a
// *DiskFullError while there is still enough space for everything Badger may
// write because of that write, including the memtable flush and the level-0
// compaction Close does.
const (
	memTableSize     = 8 << 20
	valueLogFileSize = 64 << 20
	// spaceSlack covers Badger's own small writes: the first page of a new
	// memtable log and value log, DISCARD, MANIFEST and KEYREGISTRY records,
	// the pid file, and the file-system overhead of the files created.
	spaceSlack = 1 << 20
)

// DiskFullError reports that the file system holding a store has too little
// free space for an open or a write. Nothing was written. It matches ErrDiskFull.
type DiskFullError struct {
	Dir  string
	Need int64 // bytes needed (the write and Badger's headroom for it)
	Have int64 // bytes free
}

func (e *DiskFullError) Error() string {
	return fmt.Sprintf("store: not enough free space in %s: need %s, have %s (free some space and retry; nothing was written)",
		e.Dir, humanBytes(e.Need), humanBytes(e.Have))
}

// Is reports whether target is ErrDiskFull.
func (e *DiskFullError) Is(target error) bool { return target == ErrDiskFull }

func humanBytes(n int64) string {
	switch {
	case n >= 10<<20:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 10<<10:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// checkFree returns a *DiskFullError when fewer than need bytes are free on
// the file system holding dir.
func checkFree(dir string, need int64) error {
	freeLookups.Add(1)
	have, ok, err := freeBytes(dir)
	if err != nil {
		return fmt.Errorf("store: checking free space in %s: %w", dir, err)
	}
	if ok && have < need {
		return &DiskFullError{Dir: dir, Need: need, Have: have}
	}
	return nil
}

// diskUse is what an unopened store's files say about the writes opening it
// may cause.
type diskUse struct {
	memData  int64 // allocated bytes of memtable logs (replayed, flushed by Close)
	l0       int64 // bytes of level-0 tables
	l0Tables int   // how many level-0 tables there are
	base     int64 // bytes of the highest non-empty level below 0 (compaction target)
}

// compaction is the most a level-0 compaction writes: all of level 0 plus the
// tables of the level it merges into (block keys are hashes, so every table
// of that level overlaps).
func (u diskUse) compaction() int64 { return u.l0 + u.base }

// readDiskUse measures a store directory without opening it: memtable logs by
// their allocated blocks (they are sparse), tables by size and level as the
// MANIFEST records them.
func readDiskUse(dir string) (diskUse, error) {
	var u diskUse
	ents, err := os.ReadDir(dir)
	if err != nil {
		return u, nil // Badger reports a missing or unreadable directory itself
	}
	sizes := map[uint64]int64{}
	for _, e := range ents {
		name := e.Name()
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		switch {
		case strings.HasSuffix(name, ".mem"):
			u.memData += allocatedBytes(fi, fi.Size())
		case strings.HasSuffix(name, ".sst"):
			if id, err := strconv.ParseUint(strings.TrimSuffix(name, ".sst"), 10, 64); err == nil {
				sizes[id] = fi.Size()
			}
		}
	}
	if len(sizes) == 0 {
		return u, nil
	}
	f, err := os.Open(filepath.Join(dir, badger.ManifestFilename))
	if err != nil {
		return u, nil // Badger reports it
	}
	defer f.Close()
	m, _, err := badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir))
	if err != nil {
		// Unreadable here means Badger refuses it too; count every table as
		// a compaction input so the estimate stays an upper bound.
		for _, n := range sizes {
			u.l0 += n
		}
		u.l0Tables = len(sizes)
		return u, nil
	}
	levels := map[uint8]int64{}
	for id, t := range m.Tables {
		levels[t.Level] += sizes[id]
		if t.Level == 0 {
			u.l0Tables++
		}
	}
	u.l0 = levels[0]
	for l := uint8(1); l < 32; l++ {
		if levels[l] > 0 {
			u.base = levels[l]
			break
		}
	}
	return u, nil
}

// openNeed is the free space a writable open needs even if nothing is
// written: Close flushes the replayed memtables into a level-0 table and then
// compacts level 0 (that table included) into the next level.
func (u diskUse) openNeed() int64 {
	return spaceSlack + u.memData + (u.l0 + u.memData + u.base)
}

// writeNeed is the free space a write of n bytes needs: the bytes themselves
// (memtable log or value log), the table the memtable becomes when it is
// flushed (the data pending a flush plus n), and the level-0 compaction that
// follows, which rewrites that table with level 0 and the next level.
func (s *Store) writeNeed(n int64) int64 {
	var l0, base int64
	for _, li := range s.db.Levels() {
		switch {
		case li.Level == 0:
			l0 = li.Size
		case base == 0 && li.Size > 0:
			base = li.Size
		}
	}
	flush := min(s.pending.Load(), memTableSize) + n
	return spaceSlack + n + flush + (l0 + flush + base)
}

// checkWrite refuses a write of about n bytes that the file system may not
// have room for. The write reaches Badger with every deferred write held so
// far (deferred.go), so their bytes count too: a deferred write is in
// memory until then and is not checked on its own (checkHeld).
func (s *Store) checkWrite(n int64) error {
	if s.dir == "" {
		return nil
	}
	if err := checkFree(s.dir, s.writeNeed(n+int64(s.held.size()))); err != nil {
		return err
	}
	s.pending.Add(n)
	return nil
}

// checkHeld is checkWrite for a deferred write of about n bytes: held in
// memory, it needs no room on the file system until the write that carries
// it reaches Badger, which checks for it then (checkWrite, flushHeld). Only
// a deferred write that brings the held writes past maxHeld, and so is
// written at once, is checked here, before anything is held: a refused
// write holds nothing.
func (s *Store) checkHeld(n int64) error {
	held := int64(s.held.size())
	if s.dir == "" || held+n <= maxHeld {
		return nil
	}
	return checkFree(s.dir, s.writeNeed(held+n))
}

// checkRoom is checkHeld for a write ctx defers (Deferred), checkWrite
// for any other.
func (s *Store) checkRoom(ctx context.Context, n int64) error {
	if s.deferring(ctx) {
		return s.checkHeld(n)
	}
	return s.checkWrite(n)
}

// freeLookups counts the file system's free-space lookups of write checks
// (tests).
var freeLookups atomic.Int64
