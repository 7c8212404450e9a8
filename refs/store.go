package refs

import (
	"context"
	"errors"
	"iter"
)

// Store is where a repository keeps HEAD records and operation logs, as
// opaque bytes: Refs encodes, chains and checks them; a Store only keeps
// them. Implementations: the Badger store (dag/repo/storage/badger), the
// in-memory one (dag/repo/storage/memory) and the served store's client
// (dag/repo/remote); dag/repo/storage/storagetest is the conformance suite
// they run.
type Store interface {
	// HeadRecord returns the agent's HEAD record; ok is false when the agent
	// has none.
	HeadRecord(ctx context.Context, agent string) (rec []byte, ok bool, err error)
	// SwapHead appends one operation-log entry and replaces the agent's HEAD
	// record, atomically, if and only if the stored HEAD record is
	// byte-for-byte old (nil: the agent has no HEAD record). It returns
	// ErrSwapped, and stores nothing, when the record is something else.
	// entry is stored under sequence number seq.
	SwapHead(ctx context.Context, agent string, old []byte, seq uint64, entry, head []byte) error
	// HeadRecords yields every agent's HEAD record in bytewise agent order.
	HeadRecords(ctx context.Context) iter.Seq2[Record, error]
	// LogRecords yields an agent's operation-log entries in ascending
	// sequence order; Record.Seq is the number each is stored under.
	LogRecords(ctx context.Context, agent string) iter.Seq2[Record, error]
}

// Record is one stored ref record.
type Record struct {
	Agent string
	Seq   uint64 // log entries only
	Data  []byte
}

// ErrSwapped is what Store.SwapHead returns when the HEAD record was not
// the one expected: another writer moved HEAD first.
var ErrSwapped = errors.New("refs: HEAD record changed before the swap")
