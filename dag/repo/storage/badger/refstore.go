package badger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"sync"

	"github.com/agentstate/agentstate/refs"
	badger "github.com/dgraph-io/badger/v4"
)

// The ref store (refs.Store): 'h'+agent holds the HEAD record, 'o'+agent+0x00+seq
// the operation-log entries.

func headKey(agent string) []byte { return append([]byte{nsHead}, agent...) }

func opPrefix(agent string) []byte { return append(append([]byte{nsOp}, agent...), 0) }

func opKey(agent string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(opPrefix(agent), seq)
}

// headCache keeps the HEAD records read, so that a process holding the
// store (a server, a runtime) reads an agent's HEAD from Badger once per
// move, not once per command. SwapHead is the only writer of HEAD records
// and the store is one process's, so a cached record is the committed one
// whenever these hold:
//
//   - a swap drops the agent's record before its transaction (begin) and
//     again after it (end), and the agent counts as busy in between;
//   - a read keeps what it read from Badger only if the agent is not busy
//     and its generation, moved on at the end of every swap, is the one
//     the read saw before it opened its transaction;
//   - a swap that committed keeps its own record at its end only if no
//     other swap of the agent was under way at any moment of its own (none
//     can then have committed after it): a runtime's next task reads the
//     HEAD its landing wrote without reaching Badger.
//
// So nothing read while a swap may be committing is kept: a read whose
// transaction began before the commit (it sees the old record) cannot put
// that record back after another read has returned the new one.
type headCache struct {
	mu   sync.Mutex
	rec  map[string][]byte
	gen  map[string]uint64 // moved on at the end of every swap
	busy map[string]int    // swaps begun and not ended
	// overlap names the agents two of whose swaps have been under way at
	// once since the agent was last not busy: no swap that ends then keeps
	// its record (another may have committed after it).
	overlap map[string]bool

	// Set by the tests only (export_test.go), before the store is shared:
	// hookMissed runs in HeadRecord between the lookup that missed and the
	// Badger read, hookRead between the Badger read and keeping it,
	// hookSwapped in SwapHead between the transaction and end.
	hookMissed, hookRead, hookSwapped func(agent string)
}

// maxCachedHeads bounds headCache; past it the cache starts again empty.
const maxCachedHeads = 4096

func (c *headCache) lookup(agent string) ([]byte, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, ok := c.rec[agent]
	return rec, c.gen[agent], ok
}

func (c *headCache) keep(agent string, gen uint64, rec []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen[agent] != gen || c.busy[agent] > 0 {
		return
	}
	if c.rec == nil || len(c.rec) >= maxCachedHeads {
		c.rec = map[string][]byte{}
	}
	c.rec[agent] = rec
}

// begin is called before a swap's transaction opens: the agent's record is
// dropped and nothing read from now until end is kept.
func (c *headCache) begin(agent string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.rec, agent)
	if c.busy == nil {
		c.busy = map[string]int{}
	}
	if c.busy[agent] > 0 {
		if c.overlap == nil {
			c.overlap = map[string]bool{}
		}
		c.overlap[agent] = true
	}
	c.busy[agent]++
}

// end is called after the swap's transaction, committed or not: the record
// is dropped again and the generation moved on, so a read that began before
// the swap ended keeps nothing either. committed is the record the swap
// wrote (nil: it did not commit), kept when no other swap overlapped it.
func (c *headCache) end(agent string, committed []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.rec, agent)
	if c.gen == nil {
		c.gen = map[string]uint64{}
	}
	c.gen[agent]++
	if c.busy[agent]--; c.busy[agent] <= 0 {
		delete(c.busy, agent)
		if committed != nil && !c.overlap[agent] {
			if c.rec == nil || len(c.rec) >= maxCachedHeads {
				c.rec = map[string][]byte{}
			}
			c.rec[agent] = committed
		}
		delete(c.overlap, agent)
	}
}

// HeadRecord implements refs.Store.
func (s *Store) HeadRecord(ctx context.Context, agent string) ([]byte, bool, error) {
	rec, gen, ok := s.heads.lookup(agent)
	if ok {
		return bytes.Clone(rec), true, nil
	}
	if s.heads.hookMissed != nil {
		s.heads.hookMissed(agent)
	}
	v, ok, err := s.get(headKey(agent))
	if err != nil {
		return nil, false, fmt.Errorf("store: reading HEAD of %q: %w", agent, err)
	}
	if s.heads.hookRead != nil {
		s.heads.hookRead(agent)
	}
	if ok {
		s.heads.keep(agent, gen, bytes.Clone(v))
	}
	return v, ok, nil
}

// SwapHead implements refs.Store: one Badger transaction reads the HEAD
// record, compares it and writes the entry and the new record. Badger's
// conflict detection turns a concurrent writer into ErrSwapped, so the one
// retry loop is refs.Refs.Move's.
func (s *Store) SwapHead(ctx context.Context, agent string, old []byte, seq uint64, entry, head []byte) error {
	if err := s.checkWrite(int64(2*len(agent) + len(entry) + len(head) + 32)); err != nil {
		return err
	}
	s.heads.begin(agent) // see headCache
	var committed []byte
	defer func() { s.heads.end(agent, committed) }()
	err := s.update(func(txn *badger.Txn) error {
		it, err := txn.Get(headKey(agent))
		var cur []byte
		switch {
		case errors.Is(err, badger.ErrKeyNotFound):
			if old != nil {
				return refs.ErrSwapped
			}
		case err != nil:
			return err
		default:
			if cur, err = it.ValueCopy(nil); err != nil {
				return err
			}
			if old == nil || !bytes.Equal(cur, old) {
				return refs.ErrSwapped
			}
		}
		if err := txn.Set(opKey(agent, seq), entry); err != nil {
			return err
		}
		return txn.Set(headKey(agent), head)
	})
	if err == nil {
		committed = bytes.Clone(head)
	}
	if s.heads.hookSwapped != nil {
		s.heads.hookSwapped(agent)
	}
	if errors.Is(err, badger.ErrConflict) {
		// A concurrent transaction in this process wrote the HEAD record
		// after this one read it: the record is no longer the one compared.
		// refs.Refs.Move re-reads and compares again.
		return refs.ErrSwapped
	}
	return err
}

// HeadRecords implements refs.Store. Each agent's HEAD record is rewritten
// at every move, and Badger keeps the older versions until a merge of
// level 0 drops them (a runtime's thousand tasks leave a thousand); an
// iterator steps over every one of them to reach the next key, reading and
// decompressing the blocks that hold them. The listing reads the newest
// version of each key and seeks past the rest instead
// (TestHeadRecordsSkipOlderVersions).
func (s *Store) HeadRecords(ctx context.Context) iter.Seq2[refs.Record, error] {
	return func(yield func(refs.Record, error) bool) {
		txn := s.db.NewTransaction(false)
		defer txn.Discard()
		o := badger.DefaultIteratorOptions
		o.PrefetchValues = false
		o.AllVersions = true // the newest first; the others are sought past
		o.Prefix = []byte{nsHead}
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Rewind(); it.Valid(); {
			if err := ctx.Err(); err != nil {
				yield(refs.Record{}, err)
				return
			}
			item := it.Item()
			key := item.KeyCopy(nil)
			if !item.IsDeletedOrExpired() {
				v, err := item.ValueCopy(nil)
				if !yield(refs.Record{Agent: string(key[1:]), Data: v}, err) || err != nil {
					return
				}
			}
			it.Seek(append(key, 0)) // the first key after this one
		}
	}
}

// LogRecords implements refs.Store.
func (s *Store) LogRecords(ctx context.Context, agent string) iter.Seq2[refs.Record, error] {
	return s.records(ctx, opPrefix(agent), func(k []byte) refs.Record {
		return refs.Record{Agent: agent, Seq: binary.BigEndian.Uint64(k[len(k)-8:])}
	})
}

// records yields the values under prefix in key order, in one read
// transaction.
func (s *Store) records(ctx context.Context, prefix []byte, rec func(key []byte) refs.Record) iter.Seq2[refs.Record, error] {
	return func(yield func(refs.Record, error) bool) {
		txn := s.db.NewTransaction(false)
		defer txn.Discard()
		o := badger.DefaultIteratorOptions
		o.Prefix = prefix
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				yield(refs.Record{}, err)
				return
			}
			var r refs.Record
			if rec != nil {
				r = rec(it.Item().Key())
			}
			var err error
			r.Data, err = it.Item().ValueCopy(nil)
			if !yield(r, err) || err != nil {
				return
			}
		}
	}
}

// TrimLog implements refs.LogTrimmer: it deletes agent's log entries up to
// and including seq (a forget's cut, recorded before the trim).
func (s *Store) TrimLog(ctx context.Context, agent string, through uint64) error {
	var keys [][]byte
	for rec, err := range s.LogRecords(ctx, agent) {
		if err != nil {
			return err
		}
		if rec.Seq > through {
			break
		}
		keys = append(keys, opKey(agent, rec.Seq))
	}
	if err := s.checkWrite(int64(len(keys)) * 64); err != nil {
		return err
	}
	if err := s.flushHeld(); err != nil {
		return err
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, k := range keys {
		if err := wb.Delete(k); err != nil {
			return err
		}
	}
	return wb.Flush()
}
