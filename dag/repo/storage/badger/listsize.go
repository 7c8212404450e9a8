package badger

import (
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"

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
func listSizeEntry(b objects.Block) (key, rec []byte, ok bool) {
	if b.CID.Codec() != objects.CodecDagCBOR {
		return nil, nil, false
	}
	size, ok := objects.ListNodeSize(b.Data)
	if !ok {
		return nil, nil, false
	}
	return listSizeKey(b.CID), EncodeListSize(b.CID, size), true
}

// ListSizes calls fn with the size of each of cids that has a good list
// size record (objects.ListSizeReader), held or written, reading them in
// one read transaction. A record that does not decode is passed over: the
// caller reads the node instead.
func (s *Store) ListSizes(ctx context.Context, cids []objects.CID, fn func(i int, size uint64)) error {
	return s.db.View(func(txn *badger.Txn) error {
		for i, c := range cids {
			if err := ctx.Err(); err != nil {
				return err
			}
			k := listSizeKey(c)
			rec, held := s.held.get(k)
			if !held {
				it, err := txn.Get(k)
				if errors.Is(err, badger.ErrKeyNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				if err := it.Value(func(v []byte) error {
					rec = v
					if size, ok := DecodeListSize(c, rec); ok {
						fn(i, size)
					}
					return nil
				}); err != nil {
					return err
				}
				continue
			}
			if size, ok := DecodeListSize(c, rec); ok {
				fn(i, size)
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
