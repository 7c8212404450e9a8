package badger

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/agentstate/agentstate/objects"
)

// List sizes (docs/format.md "List sizes"): with every chunk list node it
// writes, the store writes in the same write a small record of the size
// the node records, so that a reader numbering a value's pages (a diff of
// two versions of a database) learns the size of a run of pages both
// versions share without reading and decoding the node over it. The
// record is derived: verify checks each against its node, verify --repair
// writes them again, gc deletes them with their nodes.

// ListSizePrefix starts the metadata name of every list size record; the
// node's CID in binary form follows.
const ListSizePrefix = "lsize/"

var listSizeCRC = crc32.MakeTable(crc32.Castagnoli)

func listSizeKey(c objects.CID) []byte { return metaKey(ListSizePrefix + string(c.Bytes())) }

// EncodeListSize is the record of list node c recording size: the size as
// a uvarint, then the CRC-32C (Castagnoli) of c's binary form followed by
// that uvarint, 4 bytes big-endian.
func EncodeListSize(c objects.CID, size uint64) []byte {
	v := binary.AppendUvarint(make([]byte, 0, 14), size)
	crc := crc32.Update(crc32.Checksum(c.Bytes(), listSizeCRC), listSizeCRC, v)
	return binary.BigEndian.AppendUint32(v, crc)
}

// DecodeListSize returns the size a list size record of c holds, and
// whether it is one: a uvarint taking all but the last 4 bytes and a
// checksum that matches.
func DecodeListSize(c objects.CID, rec []byte) (uint64, bool) {
	if len(rec) < 5 || len(rec) > 14 {
		return 0, false
	}
	v := rec[:len(rec)-4]
	size, n := binary.Uvarint(v)
	if n != len(v) {
		return 0, false
	}
	crc := crc32.Update(crc32.Checksum(c.Bytes(), listSizeCRC), listSizeCRC, v)
	if crc != binary.BigEndian.Uint32(rec[len(rec)-4:]) {
		return 0, false
	}
	return size, true
}

// listSizeEntry returns the key and record to write with block b, or
// ok false when b is no chunk list node.
func (s *Store) listSizeEntry(b objects.Block) (key, rec []byte, ok bool) {
	key, rec, ok = listSizeEntryOf(b)
	if ok {
		s.lsizes.Store(lsizesSome)
	}
	return key, rec, ok
}

func listSizeEntryOf(b objects.Block) (key, rec []byte, ok bool) {
	if b.CID.Codec() != objects.CodecDagCBOR {
		return nil, nil, false
	}
	size, ok := objects.ListNodeSize(b.Data)
	if !ok {
		return nil, nil, false
	}
	return listSizeKey(b.CID), EncodeListSize(b.CID, size), true
}

// listSizeWalk is how many records a lookup steps over to reach the next
// one asked for before it seeks instead: stepping reads the table block it
// is in (about 300 records a block), a seek may read and decompress a
// block again (Badger's block cache takes a block in only some time after
// it was read, so lookups in a row miss it).
const listSizeWalk = 256

// listSizePoint is how many records at most are looked up one by one
// rather than in one pass of an iterator.
const listSizePoint = 8

// Whether the store holds any list size record (Store.lsizes): a store
// written before they were kept holds none until verify --repair, and its
// readers then skip the lookups instead of making each in vain. Another
// process writing records meanwhile is not seen: its nodes are read.
const (
	lsizesUnknown = iota
	lsizesNone
	lsizesSome
)

// hasListSizes reports whether the store may hold list size records: it
// looks for one the first time, and knows of those this process writes.
func (s *Store) hasListSizes() bool {
	switch s.lsizes.Load() {
	case lsizesSome:
		return true
	case lsizesNone:
		return false
	}
	found := false
	_ = s.db.View(func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.PrefetchValues = false
		o.Prefix = metaKey(ListSizePrefix)
		it := txn.NewIterator(o)
		defer it.Close()
		it.Rewind()
		found = it.Valid()
		return nil
	})
	if found {
		s.lsizes.Store(lsizesSome)
	} else {
		s.lsizes.CompareAndSwap(lsizesUnknown, lsizesNone)
	}
	return s.lsizes.Load() == lsizesSome
}

// ListSizes calls fn with the size of each of cids that has a good list
// size record (objects.ListSizeReader), held or written. The records are
// read in key order in one pass of one read transaction, stepping from
// one to the next where they are near and seeking where they are not, so
// records that share a table block cost one read of it. A record that
// does not decode is passed over: the caller reads the node instead.
func (s *Store) ListSizes(ctx context.Context, cids []objects.CID, fn func(i int, size uint64)) error {
	type ask struct {
		key []byte
		i   int
	}
	asks := make([]ask, 0, len(cids))
	for i, c := range cids {
		k := listSizeKey(c)
		if rec, held := s.held.get(k); held {
			if size, ok := DecodeListSize(c, rec); ok {
				fn(i, size)
			}
			continue
		}
		asks = append(asks, ask{k, i})
	}
	if len(asks) == 0 || !s.hasListSizes() {
		return ctx.Err()
	}
	slices.SortFunc(asks, func(a, b ask) int { return bytes.Compare(a.key, b.key) })
	decode := func(i int, v []byte) {
		if size, ok := DecodeListSize(cids[i], v); ok {
			fn(i, size)
		}
	}
	if len(asks) <= listSizePoint {
		// A few: a lookup each (the table's bloom filter passes over most
		// tables), cheaper than an iterator over every level.
		return s.db.View(func(txn *badger.Txn) error {
			for _, a := range asks {
				it, err := txn.Get(a.key)
				if errors.Is(err, badger.ErrKeyNotFound) {
					continue
				}
				if err == nil {
					err = it.Value(func(v []byte) error { decode(a.i, v); return nil })
				}
				if err != nil {
					return err
				}
			}
			return ctx.Err()
		})
	}
	return s.db.View(func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.PrefetchValues = false
		o.Prefix = metaKey(ListSizePrefix)
		it := txn.NewIterator(o)
		defer it.Close()
		placed := false
		for _, a := range asks {
			if err := ctx.Err(); err != nil {
				return err
			}
			for n := 0; placed && it.Valid() && n < listSizeWalk && bytes.Compare(it.Item().Key(), a.key) < 0; n++ {
				it.Next()
			}
			if !placed || (it.Valid() && bytes.Compare(it.Item().Key(), a.key) < 0) {
				it.Seek(a.key)
				placed = true
			}
			if !it.Valid() {
				return nil // no record at or after this key
			}
			if !bytes.Equal(it.Item().Key(), a.key) {
				continue
			}
			if err := it.Item().Value(func(v []byte) error { decode(a.i, v); return nil }); err != nil {
				return err
			}
		}
		return nil
	})
}

// listSizeKeys returns the keys of the list size records of cids that
// exist, held or written.
func (s *Store) listSizeKeys(cids []objects.CID) ([][]byte, error) {
	var keys [][]byte
	err := s.db.View(func(txn *badger.Txn) error {
		for _, c := range cids {
			if c.Codec() != objects.CodecDagCBOR {
				continue
			}
			k := listSizeKey(c)
			if _, held := s.held.get(k); held {
				keys = append(keys, k)
				continue
			}
			_, err := txn.Get(k)
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			keys = append(keys, k)
		}
		return nil
	})
	return keys, err
}

// RebuildListSizes drops every list size record and writes one for each
// chunk list node stored (verify --repair), reading the store's dag-cbor
// blocks in one scan. It returns how many it wrote.
func (s *Store) RebuildListSizes(ctx context.Context) (int, error) {
	if err := s.DeleteMetaPrefix(ctx, ListSizePrefix); err != nil {
		return 0, err
	}
	var meta [][]byte
	n := 0
	flush := func() error {
		if len(meta) == 0 {
			return nil
		}
		err := s.PutWithMeta(ctx, nil, meta...)
		meta = meta[:0]
		return err
	}
	err := s.ScanBlocks(ctx, func(c objects.CID) bool { return c.Codec() == objects.CodecDagCBOR },
		func(c objects.CID, _ int64, data []byte) error {
			if objects.Verify(c, data) != nil {
				return nil // a damaged block gets no record; verify reports it
			}
			size, ok := objects.ListNodeSize(data)
			if !ok {
				return nil
			}
			meta = append(meta, []byte(ListSizePrefix+string(c.Bytes())), EncodeListSize(c, size))
			s.lsizes.Store(lsizesSome)
			n++
			if len(meta) >= 2*4096 {
				return flush()
			}
			return nil
		})
	if err != nil {
		return 0, err
	}
	return n, flush()
}
