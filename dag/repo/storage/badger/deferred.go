package badger

import (
	"bytes"
	"context"
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/agentstate/agentstate/objects"
)

// Deferred writes (group commit). In a store opened with Options.Sync every
// write is durable before it returns, which costs an fsync of the value log
// and one of the memtable's log per write. A runtime task writes a commit
// per change and then lands with one HEAD move, then appends its receipt;
// only the landing must be durable when the task is acknowledged, and it
// must not become durable before the blocks it reaches. So a write made
// with a context from Deferred is held in memory (reads see it at once) and
// written by the store's next write that is not deferred, in the same
// Badger transaction when it is small enough (else in a synced batch just
// before it), or by Close. Held writes take no room on the file system
// until then, so the room they need is checked then, with the write that
// carries them (space.go): a durable write refused for lack of space
// leaves them held, and a Close that cannot write them loses them, as a
// kill would. The next durable write is thus one fsync for
// the task's blocks, its landing and the previous task's receipt, and
// nothing durable ever reaches a block that is not: a HEAD move carries
// every block held so far.
//
// A process killed with deferred writes held loses them, which is what a
// deferred write may be used for: blocks nothing refers to until a later
// write that is not deferred (a task's commits before it lands), and tape
// lines the store's reader re-creates (a receipt, rebuilt from the
// operation log when missing). Without Options.Sync, Deferred changes
// nothing: every write goes to Badger at once and none is synced.

type deferredKey struct{}

// Deferred returns ctx marked so that block, tape and metadata writes made
// with it to a store opened with Options.Sync are held until the store's
// next durable write (see above).
func Deferred(ctx context.Context) context.Context {
	return context.WithValue(ctx, deferredKey{}, true)
}

func isDeferred(ctx context.Context) bool {
	v, _ := ctx.Value(deferredKey{}).(bool)
	return v
}

// Bounds of what deferred writes hold. Above maxHeld bytes the held writes
// are written (synced) at once; up to maxInTxn bytes and maxInTxnCount
// entries they ride in the next durable write's own transaction (Badger
// refuses transactions over about 15% of the memtable, 1.2 MiB here).
const (
	maxHeld       = 4 << 20
	maxInTxn      = 512 << 10
	maxInTxnCount = 512
)

// held is the deferred writes not yet in Badger: raw keys and values in
// write order. Tape lines are keyed as Badger keys them.
type held struct {
	mu    sync.Mutex
	keys  [][]byte
	vals  map[string][]byte
	bytes int
	tape  sync.Mutex // serializes tape appends, deferred or not
	// tapeEnd is each tape's last sequence number, held or written, once
	// a deferred append has found it (guarded by tape). A tape only grows,
	// and only through AppendLines in the one process holding the store,
	// so a runtime landing task after task finds its tape's end here
	// instead of seeking it in Badger (an iterator over every table).
	tapeEnd map[string]uint64
}

// tapeScans counts the seeks of a tape's end in Badger (tests).
var tapeScans atomic.Int64

func (h *held) get(key []byte) ([]byte, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	v, ok := h.vals[string(key)]
	return v, ok
}

func (h *held) add(key, val []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.vals == nil {
		h.vals = map[string][]byte{}
	}
	if old, ok := h.vals[string(key)]; ok {
		h.bytes += len(val) - len(old) // a record written again: the last value wins
		h.vals[string(key)] = val
		return
	}
	h.vals[string(key)] = val
	h.keys = append(h.keys, key)
	h.bytes += len(key) + len(val)
}

func (h *held) size() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bytes
}

// snapshot returns the held writes in order.
func (h *held) snapshot() (keys, vals [][]byte, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	keys = slices.Clone(h.keys)
	vals = make([][]byte, len(keys))
	for i, k := range keys {
		vals[i] = h.vals[string(k)]
	}
	return keys, vals, h.bytes
}

// written drops keys, now in Badger, from the held writes.
func (h *held) written(keys [][]byte) {
	if len(keys) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	// Usually keys are every held key, in order (nothing was held or
	// dropped since the snapshot): all go at once.
	if len(keys) == len(h.keys) && slices.EqualFunc(keys, h.keys, bytes.Equal) {
		clear(h.vals)
		h.keys, h.bytes = h.keys[:0], 0
		return
	}
	gone := make(map[string]bool, len(keys))
	for _, k := range keys {
		if v, ok := h.vals[string(k)]; ok {
			h.bytes -= len(k) + len(v)
			delete(h.vals, string(k))
			gone[string(k)] = true
		}
	}
	h.keys = slices.DeleteFunc(h.keys, func(k []byte) bool { return gone[string(k)] })
}

// drop forgets held keys (deleted blocks).
func (h *held) drop(keys [][]byte) { h.written(keys) }

// withPrefix returns the held entries whose keys start with prefix, in key
// order.
func (h *held) withPrefix(prefix []byte) (keys, vals [][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range h.keys {
		if bytes.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	for _, k := range keys {
		vals = append(vals, h.vals[string(k)])
	}
	return keys, vals
}

// setHeld holds a metadata record written with a deferred context (a cache
// that may be lost, such as a tree's bundle hash).
func (s *Store) setHeld(key, v []byte) error {
	s.held.add(key, bytes.Clone(v))
	if s.held.size() > maxHeld {
		return s.flushHeld()
	}
	return nil
}

// deferring reports whether a write with ctx is to be held.
func (s *Store) deferring(ctx context.Context) bool { return s.sync && isDeferred(ctx) }

// flushHeld writes every held write in synced batches; the durable writes
// that cannot carry them in their own transaction call it first.
func (s *Store) flushHeld() error {
	keys, vals, n := s.held.snapshot()
	if len(keys) == 0 {
		return nil
	}
	// The held writes were not checked for room when they were held.
	if err := s.checkWrite(0); err != nil {
		return err
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for i, k := range keys {
		if err := wb.Set(k, vals[i]); err != nil {
			return err
		}
	}
	s.writes.Add(1)
	if err := wb.Flush(); err != nil {
		return err
	}
	s.held.written(keys)
	s.pending.Add(int64(n))
	return nil
}

// update runs fn in a read-write transaction that also writes the held
// writes, before fn's, when they are few enough (else they are written in a
// batch first): the one way a durable write reaches Badger.
func (s *Store) update(fn func(txn *badger.Txn) error) error {
	keys, vals, n := s.held.snapshot()
	if len(keys) > maxInTxnCount || n > maxInTxn {
		if err := s.flushHeld(); err != nil {
			return err
		}
		keys, vals, n = nil, nil, 0
	}
	s.writes.Add(1)
	err := s.db.Update(func(txn *badger.Txn) error {
		for i, k := range keys {
			if err := txn.Set(k, vals[i]); err != nil {
				return err
			}
		}
		return fn(txn)
	})
	if err == nil {
		s.held.written(keys)
		s.pending.Add(int64(n))
	}
	return err
}

// putHeld holds blocks written with a deferred context; past maxHeld bytes
// everything held is written now.
func (s *Store) putHeld(blocks []objects.Block) error {
	for _, b := range blocks {
		s.held.add(blockKey(b.CID), b.Data)
		if k, rec, ok := s.listSizeEntry(b); ok {
			s.held.add(k, rec)
		}
	}
	if s.held.size() > maxHeld {
		return s.flushHeld()
	}
	return nil
}

// appendHeld holds tape lines appended with a deferred context, numbered
// after the tape's last line, held or written. The caller holds held.tape.
func (s *Store) appendHeld(agent string, lines, recs [][]byte) (uint64, error) {
	p := tapePrefix(agent)
	last, known := s.held.tapeEnd[agent]
	if !known {
		var err error
		if last, err = s.tapeLast(agent); err != nil {
			return 0, err
		}
	}
	for i, l := range lines {
		last++
		s.held.add(binary.BigEndian.AppendUint64(slices.Clip(p), last), bytes.Clone(l))
		if recs[i] != nil { // after its line: a batch cut short leaves a line with no record, never the reverse
			s.held.add(metaKey(taskRecordName(agent, last)), recs[i])
		}
	}
	if s.held.tapeEnd == nil {
		s.held.tapeEnd = map[string]uint64{}
	}
	s.held.tapeEnd[agent] = last
	return last, nil
}
