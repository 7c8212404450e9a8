// Package memstore is an in-memory objects.BlockStore, for tests and for
// staging blocks before they are written elsewhere.
package memstore

import (
	"context"
	"iter"
	"sync"

	"github.com/agentstate/agentstate/objects"
)

// Store is a map of blocks guarded by a mutex.
type Store struct {
	mu     sync.RWMutex
	blocks map[objects.CID][]byte
}

// New returns an empty store.
func New() *Store { return &Store{blocks: make(map[objects.CID][]byte)} }

func (s *Store) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	s.mu.RLock()
	data, ok := s.blocks[c]
	s.mu.RUnlock()
	if !ok {
		return nil, &objects.NotFoundError{CID: c}
	}
	if err := objects.Verify(c, data); err != nil {
		return nil, err
	}
	return data, nil
}

func (s *Store) Has(ctx context.Context, c objects.CID) (bool, error) {
	s.mu.RLock()
	_, ok := s.blocks[c]
	s.mu.RUnlock()
	return ok, nil
}

func (s *Store) Put(ctx context.Context, blocks ...objects.Block) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range blocks {
		s.blocks[b.CID] = append([]byte(nil), b.Data...)
	}
	return nil
}

func (s *Store) Delete(ctx context.Context, cids ...objects.CID) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range cids {
		delete(s.blocks, c)
	}
	return nil
}

func (s *Store) AllCIDs(ctx context.Context) iter.Seq2[objects.CID, error] {
	return func(yield func(objects.CID, error) bool) {
		s.mu.RLock()
		cids := make([]objects.CID, 0, len(s.blocks))
		for c := range s.blocks {
			cids = append(cids, c)
		}
		s.mu.RUnlock()
		for _, c := range cids {
			if !yield(c, nil) {
				return
			}
		}
	}
}

// ScanBlocks implements objects.BlockScanner over a copy of the block list
// (any order).
func (s *Store) ScanBlocks(ctx context.Context, want func(objects.CID) bool, fn func(c objects.CID, size int64, data []byte) error) error {
	s.mu.RLock()
	blocks := make([]objects.Block, 0, len(s.blocks))
	for c, d := range s.blocks {
		blocks = append(blocks, objects.Block{CID: c, Data: d})
	}
	s.mu.RUnlock()
	for _, b := range blocks {
		if err := ctx.Err(); err != nil {
			return err
		}
		var data []byte
		if want == nil || want(b.CID) {
			data = append([]byte(nil), b.Data...)
		}
		if err := fn(b.CID, int64(len(b.Data)), data); err != nil {
			return err
		}
	}
	return nil
}

// Corrupt replaces a block's bytes without changing its CID (for tests of
// verify-on-read).
func (s *Store) Corrupt(c objects.CID, data []byte) {
	s.mu.Lock()
	s.blocks[c] = data
	s.mu.Unlock()
}

// Len returns the number of blocks held.
func (s *Store) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.blocks)
}
