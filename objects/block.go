package objects

import (
	"context"
	"crypto/sha256"
	"iter"
)

// Block is a CID with the bytes it names.
type Block struct {
	CID  CID
	Data []byte
}

// NewValue returns the raw block of a value.
func NewValue(data []byte) Block { return Block{CID: Sum(CodecRaw, data), Data: data} }

// Verify re-hashes data and checks it against c: the check every block read
// back from storage passes before it is trusted.
func Verify(c CID, data []byte) error {
	if got := cidFromDigest(c.Codec(), sha256.Sum256(data)); got != c {
		return &HashMismatchError{Expected: c, Actual: got}
	}
	return nil
}

// BlockStore holds blocks. Implementations re-hash what they read (Get
// returns a *HashMismatchError for corrupt data) and report a missing block
// as a *NotFoundError. Put is idempotent.
type BlockStore interface {
	Get(ctx context.Context, c CID) ([]byte, error)
	Has(ctx context.Context, c CID) (bool, error)
	// Put stores blocks. A crash part-way may leave some of them stored; since
	// blocks are immutable and content-addressed that is harmless (gc removes
	// what nothing reaches), so callers store blocks before the refs that
	// reach them, children before parents.
	Put(ctx context.Context, blocks ...Block) error
}

// BlockBatchReader is an optional ability of a BlockStore: read several
// blocks in one pass (on disk: one read transaction, not one a block),
// each checked as Get checks it. fn is called for each CID in order with
// its bytes (the caller's to keep) or the error Get would return for it;
// an error of ctx stops the reads and is returned.
type BlockBatchReader interface {
	GetBatch(ctx context.Context, cids []CID, fn func(i int, data []byte, err error)) error
}

// BlockLister is an optional ability of a BlockStore: enumerate every CID held.
type BlockLister interface {
	AllCIDs(ctx context.Context) iter.Seq2[CID, error]
}

// BlockScanner is an optional ability of a BlockStore: every stored block
// in one pass, in an order of the store's own, where a Get of each would be
// a lookup of its own (on disk: ranges of Badger's keys read on every core,
// each table block read and decompressed once). fn is called on the
// caller's goroutine, one block at a time; it gets each block's CID and its size in bytes and,
// when want is nil or want(c) is true, its bytes as stored: NOT re-hashed,
// so the caller checks them (Verify) before trusting them; they are the
// caller's to keep. A block whose bytes cannot be read at all is left out
// (a Get of it reports why). An error from fn stops the scan and is returned.
type BlockScanner interface {
	ScanBlocks(ctx context.Context, want func(c CID) bool, fn func(c CID, size int64, data []byte) error) error
}

// BlockDeleter is an optional ability of a BlockStore, used only by gc.
type BlockDeleter interface {
	Delete(ctx context.Context, cids ...CID) error
}

// ListSizeReader is an optional ability of a BlockStore: the sizes of chunk
// list nodes (docs/format.md §8) from a record the store keeps of each it
// holds ("List sizes"), so that a reader that needs only a node's size,
// to number the content after it, need not read and decode the node. fn is
// called for each CID that has a good record, with the size
// the node records; a CID it is not called for has none (the caller reads
// the node); the calls come in no particular order. An error of ctx stops
// the lookups and is returned.
type ListSizeReader interface {
	ListSizes(ctx context.Context, cids []CID, fn func(i int, size uint64)) error
}
