// Package memory is a repository's storage held in memory: blocks, HEAD
// records and operation logs, receipt tapes and metadata. It implements every
// storage interface, beside the Badger store (dag/repo/storage/badger), and
// runs the same conformance suites (dag/repo/storage/storagetest). Nothing
// survives Close.
package memory

import (
	"bytes"
	"context"
	"iter"
	"slices"
	"strings"
	"sync"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
	"github.com/agentstate/agentstate/refs"
)

// Storage implements objects.BlockStore (with its lister and deleter
// abilities), refs.Store, tape.Store and the repository's metadata store.
// It is safe for concurrent use.
type Storage struct {
	*memstore.Store

	mu    sync.Mutex
	heads map[string][]byte
	logs  map[string][][]byte // entry seq n at index n-1
	tapes map[string][][]byte
	meta  map[string][]byte
}

// New returns empty storage.
func New() *Storage {
	return &Storage{Store: memstore.New(), heads: map[string][]byte{}, logs: map[string][][]byte{},
		tapes: map[string][][]byte{}, meta: map[string][]byte{}}
}

// Close releases nothing; it exists so Storage satisfies repo.Storage.
func (s *Storage) Close() error { return nil }

// HeadRecord implements refs.Store.
func (s *Storage) HeadRecord(ctx context.Context, agent string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := s.heads[agent]
	return bytes.Clone(h), ok, nil
}

// SwapHead implements refs.Store.
func (s *Storage) SwapHead(ctx context.Context, agent string, old []byte, seq uint64, entry, head []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.heads[agent]
	if ok != (old != nil) || !bytes.Equal(cur, old) {
		return refs.ErrSwapped
	}
	log := s.logs[agent]
	for uint64(len(log)) < seq {
		log = append(log, nil)
	}
	log[seq-1] = bytes.Clone(entry)
	s.logs[agent] = log
	s.heads[agent] = bytes.Clone(head)
	return nil
}

// HeadRecords implements refs.Store.
func (s *Storage) HeadRecords(ctx context.Context) iter.Seq2[refs.Record, error] {
	s.mu.Lock()
	out := make([]refs.Record, 0, len(s.heads))
	for a, h := range s.heads {
		out = append(out, refs.Record{Agent: a, Data: bytes.Clone(h)})
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b refs.Record) int { return strings.Compare(a.Agent, b.Agent) })
	return records(out)
}

// LogRecords implements refs.Store.
func (s *Storage) LogRecords(ctx context.Context, agent string) iter.Seq2[refs.Record, error] {
	s.mu.Lock()
	var out []refs.Record
	for i, e := range s.logs[agent] {
		if e != nil {
			out = append(out, refs.Record{Agent: agent, Seq: uint64(i + 1), Data: bytes.Clone(e)})
		}
	}
	s.mu.Unlock()
	return records(out)
}

func records(rs []refs.Record) iter.Seq2[refs.Record, error] {
	return func(yield func(refs.Record, error) bool) {
		for _, r := range rs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// AppendLines implements tape.Store.
func (s *Storage) AppendLines(ctx context.Context, agent string, lines [][]byte) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range lines {
		s.tapes[agent] = append(s.tapes[agent], bytes.Clone(l))
	}
	return uint64(len(s.tapes[agent])), nil
}

// TapeLines implements tape.Store.
func (s *Storage) TapeLines(ctx context.Context, agent string) iter.Seq2[[]byte, error] {
	s.mu.Lock()
	lines := slices.Clone(s.tapes[agent])
	s.mu.Unlock()
	return func(yield func([]byte, error) bool) {
		for _, l := range lines {
			if !yield(bytes.Clone(l), nil) {
				return
			}
		}
	}
}

// GetMeta returns a metadata record.
func (s *Storage) GetMeta(ctx context.Context, name string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.meta[name]
	return bytes.Clone(v), ok, nil
}

// SetMeta writes a metadata record.
func (s *Storage) SetMeta(ctx context.Context, name string, v []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.meta[name] = bytes.Clone(v)
	return nil
}

// MetaPrefix calls fn for every metadata record whose name starts with
// prefix, in name order, and stops at the first error fn returns.
func (s *Storage) MetaPrefix(ctx context.Context, prefix string, fn func(name string, v []byte) error) error {
	s.mu.Lock()
	var names []string
	for n := range s.meta {
		if strings.HasPrefix(n, prefix) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	vals := make([][]byte, len(names))
	for i, n := range names {
		vals[i] = bytes.Clone(s.meta[n])
	}
	s.mu.Unlock()
	for i, n := range names {
		if err := fn(n, vals[i]); err != nil {
			return err
		}
	}
	return nil
}

// DeleteMeta removes the metadata record named name, if there is one.
func (s *Storage) DeleteMeta(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.meta, name)
	return nil
}

// DeleteMetaPrefix removes every metadata record whose name starts with
// prefix.
func (s *Storage) DeleteMetaPrefix(ctx context.Context, prefix string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := range s.meta {
		if strings.HasPrefix(n, prefix) {
			delete(s.meta, n)
		}
	}
	return nil
}

// CIDsWithPrefix returns the stored CIDs whose binary form starts with
// prefix (revision abbreviations).
func (s *Storage) CIDsWithPrefix(ctx context.Context, prefix []byte) ([]objects.CID, error) {
	var out []objects.CID
	for c, err := range s.AllCIDs(ctx) {
		if err != nil {
			return nil, err
		}
		if bytes.HasPrefix(c.Bytes(), prefix) {
			out = append(out, c)
		}
	}
	return out, nil
}

// TrimLog implements refs.LogTrimmer.
func (s *Storage) TrimLog(ctx context.Context, agent string, through uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	log := s.logs[agent]
	for i := range log {
		if uint64(i+1) <= through {
			log[i] = nil
		}
	}
	return nil
}

// PutWithMeta stores blocks and sets the metadata records meta (name,
// value, ...) in one step.
func (s *Storage) PutWithMeta(ctx context.Context, blocks []objects.Block, meta ...[]byte) error {
	if err := s.Put(ctx, blocks...); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := 0; i+1 < len(meta); i += 2 {
		s.meta[string(meta[i])] = bytes.Clone(meta[i+1])
	}
	return nil
}
