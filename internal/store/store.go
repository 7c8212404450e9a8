// Package store is agentstate's embedded database: one Badger key space
// holding blocks (immutable, content-addressed), per-agent HEAD records and
// operation logs (see package refs), and small metadata records. It owns the
// key layout and the single-process lock.
//
// Key layout (first byte is the namespace):
//
//	'b' + CID bytes            block bytes
//	'h' + agent                HEAD record (package refs)
//	'o' + agent + 0x00 + seq   operation-log entry (package refs), seq big-endian uint64
//	'r' + agent + 0x00 + seq   receipt-tape line (package internal/tape), seq big-endian uint64
//	'm' + name                 metadata (format version, config)
//	'c' + name + 0x00 + ...    caches (derivable; safe to drop)
package store

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentstate/agentstate/objects"
	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Namespaces.
const (
	NSBlock = 'b'
	NSHead  = 'h'
	NSOp    = 'o'
	NSMeta  = 'm'
	NSTape  = 'r'
	NSCache = 'c'
)

// FormatVersion is the on-disk layout version recorded at 'm'+"format".
const FormatVersion = "agentstate-store-1"

var (
	ErrInUse    = errors.New("store: in use by another process")
	ErrNotStore = errors.New("store: not an agentstate store")
)

// Options tune a store.
type Options struct {
	// Sync makes every write durable (fsync) before it returns. Without it a
	// killed process loses nothing that returned (the OS holds it), but a
	// power failure may lose the latest writes; it never tears a write.
	Sync bool
	// InMemory keeps everything in memory (tests).
	InMemory bool
	// ReadOnly opens without taking the write lock. Not combinable with a
	// concurrent writer in another process (Badger refuses).
	ReadOnly bool
}

// Store is an open agentstate database. It is safe for concurrent use.
type Store struct {
	db *badger.DB
}

// Create initialises a new store in dir (created if missing; must be empty
// or absent) and opens it.
func Create(dir string, opts Options) (*Store, error) {
	if !opts.InMemory {
		if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
			return nil, fmt.Errorf("store: %s is not empty", dir)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("store: creating %s: %w", dir, err)
		}
	}
	s, err := open(dir, opts)
	if err != nil {
		return nil, err
	}
	if err := s.db.Update(func(txn *badger.Txn) error {
		return txn.Set(metaKey("format"), []byte(FormatVersion))
	}); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: initialising %s: %w", dir, err)
	}
	return s, nil
}

// Open opens an existing store.
func Open(dir string, opts Options) (*Store, error) {
	if !opts.InMemory {
		if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
			return nil, fmt.Errorf("%w: %s (run 'agentstate init' to create one)", ErrNotStore, dir)
		}
	}
	s, err := open(dir, opts)
	if err != nil {
		return nil, err
	}
	var v []byte
	err = s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(metaKey("format"))
		if err != nil {
			return err
		}
		v, err = it.ValueCopy(nil)
		return err
	})
	if err != nil || string(v) != FormatVersion {
		s.Close()
		if err == nil {
			err = fmt.Errorf("format %q, this build reads %q", v, FormatVersion)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrNotStore, dir, err)
	}
	return s, nil
}

func open(dir string, opts Options) (*Store, error) {
	// Tuned for a short-lived CLI as much as for a long-running runtime
	// (docs/performance.md): opening allocates and maps a memtable and a
	// value-log file, so both are kept small; values up to 256 KiB (SQLite
	// pages, content-defined chunks, small files) live in the LSM tree,
	// where ZSTD compresses them; L0 is compacted on close so tables do not
	// pile up across many short processes.
	bo := badger.DefaultOptions(dir).
		WithLogger(nil).
		WithSyncWrites(opts.Sync).
		WithNumVersionsToKeep(1).
		WithCompactL0OnClose(true).
		WithReadOnly(opts.ReadOnly).
		WithMemTableSize(8 << 20).
		WithValueThreshold(256 << 10).
		WithValueLogFileSize(64 << 20).
		WithCompression(options.ZSTD).
		WithZSTDCompressionLevel(3).
		WithBlockSize(16 << 10).
		WithBlockCacheSize(32 << 20).
		WithIndexCacheSize(16 << 20).
		WithNumCompactors(2).
		WithDetectConflicts(true)
	if opts.InMemory {
		bo = bo.WithDir("").WithValueDir("").WithInMemory(true)
	} else if !opts.ReadOnly {
		if err := removeEmptyLogs(dir); err != nil {
			return nil, err
		}
	}
	db, err := badger.Open(bo)
	if err != nil {
		if strings.Contains(err.Error(), "Cannot acquire directory lock") || strings.Contains(err.Error(), "resource temporarily unavailable") {
			return nil, fmt.Errorf("%w: %s (another agentstate command or runtime has it open; wait for it to finish)", ErrInUse, dir)
		}
		return nil, fmt.Errorf("store: opening %s: %w", dir, err)
	}
	return &Store{db: db}, nil
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
func (s *Store) Close() error { return s.db.Close() }

// DB exposes the Badger handle to the packages that own other namespaces.
func (s *Store) DB() *badger.DB { return s.db }

func metaKey(name string) []byte { return append([]byte{NSMeta}, name...) }

func blockKey(c objects.CID) []byte {
	b := c.Bytes()
	k := make([]byte, 1+len(b))
	k[0] = NSBlock
	copy(k[1:], b)
	return k
}

// Get returns a block's bytes after re-hashing them.
func (s *Store) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	var data []byte
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(blockKey(c))
		if err != nil {
			return err
		}
		data, err = it.ValueCopy(nil)
		return err
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, &objects.NotFoundError{CID: c}
	}
	if err != nil {
		return nil, fmt.Errorf("store: reading block %s: %w", c, err)
	}
	if err := objects.Verify(c, data); err != nil {
		return nil, err
	}
	return data, nil
}

// Has reports whether the block is stored.
func (s *Store) Has(ctx context.Context, c objects.CID) (bool, error) {
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
	if len(blocks) == 0 {
		return nil
	}
	var missing []objects.Block
	err := s.db.View(func(txn *badger.Txn) error {
		for _, b := range blocks {
			_, err := txn.Get(blockKey(b.CID))
			if errors.Is(err, badger.ErrKeyNotFound) {
				missing = append(missing, b)
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: checking blocks: %w", err)
	}
	if len(missing) == 0 {
		return nil
	}
	if len(missing) == 1 {
		return s.db.Update(func(txn *badger.Txn) error {
			return txn.Set(blockKey(missing[0].CID), missing[0].Data)
		})
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, b := range missing {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := wb.Set(blockKey(b.CID), b.Data); err != nil {
			return fmt.Errorf("store: writing block %s: %w", b.CID, err)
		}
	}
	if err := wb.Flush(); err != nil {
		return fmt.Errorf("store: writing blocks: %w", err)
	}
	return nil
}

// Reclaim asks Badger to rewrite value-log files that are mostly garbage, so
// space freed by Delete returns to the file system. It is best effort.
func (s *Store) Reclaim() {
	for i := 0; i < 16 && s.db.RunValueLogGC(0.5) == nil; i++ {
	}
}

// Delete removes blocks (gc only).
func (s *Store) Delete(ctx context.Context, cids ...objects.CID) error {
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, c := range cids {
		if err := wb.Delete(blockKey(c)); err != nil {
			return err
		}
	}
	return wb.Flush()
}

// AllCIDs yields every stored block's CID.
func (s *Store) AllCIDs(ctx context.Context) iter.Seq2[objects.CID, error] {
	return func(yield func(objects.CID, error) bool) {
		txn := s.db.NewTransaction(false)
		defer txn.Discard()
		o := badger.DefaultIteratorOptions
		o.PrefetchValues = false
		o.Prefix = []byte{NSBlock}
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

// CIDsWithPrefix yields the stored CIDs whose binary form starts with prefix
// (used to resolve abbreviated CIDs).
func (s *Store) CIDsWithPrefix(ctx context.Context, prefix []byte) ([]objects.CID, error) {
	var out []objects.CID
	err := s.db.View(func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.PrefetchValues = false
		o.Prefix = append([]byte{NSBlock}, prefix...)
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
	_ = s.db.Update(func(txn *badger.Txn) error { return txn.Set(blockKey(c), data) })
}

// GetMeta / SetMeta read and write small metadata records.
func (s *Store) GetMeta(name string) ([]byte, bool, error) {
	var v []byte
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(metaKey(name))
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

func (s *Store) SetMeta(name string, v []byte) error {
	return s.db.Update(func(txn *badger.Txn) error { return txn.Set(metaKey(name), v) })
}

// MetaPrefix calls fn for every metadata record whose name starts with prefix, in name order.
func (s *Store) MetaPrefix(prefix string, fn func(name string, v []byte) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.Prefix = metaKey(prefix)
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			if err := fn(string(it.Item().Key()[1:]), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteMetaPrefix removes every metadata record whose name starts with prefix.
func (s *Store) DeleteMetaPrefix(prefix string) error {
	var names []string
	if err := s.MetaPrefix(prefix, func(name string, _ []byte) error {
		names = append(names, name)
		return nil
	}); err != nil {
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
