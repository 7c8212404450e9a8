package badger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/agentstate/agentstate/refs"
)

// The receipt tapes (tape.Store): 'r'+agent+0x00+seq holds one line.

func tapePrefix(agent string) []byte { return append(append([]byte{nsTape}, agent...), 0) }

// AppendLines implements tape.Store.
func (s *Store) AppendLines(ctx context.Context, agent string, lines [][]byte) (uint64, error) {
	n := int64(0)
	for _, l := range lines {
		n += int64(len(agent) + len(l) + 16)
	}
	if err := s.checkRoom(ctx, n); err != nil {
		return 0, err
	}
	// Each line's task record, computed before the tape is locked (it
	// reads the commits the line names), is written with it.
	recs := s.taskRecords(ctx, agent, lines)
	s.held.tape.Lock()
	defer s.held.tape.Unlock()
	if s.deferring(ctx) {
		return s.appendHeld(agent, lines, recs)
	}
	delete(s.held.tapeEnd, agent) // found again by the next deferred append
	var last uint64
	for {
		err := s.update(func(txn *badger.Txn) error {
			n, err := lastTapeSeq(txn, agent)
			if err != nil {
				return err
			}
			// Badger tracks keys read with Get, not every key an iterator
			// passes: read the first free slot so a concurrent append that
			// takes it makes this transaction conflict and retry instead of
			// overwriting it.
			if _, err := txn.Get(binary.BigEndian.AppendUint64(tapePrefix(agent), n+1)); !errors.Is(err, badger.ErrKeyNotFound) {
				if err == nil {
					err = fmt.Errorf("store: tape of %q has an entry past its last one", agent)
				}
				return err
			}
			for i, l := range lines {
				n++
				if err := txn.Set(binary.BigEndian.AppendUint64(tapePrefix(agent), n), l); err != nil {
					return err
				}
				if recs[i] != nil {
					if err := txn.Set(metaKey(taskRecordName(agent, n)), recs[i]); err != nil {
						return err
					}
				}
			}
			last = n
			return nil
		})
		if errors.Is(err, badger.ErrConflict) {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			continue
		}
		return last, err
	}
}

// lastTapeSeq returns the last sequence number on an agent's tape.
func lastTapeSeq(txn *badger.Txn, agent string) (uint64, error) {
	tapeScans.Add(1)
	o := badger.DefaultIteratorOptions
	o.Reverse = true
	o.PrefetchValues = false
	p := tapePrefix(agent)
	o.Prefix = p
	it := txn.NewIterator(o)
	defer it.Close()
	it.Seek(append(append([]byte{}, p...), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))
	if !it.ValidForPrefix(p) {
		return 0, nil
	}
	k := it.Item().Key()
	return binary.BigEndian.Uint64(k[len(k)-8:]), nil
}

// TapeLines implements tape.Store.
func (s *Store) TapeLines(ctx context.Context, agent string) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		p := tapePrefix(agent)
		var last uint64
		for r, err := range s.records(ctx, p, func(k []byte) refs.Record {
			return refs.Record{Seq: binary.BigEndian.Uint64(k[len(k)-8:])}
		}) {
			if !yield(r.Data, err) || err != nil {
				return
			}
			last = r.Seq
		}
		// Lines held by deferred appends follow (those written meanwhile
		// were met above).
		keys, vals := s.held.withPrefix(p)
		for i, k := range keys {
			if binary.BigEndian.Uint64(k[len(k)-8:]) > last && !yield(bytes.Clone(vals[i]), nil) {
				return
			}
		}
	}
}
