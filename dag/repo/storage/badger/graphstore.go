package badger

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/objects"
	"github.com/dgraph-io/badger/v4"
)

// PutWithMeta stores the blocks not already present and sets the metadata
// records meta (name, value, name, value, ...) in the same write, the
// records after the blocks: a commit and its commit-graph record land
// together, with one sync when writes are durable, or are held together
// when ctx defers writes (Deferred).
func (s *Store) PutWithMeta(ctx context.Context, blocks []objects.Block, meta ...[]byte) error {
	_, err := s.putWithMeta(ctx, blocks, meta, false)
	return err
}

// PutNewWithMeta is PutWithMeta that sets the records only when the last
// of blocks (a commit) was not stored yet, and reports whether it set
// them: a commit's commit-graph record is written with the commit, and a
// commit already stored has its own (or gets one when the graph is next
// filled in), which the existence check of the write tells without a
// lookup of the record.
func (s *Store) PutNewWithMeta(ctx context.Context, blocks []objects.Block, meta ...[]byte) (bool, error) {
	if len(blocks) == 0 {
		return false, fmt.Errorf("store: PutNewWithMeta: no blocks")
	}
	return s.putWithMeta(ctx, blocks, meta, true)
}

func (s *Store) putWithMeta(ctx context.Context, blocks []objects.Block, meta [][]byte, ifLastNew bool) (bool, error) {
	if len(meta)%2 != 0 {
		return false, fmt.Errorf("store: PutWithMeta: %d names and values", len(meta))
	}
	var missing []objects.Block
	if len(blocks) > 0 {
		err := s.db.View(func(txn *badger.Txn) error {
			for _, b := range blocks {
				k := blockKey(b.CID)
				if _, ok := s.held.get(k); ok {
					continue
				}
				_, err := txn.Get(k)
				if errors.Is(err, badger.ErrKeyNotFound) {
					missing = append(missing, b)
				} else if err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return false, fmt.Errorf("store: checking blocks: %w", err)
		}
	}
	if ifLastNew && (len(missing) == 0 || missing[len(missing)-1].CID != blocks[len(blocks)-1].CID) {
		meta = nil // the last block is stored: so are its records
	}
	var n int64
	for _, b := range missing {
		n += int64(len(b.Data) + 64)
		if _, _, ok := s.listSizeEntry(b); ok {
			n += 64
		}
	}
	for _, m := range meta {
		n += int64(len(m) + 8)
	}
	if n == 0 {
		return false, nil
	}
	if err := s.checkRoom(ctx, n); err != nil {
		return false, err
	}
	if s.deferring(ctx) {
		// Held with the blocks a deferred write holds (deferred.go), in
		// order: the next durable write carries them all.
		if err := s.putHeld(missing); err != nil {
			return false, err
		}
		for i := 0; i < len(meta); i += 2 {
			s.held.add(metaKey(string(meta[i])), bytes.Clone(meta[i+1]))
		}
		if s.held.size() > maxHeld {
			return len(meta) > 0, s.flushHeld()
		}
		return len(meta) > 0, nil
	}
	set := func(set func(k, v []byte) error) error {
		for _, b := range missing {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := set(blockKey(b.CID), b.Data); err != nil {
				return fmt.Errorf("store: writing block %s: %w", b.CID, err)
			}
			if k, rec, ok := s.listSizeEntry(b); ok {
				if err := set(k, rec); err != nil {
					return fmt.Errorf("store: writing the size record of %s: %w", b.CID, err)
				}
			}
		}
		for i := 0; i < len(meta); i += 2 {
			if err := set(metaKey(string(meta[i])), meta[i+1]); err != nil {
				return fmt.Errorf("store: writing record: %w", err)
			}
		}
		return nil
	}
	// A few entries go in one transaction (all or nothing); many in a
	// write batch, which Badger may split, in order.
	if len(missing)+len(meta)/2 <= 16 && n < 1<<20 {
		err := s.update(func(txn *badger.Txn) error { return set(txn.Set) })
		if err != nil {
			return false, err
		}
		s.noteWritten(int(n))
		return len(meta) > 0, nil
	}
	if err := s.flushHeld(); err != nil {
		return false, fmt.Errorf("store: writing blocks: %w", err)
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	if err := set(wb.Set); err != nil {
		return false, err
	}
	s.writes.Add(1)
	if err := wb.Flush(); err != nil {
		return false, fmt.Errorf("store: writing blocks: %w", err)
	}
	s.noteWritten(int(n))
	return len(meta) > 0, nil
}

// MetaFrom calls fn for every metadata record whose name starts with
// prefix and is not before from, in name order, reading them in one pass
// (neighbouring records share the store's blocks, each read once), and
// returns the first error fn returns. Records a deferred write holds are
// not among them (GetMeta reads those).
func (s *Store) MetaFrom(ctx context.Context, prefix, from string, fn func(name string, v []byte) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.PrefetchValues = false
		o.Prefix = metaKey(prefix)
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Seek(metaKey(max(from, prefix))); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
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
