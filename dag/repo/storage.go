package repo

import (
	"context"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/tape"
)

// Storage is everything a repository keeps, split as go-git splits its
// storers: immutable blocks (objects.BlockStore), HEAD records and
// operation logs (refs.Store), receipt tapes (tape.Store) and small
// metadata records (MetaStore). The implementations live under
// dag/repo/storage: the Badger store that Open and Init use
// (dag/repo/storage/badger), which owns the on-disk key layout
// (docs/format.md §7), and the in-memory one (dag/repo/storage/memory);
// the served store's client (dag/repo/remote) is the third.
// dag/repo/storage/storagetest holds the conformance suites, and
// dag/repo/storage's test runs every implementation through them.
type Storage interface {
	objects.BlockStore
	refs.Store
	tape.Store
	MetaStore
	Close() error
}

// MetaStore keeps small named records: format version, caches, snapshot
// records, operator keys.
type MetaStore interface {
	GetMeta(ctx context.Context, name string) ([]byte, bool, error)
	SetMeta(ctx context.Context, name string, v []byte) error
	// MetaPrefix calls fn for every record whose name starts with prefix,
	// in name order, and returns the first error fn returns.
	MetaPrefix(ctx context.Context, prefix string, fn func(name string, v []byte) error) error
	DeleteMetaPrefix(ctx context.Context, prefix string) error
}

// Optional abilities of a Storage, detected at run time.
type (
	// PrefixFinder finds blocks by a prefix of their binary CID (revision
	// abbreviations). Without it abbreviations do not resolve.
	PrefixFinder interface {
		CIDsWithPrefix(ctx context.Context, prefix []byte) ([]objects.CID, error)
	}
	// Reclaimer gives space freed by deletions back to the file system.
	Reclaimer interface{ Reclaim() }
)
