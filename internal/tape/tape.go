// Package tape stores each agent's receipt tape: an append-only sequence of
// JSON lines (one signed task receipt each) that exports as receipts.ndjson
// and is re-ingested on restore. The tape treats lines as opaque JSON; the
// runtime package defines and signs the receipts.
package tape

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	"github.com/agentstate/agentstate/internal/store"
	badger "github.com/dgraph-io/badger/v4"
)

var ErrBadLine = errors.New("tape: invalid receipt line")

// Tape is the receipt tapes of a store.
type Tape struct{ db *badger.DB }

// New returns the tapes of s.
func New(s *store.Store) *Tape { return &Tape{db: s.DB()} }

func prefix(agent string) []byte { return append(append([]byte{store.NSTape}, agent...), 0) }

func key(agent string, seq uint64) []byte { return binary.BigEndian.AppendUint64(prefix(agent), seq) }

func checkLine(line []byte) error {
	if len(line) == 0 || bytes.IndexByte(line, '\n') >= 0 || !json.Valid(line) || bytes.TrimSpace(line)[0] != '{' {
		return fmt.Errorf("%w: want one JSON object on one line", ErrBadLine)
	}
	return nil
}

// Append adds lines to an agent's tape atomically and returns the sequence
// number of the last one.
func (t *Tape) Append(ctx context.Context, agent string, lines ...[]byte) (uint64, error) {
	for _, l := range lines {
		if err := checkLine(l); err != nil {
			return 0, err
		}
	}
	var last uint64
	for {
		err := t.db.Update(func(txn *badger.Txn) error {
			n, err := count(txn, agent)
			if err != nil {
				return err
			}
			for _, l := range lines {
				n++
				if err := txn.Set(key(agent, n), l); err != nil {
					return err
				}
			}
			last = n
			return nil
		})
		if errors.Is(err, badger.ErrConflict) {
			continue
		}
		return last, err
	}
}

// count returns the last sequence number on an agent's tape.
func count(txn *badger.Txn, agent string) (uint64, error) {
	o := badger.DefaultIteratorOptions
	o.Reverse = true
	o.PrefetchValues = false
	p := prefix(agent)
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

// Lines yields an agent's tape, oldest first.
func (t *Tape) Lines(ctx context.Context, agent string) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		txn := t.db.NewTransaction(false)
		defer txn.Discard()
		o := badger.DefaultIteratorOptions
		o.Prefix = prefix(agent)
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if !yield(v, err) || err != nil {
				return
			}
		}
	}
}

// NDJSON returns an agent's tape as receipts.ndjson bytes (one line each,
// newline-terminated), or nil if the tape is empty.
func (t *Tape) NDJSON(ctx context.Context, agent string) ([]byte, error) {
	var buf bytes.Buffer
	for l, err := range t.Lines(ctx, agent) {
		if err != nil {
			return nil, err
		}
		buf.Write(l)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// Import re-ingests receipts.ndjson bytes: lines already on the tape are
// skipped, new ones appended in their order. It returns how many were added.
func (t *Tape) Import(ctx context.Context, agent string, ndjson []byte) (int, error) {
	have := map[[32]byte]bool{}
	for l, err := range t.Lines(ctx, agent) {
		if err != nil {
			return 0, err
		}
		have[sha256.Sum256(l)] = true
	}
	var add [][]byte
	for i, l := range bytes.Split(ndjson, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if err := checkLine(l); err != nil {
			return 0, fmt.Errorf("receipts.ndjson line %d: %w", i+1, err)
		}
		h := sha256.Sum256(l)
		if !have[h] {
			have[h] = true
			add = append(add, l)
		}
	}
	if len(add) == 0 {
		return 0, nil
	}
	_, err := t.Append(ctx, agent, add...)
	return len(add), err
}
