// Package badger is agentstate's Badger implementation of a repository's
// storage (dag/repo.Storage), the one repo.Open and repo.Init use: one Badger key space holding blocks
// (objects.BlockStore, verified on read), HEAD records and operation logs
// (refs.Store, refstore.go), receipt tapes (tape.Store, tapestore.go) and
// metadata records. It alone knows the key layout, and it owns the
// single-process lock (agentstate.lock), the free-space checks and the file
// modes. An embedder may name its options (Options) and its errors
// (ErrInUse, ErrNotStore, ErrDiskFull; NotStoreError, DiskFullError with
// errors.As); dag/repo re-exports the errors under the same names.
// (Inside this package the name badger is the Badger library's.)
//
// Key layout (first byte is the namespace; docs/format.md §7):
//
//	'b' + CID bytes            block bytes
//	'h' + agent                HEAD record (refs.Head as JSON)
//	'o' + agent + 0x00 + seq   operation-log entry (refs.Entry as JSON), seq big-endian uint64
//	'r' + agent + 0x00 + seq   receipt-tape line, seq big-endian uint64
//	'm' + name                 metadata (format version, bundle-hash cache, snapshot records, operator keys)
//	'p' + id                   pack record: blocks gc stores together (pack.go)
package badger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentstate/agentstate/objects"
	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Namespaces.
const (
	nsBlock = 'b'
	nsHead  = 'h'
	nsOp    = 'o'
	nsMeta  = 'm'
	nsTape  = 'r'
	// nsReclaim holds Reclaim's marker key, dropped at once (see Reclaim).
	nsReclaim = 'z'
)

// FormatVersion is the on-disk layout version recorded at 'm'+"format".
const FormatVersion = "agentstate-store-1"

var (
	// ErrInUse: another process held the store's lock for longer than
	// Options.LockTimeout.
	ErrInUse    = errors.New("store: in use by another process")
	ErrNotStore = errors.New("store: not an agentstate store")
	// ErrDiskFull: the file system has too little free space for an open or
	// a write (see DiskFullError); nothing was written.
	ErrDiskFull = errors.New("store: not enough free space")
)

// NotStoreError: Dir is not an agentstate store, or (HalfMade) a store
// whose creation was cut short, which Create makes anew. It matches
// ErrNotStore.
type NotStoreError struct {
	Dir      string
	HalfMade bool
}

func (e *NotStoreError) Error() string {
	if e.HalfMade {
		return ErrNotStore.Error() + ": " + e.Dir + ": its creation was cut short"
	}
	return ErrNotStore.Error() + ": " + e.Dir
}

// Is reports whether target is ErrNotStore.
func (e *NotStoreError) Is(target error) bool { return target == ErrNotStore }

// DefaultLockTimeout is how long an open waits for another process to
// release the store when Options.LockTimeout is zero.
const DefaultLockTimeout = 5 * time.Second

// Modes of the store directory and its files: the value log holds plaintext
// values, so only the owner may read them.
const (
	DirMode  = 0o700
	FileMode = 0o600
)

// Options tune a store.
type Options struct {
	// Sync makes every write durable (fsync) before it returns, except the
	// writes made with a context from Deferred, which the next durable
	// write carries (deferred.go). Without it a killed process loses nothing
	// that returned (the OS holds it), but a power failure may lose the
	// latest writes; it never tears a write.
	Sync bool
	// InMemory makes Create build an ephemeral store, in a private
	// directory under /dev/shm when it has 1 GiB free (else the temporary
	// directory) that Close removes (tests, benchmarks, short-lived
	// runtimes).
	InMemory bool
	// ReadOnly opens without taking the write lock. Not combinable with a
	// concurrent writer in another process (Badger refuses). A read-only
	// open writes nothing to the store directory.
	ReadOnly bool
	// LockTimeout is how long an open waits, retrying with backoff, while
	// another process holds the store, before it fails with ErrInUse: zero
	// means DefaultLockTimeout, a negative value fails at once.
	LockTimeout time.Duration
	// Locked, when set, is called once the open holds the store's lock
	// (an in-memory store's at once), before Badger opens the store: work
	// that must wait for another writer of the store but needs nothing of
	// it starts there and runs beside Badger's open (a commit's scan of its
	// directory).
	Locked func()
}

// Store is an open agentstate database. It is safe for concurrent use.
type Store struct {
	db      *badger.DB
	lock    *os.File     // the held LockFile (nil in memory)
	dir     string       // "" when read-only: no space checks, no mode fixes
	pending atomic.Int64 // bytes written (or replayed) that may still be flushed into a table
	umask   func()       // releases the process umask held while the store is open (umask_unix.go)
	remove  string       // an ephemeral store's directory, removed on Close
	heads   headCache    // HEAD records read (refstore.go)
	mapped  string       // the directory as the kernel names it, for shedMapped
	moved   atomic.Int64 // block bytes written or read since the last shedMapped
	sync    bool         // Options.Sync: deferred writes are held (deferred.go)
	held    held
	writes  atomic.Int64 // Badger writes (transactions, batches) made by update and the batches

	taskRec atomic.Pointer[TaskRecorder] // writes the task record of each tape line (taskrecstore.go)
	packs   packCache                    // decompressed packs (pack.go)
	lsizes  atomic.Int32                 // whether list size records are held (listsize.go)

	shedHook func() // tests: runs in shed before shedMapped

	// The shedder of a writing store (noteWritten).
	wroteAt    atomic.Int64 // the last block write (Unix ns)
	shedBase   atomic.Int64 // sharedResident after the last shed
	shedding   atomic.Bool  // the shedder runs
	shedMu     sync.Mutex   // guards starting and stopping it
	shedClosed bool         // Close has stopped it for good
	shedStop   chan struct{}
	shedDone   chan struct{}
}

// shedEvery is how many block bytes a store moves through Badger's mapped
// files between two shedMapped calls: the resident pages of its files stay
// below about this much whatever the size of what is written or read.
const shedEvery = 32 << 20

// ShedResident drops the pages of the store's mapped files from the
// process's resident set now (a server does after a large request).
func (s *Store) ShedResident() {
	if s.mapped != "" {
		s.moved.Store(0)
		s.shed()
	}
}

// noteMoved counts n bytes of blocks written or read and sheds the mapped
// pages of the store's files every shedEvery bytes.
func (s *Store) noteMoved(n int) {
	if s.mapped == "" {
		return
	}
	if s.moved.Add(int64(n)) >= shedEvery {
		s.moved.Store(0)
		s.shed()
	}
}

// While a store writes blocks it also sheds every shedTick (50 ms) that
// found its mapped pages grown by shedGrowth since the last shed, until
// shedIdle after its last write: Badger's flushes and compactions read and
// write its tables through the same mappings, most of all while a long
// write (a commit of a million files) waits for them, when the writer
// moves nothing. Without it such a commit's tables were up to 417 MB of
// its 979 MB peak (docs/performance.md, "a sixth time").
const shedIdle = 2 * time.Second

// shedGrowth is how much the process's mapped pages must have grown since
// the last shed for the shedder to shed (shedEvery; a variable for the
// tests).
var shedGrowth = func() *atomic.Int64 {
	var v atomic.Int64
	v.Store(shedEvery)
	return &v
}()

// shedTick is the shedder's period (ns): a variable for the tests, which
// hold it off.
var shedTick = func() *atomic.Int64 {
	var v atomic.Int64
	v.Store(int64(50 * time.Millisecond))
	return &v
}()

// noteWritten is noteMoved for blocks written, which also keeps the
// shedder running (see shedTick).
func (s *Store) noteWritten(n int) {
	s.noteMoved(n)
	if s.mapped == "" {
		return
	}
	s.wroteAt.Store(time.Now().UnixNano())
	if s.shedding.Load() {
		return
	}
	s.shedMu.Lock()
	defer s.shedMu.Unlock()
	if s.shedding.Load() || s.shedClosed {
		return
	}
	s.shedding.Store(true)
	s.shedStop, s.shedDone = make(chan struct{}), make(chan struct{})
	go s.shedWhileWriting(s.shedStop, s.shedDone)
}

// shedWhileWriting sheds every shedTick until the store has written
// nothing for shedIdle, or stop is closed.
func (s *Store) shedWhileWriting(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(time.Duration(shedTick.Load()))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if time.Now().UnixNano()-s.wroteAt.Load() > int64(shedIdle) {
			s.shedMu.Lock()
			idle := time.Now().UnixNano()-s.wroteAt.Load() > int64(shedIdle)
			if idle {
				s.shedding.Store(false) // a write from now on starts another
			}
			s.shedMu.Unlock()
			if idle {
				return
			}
		}
		// Only when the mapped pages grew by shedGrowth since the last shed:
		// dropping pages a writer keeps using (the memtable's log, the
		// tables' indexes) makes it fault them in again.
		if sharedResident()-s.shedBase.Load() >= shedGrowth.Load() {
			s.shed()
		}
	}
}

// stopShedding ends the shedder for good (Close, before Badger closes).
func (s *Store) stopShedding() {
	s.shedMu.Lock()
	s.shedClosed = true
	running, stop, done := s.shedding.Load(), s.shedStop, s.shedDone
	s.shedMu.Unlock()
	if running {
		close(stop)
		<-done
		s.shedding.Store(false)
	}
}

// shed drops the pages of the store's mapped files from the process's
// resident set (shedMapped), with an iterator over every table and
// memtable open meanwhile. shedMapped names the mappings by the addresses
// it has just listed; Badger unmaps a table, or a memtable's log, only once
// nothing references it (a compaction's old tables, a flushed memtable), so
// while the iterator holds them none can be unmapped, and its addresses
// taken by other memory, before they are dropped. (Badger also defers
// deleting value-log files while an iterator is open.)
func (s *Store) shed() {
	_ = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		if s.shedHook != nil {
			s.shedHook()
		}
		shedMapped(s.mapped)
		s.shedBase.Store(sharedResident())
		return nil
	})
}

// minShmFree is the free space /dev/shm must have to hold in-memory stores.
const minShmFree = 1 << 30

// ephemeralDir makes the private directory of an in-memory store: under
// /dev/shm (memory) where it is a writable directory with minShmFree bytes
// free, else the system's temporary directory. (Badger's own in-memory mode cannot hold values of
// its maximum value threshold, 1 MiB, or more, and agentstate's raw values
// reach exactly that size; one mechanism, the ordinary store, serves both.)
func ephemeralDir() (string, error) {
	for i, base := range []string{"/dev/shm", os.TempDir()} {
		if fi, err := os.Stat(base); err != nil || !fi.IsDir() {
			continue
		}
		// A small /dev/shm (a container's 64 MiB) would soon refuse writes
		// as a full disk: memory only when there is room.
		if free, ok, err := freeBytes(base); i == 0 && (err != nil || !ok || free < minShmFree) {
			continue
		}
		if d, err := os.MkdirTemp(base, "agentstate-mem-*"); err == nil {
			return filepath.Join(d, "store"), nil
		}
	}
	return "", errors.New("store: no directory for an in-memory store (/dev/shm and the temporary directory are not writable)")
}

// Create initialises a new store in dir (created if missing; must be empty,
// absent, or a store whose creation was interrupted: HalfMade) and opens it,
// whole or not at all (create.go). With opts.InMemory dir is ignored: the store is
// ephemeral (see ephemeralDir) and goes away on Close.
func Create(dir string, opts Options) (*Store, error) {
	if opts.InMemory {
		tmp, err := ephemeralDir()
		if err != nil {
			return nil, err
		}
		opts.InMemory = false
		// Private and removed on Close: nothing to build beside it.
		s, err := func() (*Store, error) {
			if err := os.Mkdir(tmp, DirMode); err != nil {
				return nil, fmt.Errorf("store: creating %s: %w", tmp, err)
			}
			return initFormat(tmp, opts)
		}()
		if err != nil {
			os.RemoveAll(filepath.Dir(tmp))
			return nil, err
		}
		s.remove = tmp
		return s, nil
	}
	return createWhole(dir, opts)
}

// Open opens an existing store.
func Open(dir string, opts Options) (*Store, error) {
	if opts.InMemory {
		return nil, errors.New("store: an in-memory store is created (Create), not opened")
	}
	if !IsStoreDir(dir) {
		return nil, &NotStoreError{Dir: dir, HalfMade: HalfMade(dir)}
	}
	// Badger is opened once: the format record read here is also what tells
	// a store whose creation was cut short (HalfMade) from a whole one.
	s, err := open(dir, opts)
	if err != nil {
		return nil, err
	}
	v, ok, err := s.get(metaKey("format"))
	if err != nil || string(v) != FormatVersion {
		s.Close()
		if err == nil && !ok && onlyMadeNames(dir) {
			return nil, &NotStoreError{Dir: dir, HalfMade: true}
		}
		if err == nil {
			err = fmt.Errorf("format %q, this build reads %q", v, FormatVersion)
		}
		return nil, fmt.Errorf("%w: %s: %w", ErrNotStore, dir, err)
	}
	return s, nil
}

// tableCompression is how Badger compresses the LSM tree's table blocks as
// it writes them: not at all. Each table's own compression is in the
// MANIFEST, so tables older builds wrote with ZSTD or Snappy stay
// readable and are rewritten as compactions reach them. A point read of a
// compressed table decompresses a whole 16 KiB block into fresh memory for
// one 4 KiB page or tree node; an uncompressed block is read where Badger
// maps the file. An unserved 64 MiB diff took 0.90x the wall time and
// 0.88x the CPU without it (docs/performance.md, "Where a person waits, a
// fourth time"), for SQLite pages about 1.2x the space between gcs. What
// a store keeps for long is compressed by gc's packs (one ZSTD frame per
// group, docs/format.md "Packs"), in the value log; their pointers in the
// tables are short.
var tableCompression = options.None

// blockCacheSize is the size of Badger's cache of table blocks: none. It
// holds blocks decompressed, and this build's tables are not compressed:
// their blocks are read where Badger maps the file, so the cache saved
// nothing and cost every open its creation (two Ristretto caches'
// counters and goroutines): an unserved log --oneline took 0.96x the wall
// time without it, a 64 MiB diff --stat 0.99x (docs/performance.md,
// "Where a person waits, a fourth time"). Tables older builds compressed
// are decompressed at every read until a compaction (gc's, or the level-0
// merge) rewrites them. A variable for the tests, which count the blocks a
// read takes through the cache's metrics.
var blockCacheSize int64 = 0

// blockCache is the block cache to open Badger with: blockCacheSize, or,
// when the tables are to be written compressed (the tests write them as
// older builds did), the 32 MiB Badger then requires.
func blockCache() int64 {
	if tableCompression != options.None && blockCacheSize == 0 {
		return 32 << 20
	}
	return blockCacheSize
}

// opens counts the Badger databases this process has opened (the tests
// check that an Open opens one).
var opens atomic.Int64

// compactL0At is how many level-0 tables a store must hold when it is
// opened for its close to compact level 0. Each short writer's close leaves
// one table, so the merge (which rewrites the whole next level) comes every
// compactL0At+1 closes: at 3 it was a third of the CPU of a run of
// workload-22 commits, at 7 half that; reads, which look into every
// level-0 table, measured no slower with 7 than with 3
// (docs/performance.md, "Unserved writes and the engine, again").
const compactL0At = 7

// levelZeroBackground is the level-0 table count at which Badger compacts
// in the background: above what a store is opened with (compactL0At), so a
// short process's work is not joined by a merge its close must wait for; a
// long writer (a runtime, a large import) makes that many in-process.
const levelZeroBackground = compactL0At + 2

func open(dir string, opts Options) (*Store, error) {
	// Tuned for a short-lived CLI as much as for a long-running runtime
	// (docs/performance.md): opening allocates and maps a memtable and a
	// value-log file, so both are kept small; values under 16 KiB (tree
	// nodes, commits, SQLite pages, small files) live in the LSM tree, in
	// uncompressed tables (tableCompression); larger ones
	// (content-defined chunks, which are at least 16 KiB) go to the value
	// log, written once: through the LSM
	// tree, whose keys are hashes, every compaction rewrote them (a 2 GiB
	// put wrote 17 GB and took 8 GB of memory). L0 is compacted on close
	// once it holds compactL0At tables (see below), so they do not pile up
	// across many short processes.
	bo := badger.DefaultOptions(dir).
		WithLogger(nil).
		WithSyncWrites(opts.Sync).
		WithNumVersionsToKeep(1).
		WithReadOnly(opts.ReadOnly).
		WithMemTableSize(memTableSize).
		WithValueThreshold(16 << 10).
		WithValueLogFileSize(valueLogFileSize).
		WithCompression(tableCompression).
		WithBlockSize(16 << 10).
		WithBlockCacheSize(blockCache()).
		// No index cache: Badger consults it only for encrypted tables;
		// an unencrypted table's index is read where the file is mapped.
		// Creating the cache (a Ristretto cache, its counters, metrics
		// and goroutine) was a cost of every open.
		WithIndexCacheSize(0).
		WithNumCompactors(2).
		WithNumLevelZeroTables(levelZeroBackground).
		WithNumLevelZeroTablesStall(2 * levelZeroBackground).
		WithDetectConflicts(true)
	writable := !opts.InMemory && !opts.ReadOnly
	release := func() {}
	if writable {
		release = holdUmask() // Badger's files are owner-only from their first instant
	}
	var lock *os.File
	if !opts.InMemory {
		var err error
		if lock, err = lockWait(dir, opts.ReadOnly, opts.LockTimeout); err != nil {
			release()
			return nil, err
		}
	}
	if opts.Locked != nil {
		opts.Locked()
	}
	fail := func(err error) (*Store, error) {
		if lock != nil {
			lock.Close()
		}
		release()
		return nil, err
	}
	var use diskUse
	if writable {
		var err error
		if use, err = readDiskUse(dir); err != nil {
			return fail(err)
		}
		if err := checkFree(dir, use.openNeed()); err != nil {
			return fail(err)
		}
		if err := removeEmptyLogs(dir); err != nil {
			return fail(err)
		}
		if err := tighten(dir); err != nil {
			return fail(err)
		}
	}
	// A level-0 compaction merges level 0 into the whole next level (block
	// keys are hashes, so every table there overlaps): in a short process,
	// most of its close. Compacting once level 0 holds compactL0At tables,
	// not at every close, keeps level 0 small (at most compactL0At tables
	// when a store is opened, one more while it is), below the count at
	// which Badger starts compacting in the background
	// (levelZeroBackground), and spares most short writes the merge. An
	// in-memory store is removed at close.
	bo = bo.WithCompactL0OnClose(writable && use.l0Tables >= compactL0At)
	db, err := badger.Open(bo)
	if err != nil {
		return fail(fmt.Errorf("store: opening %s: %w", dir, err))
	}
	opens.Add(1)
	s := &Store{db: db, lock: lock, umask: release, sync: opts.Sync && !opts.ReadOnly}
	if abs, err := filepath.Abs(dir); err == nil {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			s.mapped = real
			s.shed() // what opening read (table indexes, the log replayed)
		}
	}
	if writable {
		s.dir = dir
		s.pending.Store(use.memData)
	}
	return s, nil
}

// errLocked is what lockDir returns while another process holds the lock.
var errLocked = errors.New("store: locked")

// LockFile is the file in the store directory that the store's lock is
// taken on.
const LockFile = "agentstate.lock"

// lockWait takes the store's lock, retrying with backoff while another
// process holds it, for at most timeout (zero: DefaultLockTimeout; negative:
// no wait).
func lockWait(dir string, shared bool, timeout time.Duration) (*os.File, error) {
	if timeout == 0 {
		timeout = DefaultLockTimeout
	}
	deadline := time.Now().Add(timeout)
	delay := 5 * time.Millisecond
	for {
		f, err := lockDir(dir, shared)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, errLocked) {
			return nil, fmt.Errorf("store: locking %s: %w", dir, err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("%w: %s: still held after %v", ErrInUse, dir, max(timeout, 0).Round(time.Millisecond))
		}
		time.Sleep(min(delay, left))
		delay = min(delay*2, 200*time.Millisecond)
	}
}

// tighten gives the store directory and its subdirectories DirMode and its
// files FileMode. Badger creates its files with mode 0666 less the umask and
// has no option for it: while a store is open the process umask is 077
// (umask_unix.go), and the modes of files an older build or another program
// left are fixed again on every writable open and close. A store shared by a group that the
// current user does not own is left as it is.
func tighten(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil // Badger reports it
	}
	if fi.Mode().Perm() != DirMode {
		if err := os.Chmod(dir, DirMode); err != nil && !errors.Is(err, os.ErrPermission) {
			return fmt.Errorf("store: setting the mode of %s: %w", dir, err)
		}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	for _, e := range ents {
		want := fs.FileMode(FileMode)
		switch {
		case e.Type().IsDir():
			want = DirMode // the stat cache, staging directories
		case !e.Type().IsRegular():
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().Perm() != want {
			_ = os.Chmod(filepath.Join(dir, e.Name()), want) // best effort: the directory mode protects it
		}
	}
	return nil
}

// removeEmptyLogs deletes zero-length memtable (.mem) and value-log (.vlog)
// files. Badger creates such a file and then sizes it; a process killed in
// between leaves an empty file that Badger refuses to open ("Create a new
// file"). An empty log holds no data, so removing it loses nothing.
func removeEmptyLogs(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil // Badger reports a missing or unreadable directory itself
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".mem") && !strings.HasSuffix(name, ".vlog") {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("store: removing empty log %s left by an interrupted process: %w", name, err)
			}
		}
	}
	return nil
}

// Close flushes and closes the database.
func (s *Store) Close() error {
	s.stopShedding()
	err := s.flushHeld()
	if cerr := s.db.Close(); err == nil {
		err = cerr
	}
	if s.dir != "" {
		_ = tighten(s.dir) // files created since open
	}
	if s.lock != nil {
		s.lock.Close() // releases the flock
	}
	if s.remove != "" {
		os.RemoveAll(filepath.Dir(s.remove))
	}
	if s.umask != nil {
		s.umask()
	}
	return err
}

func metaKey(name string) []byte { return append([]byte{nsMeta}, name...) }

func blockKey(c objects.CID) []byte {
	b := c.Bytes()
	k := make([]byte, 1+len(b))
	k[0] = nsBlock
	copy(k[1:], b)
	return k
}

// Get returns a block's bytes after re-hashing them.
func (s *Store) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	if v, ok := s.held.get(blockKey(c)); ok {
		return bytes.Clone(v), nil // held in memory as it was written
	}
	var data []byte
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(blockKey(c))
		if err != nil {
			return err
		}
		data, err = s.blockValue(txn, c, it)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, &objects.NotFoundError{CID: c}
	}
	var pe *PackError
	if errors.As(err, &pe) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("store: reading block %s: %w", c, err)
	}
	if err := objects.Verify(c, data); err != nil {
		return nil, err
	}
	s.noteMoved(len(data))
	return data, nil
}

// GetBatch reads blocks in one read transaction (objects.BlockBatchReader),
// each re-hashed as Get re-hashes it: a reader that knows the blocks it is
// about to read pays for one transaction, not one a block.
func (s *Store) GetBatch(ctx context.Context, cids []objects.CID, fn func(i int, data []byte, err error)) error {
	return s.db.View(func(txn *badger.Txn) error {
		for i, c := range cids {
			if err := ctx.Err(); err != nil {
				return err
			}
			if v, ok := s.held.get(blockKey(c)); ok {
				fn(i, bytes.Clone(v), nil)
				continue
			}
			var data []byte
			it, err := txn.Get(blockKey(c))
			if err == nil {
				data, err = s.blockValue(txn, c, it)
			}
			var pe *PackError
			switch {
			case errors.Is(err, badger.ErrKeyNotFound):
				err = &objects.NotFoundError{CID: c}
			case errors.As(err, &pe):
			case err != nil:
				err = fmt.Errorf("store: reading block %s: %w", c, err)
			default:
				err = objects.Verify(c, data)
			}
			if err != nil {
				fn(i, nil, err)
				continue
			}
			s.noteMoved(len(data))
			fn(i, data, nil)
		}
		return nil
	})
}

// Has reports whether the block is stored.
func (s *Store) Has(ctx context.Context, c objects.CID) (bool, error) {
	if _, ok := s.held.get(blockKey(c)); ok {
		return true, nil
	}
	err := s.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(blockKey(c))
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Put stores blocks not already present. Blocks are content-addressed and
// immutable, so a crash part-way leaves only unreferenced blocks (gc removes
// them); callers write blocks before the refs that reach them.
func (s *Store) Put(ctx context.Context, blocks ...objects.Block) error {
	return s.PutWithMeta(ctx, blocks)
}

// Reclaim gives the space Delete freed back to the file system. It is best
// effort. Values up to the value threshold live in the LSM tree, where a
// deleted block's bytes go only when a compaction meets its tombstone. The
// tombstones are flushed from the memtable first: Badger has no call for
// that, but dropping a prefix flushes every memtable, so Reclaim writes one
// marker key in a namespace of its own and drops that namespace. Then
// Flatten compacts every level into one, table by table, so the extra space
// it needs is a few tables, not the store. Larger values live in the value
// log, whose files mostly garbage are then rewritten.
func (s *Store) Reclaim() {
	if s.checkWrite(valueLogFileSize) != nil {
		return
	}
	marker := []byte{nsReclaim}
	if s.db.Update(func(txn *badger.Txn) error { return txn.Set(marker, nil) }) == nil && s.db.DropPrefix(marker) == nil {
		s.db.Flatten(2)
	}
	for i := 0; i < 16 && s.db.RunValueLogGC(0.5) == nil; i++ {
	}
}

// Scrub is Reclaim for a redaction: it also rewrites every value-log file
// that holds any deleted value, however little (Reclaim rewrites only files
// mostly garbage), so the deleted bytes leave the files. The value-log file
// this process is writing is never rewritten (Badger's own rule): a block
// this process wrote stays in it until the store is closed and scrubbed again.
func (s *Store) Scrub() {
	s.Reclaim()
	for i := 0; i < 1024 && s.db.RunValueLogGC(1e-9) == nil; i++ {
	}
}

// Delete removes blocks (gc only).
func (s *Store) Delete(ctx context.Context, cids ...objects.CID) error {
	if err := s.checkWrite(int64(len(cids)) * 64); err != nil {
		return err
	}
	keys := make([][]byte, 0, len(cids))
	for _, c := range cids {
		keys = append(keys, blockKey(c))
	}
	// A list node's size record goes with it (listsize.go).
	recs, err := s.listSizeKeys(cids)
	if err != nil {
		return err
	}
	keys = append(keys, recs...)
	s.held.drop(keys)
	if err := s.flushHeld(); err != nil {
		return err
	}
	// A pack holding a deleted block goes too, its other blocks stored
	// whole first (pack.go): no pack keeps a deleted block's bytes.
	packs, err := s.unpackFor(ctx, cids)
	if err != nil {
		return err
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, k := range keys {
		if err := wb.Delete(k); err != nil {
			return err
		}
	}
	if err := wb.Flush(); err != nil {
		return err
	}
	for _, id := range packs {
		if err := s.dropPackIfUnused(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// AllCIDs yields every stored block's CID.
func (s *Store) AllCIDs(ctx context.Context) iter.Seq2[objects.CID, error] {
	return func(yield func(objects.CID, error) bool) {
		txn := s.db.NewTransaction(false)
		defer txn.Discard()
		o := badger.DefaultIteratorOptions
		o.PrefetchValues = false
		o.Prefix = []byte{nsBlock}
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				yield(objects.CID{}, err)
				return
			}
			c, err := objects.CIDFromBytes(it.Item().Key()[1:])
			if err != nil {
				if !yield(objects.CID{}, fmt.Errorf("store: bad block key %x: %w", it.Item().Key(), err)) {
					return
				}
				continue
			}
			if !yield(c, nil) {
				return
			}
		}
	}
}

// ScanBlocks implements objects.BlockScanner: the block keys cut into
// ranges by codec and leading digest byte, each range one iteration in key
// order on one of the cores (its own read-only transaction), so each table
// block is read and decompressed once, where a Get per block is a lookup of
// its own (and, with hashed keys, a block-cache miss more often than not).
// fn is called on the caller's goroutine, one block at a time, each range
// in key order and the ranges interleaved. A value in the value log is read
// from its file for its size as well; one that cannot be read is left out of
// the scan, so that a caller that reaches it reads it by its own Get, which
// reports the damage. A block stored in a pack (pack.go) comes after its
// worker's ranges, its pack decompressed once for all of them; one whose
// pack cannot be read is left out the same way.
func (s *Store) ScanBlocks(ctx context.Context, want func(objects.CID) bool, fn func(c objects.CID, size int64, data []byte) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type scannedBlock struct {
		c    objects.CID
		size int64
		data []byte
	}
	bounds := scanBounds()
	next := make(chan [2][]byte, len(bounds))
	for _, b := range bounds {
		next <- b
	}
	close(next)
	workers := min(runtime.GOMAXPROCS(0), len(bounds))
	batches := make(chan []scannedBlock, 2*workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			txn := s.db.NewTransaction(false)
			defer txn.Discard()
			var batch []scannedBlock
			var batchBytes int
			type packedRef struct {
				c         objects.CID
				off, size int
			}
			var pending map[string][]packedRef
			send := func() bool {
				if len(batch) == 0 {
					return true
				}
				select {
				case batches <- batch:
					batch, batchBytes = nil, 0
					return true
				case <-ctx.Done():
					return false
				}
			}
			for r := range next {
				o := badger.DefaultIteratorOptions
				o.PrefetchValues = false
				o.Prefix = []byte{nsBlock}
				it := txn.NewIterator(o)
				var moved int
				for it.Seek(r[0]); it.Valid() && (r[1] == nil || bytes.Compare(it.Item().Key(), r[1]) < 0); it.Next() {
					if err := ctx.Err(); err != nil {
						it.Close()
						errs[w] = err
						return
					}
					item := it.Item()
					c, err := objects.CIDFromBytes(item.Key()[1:])
					if err != nil {
						it.Close()
						errs[w] = fmt.Errorf("store: bad block key %x: %w", item.Key(), err)
						return
					}
					keep := want == nil || want(c)
					var size int64
					var data []byte
					if isPacked(item.UserMeta()) {
						// Packed (pack.go): its bytes are taken from its
						// pack once this worker's ranges are read, each
						// pack decompressed once.
						v, err := item.ValueCopy(nil)
						if err != nil {
							continue
						}
						ref, off, n, ok := decodePointer(item.UserMeta(), v)
						if !ok {
							continue // its Get says why
						}
						if !keep {
							batch = append(batch, scannedBlock{c, int64(n), nil})
							continue
						}
						if pending == nil {
							pending = map[string][]packedRef{}
						}
						pending[string(ref)] = append(pending[string(ref)], packedRef{c, off, n})
						continue
					}
					if err := item.Value(func(v []byte) error {
						size = int64(len(v))
						if keep {
							data = append([]byte(nil), v...)
						}
						return nil
					}); err != nil {
						continue // unreadable (a damaged value log): left out, so the caller's Get of it says why
					}
					if moved += int(size); moved >= 1<<20 {
						s.noteMoved(moved)
						moved = 0
					}
					batch = append(batch, scannedBlock{c, size, data})
					if batchBytes += len(data) + 64; len(batch) == 256 || batchBytes >= 1<<20 {
						if !send() {
							it.Close()
							errs[w] = ctx.Err()
							return
						}
					}
				}
				it.Close()
				s.noteMoved(moved)
			}
			packs := s.newPackReader(txn)
			for ref, refs := range pending {
				read := map[string]bool{}
				for _, r := range refs {
					b, id, err := packs.bytes(r.c, []byte(ref), r.off, r.size)
					if err != nil {
						continue // left out: its Get says why
					}
					if !read[string(id)] {
						read[string(id)] = true
						if e, ok := s.packs.get(id); ok {
							s.noteMoved(len(e.plain))
						}
					}
					data := bytes.Clone(b)
					batch = append(batch, scannedBlock{r.c, int64(r.size), data})
					if batchBytes += len(data) + 64; len(batch) == 256 || batchBytes >= 1<<20 {
						if !send() {
							errs[w] = ctx.Err()
							return
						}
					}
				}
			}
			if !send() {
				errs[w] = ctx.Err()
			}
		}()
	}
	go func() {
		wg.Wait()
		close(batches)
	}()
	var fnErr error
	for batch := range batches {
		if fnErr != nil {
			continue // draining: the scanners stop at the cancel
		}
		for _, b := range batch {
			if fnErr = fn(b.c, b.size, b.data); fnErr != nil {
				cancel()
				break
			}
		}
	}
	if fnErr != nil {
		return fnErr
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// scanBounds cuts the block namespace into ranges [start, end) (end nil: to
// the namespace's end) for ScanBlocks: the store's CIDs are 0x01, a codec
// byte, 0x12 0x20 and a uniform digest, so each codec's keys are cut at
// eight points of the digest's first byte; whatever else the namespace holds
// falls in the first or the last range.
func scanBounds() [][2][]byte {
	var cuts [][]byte
	for _, codec := range []byte{objects.CodecRaw, objects.CodecDagCBOR} {
		for d := range 8 {
			cuts = append(cuts, []byte{nsBlock, 0x01, codec, 0x12, 0x20, byte(d * 32)})
		}
	}
	out := [][2][]byte{{{nsBlock}, cuts[0]}}
	for i, c := range cuts {
		var end []byte
		if i+1 < len(cuts) {
			end = cuts[i+1]
		}
		out = append(out, [2][]byte{c, end})
	}
	return out
}

// CIDsWithPrefix yields the stored CIDs whose binary form starts with prefix
// (used to resolve abbreviated CIDs).
func (s *Store) CIDsWithPrefix(ctx context.Context, prefix []byte) ([]objects.CID, error) {
	var out []objects.CID
	err := s.db.View(func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.PrefetchValues = false
		o.Prefix = append([]byte{nsBlock}, prefix...)
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			c, err := objects.CIDFromBytes(it.Item().KeyCopy(nil)[1:])
			if err != nil {
				return err
			}
			out = append(out, c)
			if len(out) > 64 {
				break
			}
		}
		return nil
	})
	return out, err
}

// CorruptForTest overwrites a block's bytes in place.
func (s *Store) CorruptForTest(c objects.CID, data []byte) {
	if s.checkWrite(int64(len(data)+64)) != nil {
		return
	}
	_ = s.db.Update(func(txn *badger.Txn) error { return txn.Set(blockKey(c), data) })
}

// GetMeta / SetMeta read and write small metadata records.
func (s *Store) GetMeta(ctx context.Context, name string) ([]byte, bool, error) {
	return s.get(metaKey(name))
}

// get reads one key; ok is false when it is absent.
func (s *Store) get(key []byte) (v []byte, ok bool, err error) {
	if v, ok := s.held.get(key); ok {
		return bytes.Clone(v), true, nil
	}
	err = s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(key)
		if err != nil {
			return err
		}
		v, err = it.ValueCopy(nil)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, false, nil
	}
	return v, err == nil, err
}

func (s *Store) SetMeta(ctx context.Context, name string, v []byte) error {
	if err := s.checkRoom(ctx, int64(len(name)+len(v)+16)); err != nil {
		return err
	}
	if strings.HasPrefix(name, ListSizePrefix) {
		s.lsizes.Store(lsizesSome)
	}
	if s.deferring(ctx) {
		return s.setHeld(metaKey(name), v)
	}
	return s.update(func(txn *badger.Txn) error { return txn.Set(metaKey(name), v) })
}

// MetaPrefix calls fn for every metadata record whose name starts with prefix, in name order.
func (s *Store) MetaPrefix(ctx context.Context, prefix string, fn func(name string, v []byte) error) error {
	return s.MetaFrom(ctx, prefix, "", fn)
}

// DeleteMeta removes the metadata record named name, if there is one.
func (s *Store) DeleteMeta(ctx context.Context, name string) error {
	if err := s.checkWrite(64); err != nil {
		return err
	}
	return s.update(func(txn *badger.Txn) error { return txn.Delete(metaKey(name)) })
}

// DeleteMetaPrefix removes every metadata record whose name starts with prefix.
func (s *Store) DeleteMetaPrefix(ctx context.Context, prefix string) error {
	var names []string
	if err := s.MetaPrefix(ctx, prefix, func(name string, _ []byte) error {
		names = append(names, name)
		return nil
	}); err != nil {
		return err
	}
	if err := s.checkWrite(int64(len(names)) * 64); err != nil {
		return err
	}
	if err := s.flushHeld(); err != nil {
		return err
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, n := range names {
		if err := wb.Delete(metaKey(n)); err != nil {
			return err
		}
	}
	return wb.Flush()
}
