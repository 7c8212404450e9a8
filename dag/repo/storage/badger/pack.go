package badger

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/agentstate/agentstate/objects"
	badger "github.com/dgraph-io/badger/v4"
	"github.com/klauspost/compress/zstd"
)

// Packs (docs/format.md, "Packs"). gc may store a group of blocks (a
// value's chunks and list nodes at neighbouring places, every version of
// them) as one pack: a record 'p' + id holding the members' CIDs and sizes
// and one ZSTD frame of their bytes, one after another. Each member keeps
// its block key, 'b' + CID, whose value becomes a pointer into the pack,
// marked by Badger's user-meta byte. A block's CID is still the hash of
// its plain bytes: every read resolves the pointer, decompresses the
// pack and checks the bytes against the CID, as it checks a plain block.
// Only the storage knows: Get, GetBatch and ScanBlocks hand out whole
// blocks, so export, sync, CAR files and the served store see no packs.

const (
	// nsPack holds pack records, 'p' + id (the sha256 of the record).
	nsPack = 'p'
	// metaPacked marks a block key whose value is a pack pointer.
	metaPacked byte = 1
	// packVersion is the first byte of a pack record.
	packVersion byte = 1
	// maxPackPlain bounds a pack's members' bytes: what one read
	// decompresses at most.
	maxPackPlain = 2 << 20
	// packCacheBytes bounds the decompressed packs a store keeps.
	packCacheBytes = 32 << 20
)

// ErrPackMissing: a block is stored in a pack whose record is missing or
// unreadable (see PackError).
var ErrPackMissing = errors.New("store: block's pack is missing or damaged")

// PackError names a packed block whose pack cannot be read.
type PackError struct {
	CID    objects.CID
	Pack   []byte // the pack's id
	Reason string
}

func (e *PackError) Error() string {
	return fmt.Sprintf("store: block %s is stored in pack %x, which %s", e.CID, e.Pack, e.Reason)
}

// Is reports whether target is ErrPackMissing.
func (e *PackError) Is(target error) bool { return target == ErrPackMissing }

var (
	zstdOnce sync.Once
	zstdEnc  *zstd.Encoder
	zstdDec  *zstd.Decoder
)

func packCodec() (*zstd.Encoder, *zstd.Decoder) {
	zstdOnce.Do(func() {
		var err error
		if zstdEnc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(maxPackPlain)); err != nil {
			panic(err) // constant options
		}
		if zstdDec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxPackPlain), zstd.WithDecoderMaxWindow(maxPackPlain)); err != nil {
			panic(err)
		}
	})
	return zstdEnc, zstdDec
}

func packKey(id []byte) []byte { return append([]byte{nsPack}, id...) }

// packMember is one block of a pack.
type packMember struct {
	cid  objects.CID
	off  int
	size int
}

// encodePack builds a pack record of blocks (CIDs and their plain bytes).
func encodePack(cids []objects.CID, data [][]byte) []byte {
	enc, _ := packCodec()
	rec := []byte{packVersion}
	rec = binary.AppendUvarint(rec, uint64(len(cids)))
	var plain []byte
	for i, c := range cids {
		b := c.Bytes()
		rec = binary.AppendUvarint(rec, uint64(len(b)))
		rec = append(rec, b...)
		rec = binary.AppendUvarint(rec, uint64(len(data[i])))
		plain = append(plain, data[i]...)
	}
	return enc.EncodeAll(plain, rec)
}

// decodePackHead reads a pack record's members and returns them with the
// compressed frame that follows.
func decodePackHead(rec []byte) ([]packMember, []byte, error) {
	if len(rec) == 0 || rec[0] != packVersion {
		return nil, nil, errors.New("has an unknown format")
	}
	p := rec[1:]
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	n, ok := uv()
	if !ok || n == 0 || n > uint64(len(p)) {
		return nil, nil, errors.New("has a malformed member list")
	}
	ms := make([]packMember, 0, n)
	off := 0
	for range n {
		l, ok := uv()
		if !ok || l > uint64(len(p)) {
			return nil, nil, errors.New("has a malformed member list")
		}
		c, err := objects.CIDFromBytes(p[:l])
		if err != nil {
			return nil, nil, fmt.Errorf("names a malformed CID: %w", err)
		}
		p = p[l:]
		size, ok := uv()
		if !ok || size > maxPackPlain || off+int(size) > maxPackPlain {
			return nil, nil, errors.New("has a malformed member list")
		}
		ms = append(ms, packMember{c, off, int(size)})
		off += int(size)
	}
	return ms, p, nil
}

// decodePack returns a pack record's members and their bytes.
func decodePack(rec []byte) ([]packMember, []byte, error) {
	ms, frame, err := decodePackHead(rec)
	if err != nil {
		return nil, nil, err
	}
	_, dec := packCodec()
	plain, err := dec.DecodeAll(frame, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("does not decompress: %v", err)
	}
	last := ms[len(ms)-1]
	if len(plain) != last.off+last.size {
		return nil, nil, fmt.Errorf("holds %d bytes, its members %d", len(plain), last.off+last.size)
	}
	return ms, plain, nil
}

// A pack pointer, the value of a packed block's key: the pack's id (32
// bytes), the member's offset and size (uvarints).
func encodePointer(id []byte, off, size int) []byte {
	v := append([]byte(nil), id...)
	v = binary.AppendUvarint(v, uint64(off))
	return binary.AppendUvarint(v, uint64(size))
}

func decodePointer(v []byte) (id []byte, off, size int, ok bool) {
	if len(v) < 34 {
		return nil, 0, 0, false
	}
	id, p := v[:32], v[32:]
	o, n := binary.Uvarint(p)
	if n <= 0 {
		return nil, 0, 0, false
	}
	s, m := binary.Uvarint(p[n:])
	if m <= 0 || n+m != len(p) || o > maxPackPlain || s > maxPackPlain {
		return nil, 0, 0, false
	}
	return id, int(o), int(s), true
}

// packCache holds decompressed packs, by id, up to packCacheBytes.
type packCache struct {
	mu    sync.Mutex
	packs map[string][]byte
	order []string
	bytes int
}

func (pc *packCache) get(id []byte) ([]byte, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	p, ok := pc.packs[string(id)]
	return p, ok
}

func (pc *packCache) add(id []byte, plain []byte) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.packs == nil {
		pc.packs = map[string][]byte{}
	}
	if _, ok := pc.packs[string(id)]; ok || len(plain) > packCacheBytes/4 {
		return
	}
	for pc.bytes+len(plain) > packCacheBytes && len(pc.order) > 0 {
		pc.bytes -= len(pc.packs[pc.order[0]])
		delete(pc.packs, pc.order[0])
		pc.order = pc.order[1:]
	}
	pc.packs[string(id)] = plain
	pc.order = append(pc.order, string(id))
	pc.bytes += len(plain)
}

func (pc *packCache) drop(id []byte) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if p, ok := pc.packs[string(id)]; ok {
		pc.bytes -= len(p)
		delete(pc.packs, string(id))
		for i, o := range pc.order {
			if o == string(id) {
				pc.order = append(pc.order[:i], pc.order[i+1:]...)
				break
			}
		}
	}
}

// packPlain returns the members' bytes of pack id, read in txn.
func (s *Store) packPlain(txn *badger.Txn, id []byte) ([]byte, error) {
	if p, ok := s.packs.get(id); ok {
		return p, nil
	}
	it, err := txn.Get(packKey(id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, errors.New("is missing")
	}
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %v", err)
	}
	rec, err := it.ValueCopy(nil)
	if err != nil {
		return nil, fmt.Errorf("cannot be read: %v", err)
	}
	if sum := sha256.Sum256(rec); !bytes.Equal(sum[:], id) {
		return nil, errors.New("is corrupt (its bytes do not hash to its id)")
	}
	_, plain, err := decodePack(rec)
	if err != nil {
		return nil, err
	}
	s.packs.add(id, plain)
	return plain, nil
}

// blockValue returns the bytes of block c from its key's item: the value
// itself, or, for a packed block, its bytes taken from the pack. The
// caller checks them against c.
func (s *Store) blockValue(txn *badger.Txn, c objects.CID, item *badger.Item) ([]byte, error) {
	v, err := item.ValueCopy(nil)
	if err != nil || item.UserMeta()&metaPacked == 0 {
		return v, err
	}
	id, off, size, ok := decodePointer(v)
	if !ok {
		return nil, &PackError{CID: c, Reason: "is named by a malformed pointer"}
	}
	plain, err := s.packPlain(txn, id)
	if err != nil {
		return nil, &PackError{CID: c, Pack: id, Reason: err.Error()}
	}
	if off+size > len(plain) {
		return nil, &PackError{CID: c, Pack: id, Reason: "is shorter than the pointer says"}
	}
	return bytes.Clone(plain[off : off+size]), nil
}

// PackReport says what Pack did.
type PackReport struct {
	Packs, Blocks int   // packs written, blocks they hold
	Bytes         int64 // their compressed bytes
}

// Pack stores each group of blocks (at most maxPackPlain bytes of them;
// a longer group is cut) as one pack, in group order. Blocks that are not
// stored, or that cannot be read whole, are left out; a group already
// stored as exactly that pack is left as it is. Each pack is written with
// its members' pointers in one transaction, so a kill at any instant
// leaves every block readable; a pack that no pointer names any more
// (its members packed anew, or a kill between the two steps) is deleted
// here or by the next Pack or Delete that meets it (SweepPacks).
func (s *Store) Pack(ctx context.Context, groups [][]objects.CID) (PackReport, error) {
	var rep PackReport
	if err := s.flushHeld(); err != nil {
		return rep, err
	}
	old := map[string]bool{}
	for _, g := range groups {
		for len(g) > 0 {
			if err := ctx.Err(); err != nil {
				return rep, err
			}
			n, err := s.packGroup(ctx, &g, old, &rep)
			if err != nil {
				return rep, err
			}
			_ = n
		}
	}
	for id := range old {
		if err := s.dropPackIfUnused(ctx, []byte(id)); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// packGroup packs the head of *g (up to maxPackPlain bytes) and advances *g.
func (s *Store) packGroup(ctx context.Context, g *[]objects.CID, old map[string]bool, rep *PackReport) (int, error) {
	var cids []objects.CID
	var data [][]byte
	var ids [][]byte
	total, used := 0, 0
	seen := map[objects.CID]bool{}
	err := s.db.View(func(txn *badger.Txn) error {
		for _, c := range *g {
			if total >= maxPackPlain {
				break
			}
			used++
			if seen[c] {
				continue
			}
			seen[c] = true
			it, err := txn.Get(blockKey(c))
			if errors.Is(err, badger.ErrKeyNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			var id []byte
			if it.UserMeta()&metaPacked != 0 {
				v, err := it.ValueCopy(nil)
				if err != nil {
					return err
				}
				if p, _, _, ok := decodePointer(v); ok {
					id = p
				}
			}
			b, err := s.blockValue(txn, c, it)
			if err != nil || objects.Verify(c, b) != nil || total+len(b) > maxPackPlain {
				continue // damaged (verify reports it) or too large: left as it is
			}
			total += len(b)
			cids, data, ids = append(cids, c), append(data, b), append(ids, id)
		}
		return nil
	})
	*g = (*g)[used:]
	if err != nil {
		return 0, fmt.Errorf("store: reading blocks to pack: %w", err)
	}
	if len(cids) < 2 {
		return 0, nil
	}
	rec := encodePack(cids, data)
	sum := sha256.Sum256(rec)
	id := sum[:]
	same := true
	for _, o := range ids {
		if !bytes.Equal(o, id) {
			same = false
		}
		if o != nil && !bytes.Equal(o, id) {
			old[string(o)] = true
		}
	}
	if same {
		return 0, nil // stored as this very pack already
	}
	if err := s.checkWrite(int64(len(rec) + len(cids)*96)); err != nil {
		return 0, err
	}
	if err := s.db.Update(func(txn *badger.Txn) error {
		if err := txn.Set(packKey(id), rec); err != nil {
			return err
		}
		off := 0
		for i, c := range cids {
			if err := txn.SetEntry(badger.NewEntry(blockKey(c), encodePointer(id, off, len(data[i]))).WithMeta(metaPacked)); err != nil {
				return err
			}
			off += len(data[i])
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("store: writing a pack: %w", err)
	}
	s.writes.Add(1)
	rep.Packs++
	rep.Blocks += len(cids)
	rep.Bytes += int64(len(rec))
	return len(cids), nil
}

// packUsers returns the members of pack id whose keys point into it.
func (s *Store) packUsers(txn *badger.Txn, id []byte) ([]objects.CID, error) {
	it, err := txn.Get(packKey(id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	rec, err := it.ValueCopy(nil)
	if err != nil {
		return nil, err
	}
	ms, _, err := decodePackHead(rec)
	if err != nil {
		return nil, nil // a malformed record names nobody
	}
	var users []objects.CID
	for _, m := range ms {
		bi, err := txn.Get(blockKey(m.cid))
		if errors.Is(err, badger.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if bi.UserMeta()&metaPacked == 0 {
			continue
		}
		v, err := bi.ValueCopy(nil)
		if err != nil {
			return nil, err
		}
		if p, _, _, ok := decodePointer(v); ok && bytes.Equal(p, id) {
			users = append(users, m.cid)
		}
	}
	return users, nil
}

// dropPackIfUnused deletes pack id when no block key points into it.
func (s *Store) dropPackIfUnused(ctx context.Context, id []byte) error {
	return s.db.Update(func(txn *badger.Txn) error {
		users, err := s.packUsers(txn, id)
		if err != nil || len(users) > 0 {
			return err
		}
		s.packs.drop(id)
		return txn.Delete(packKey(id))
	})
}

// SweepPacks deletes every pack no block key points into (what a kill
// between a repack's two steps leaves) and returns how many.
func (s *Store) SweepPacks(ctx context.Context) (int, error) {
	ids, err := s.packIDs(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, id := range ids {
		var used bool
		if err := s.db.View(func(txn *badger.Txn) error {
			users, err := s.packUsers(txn, id)
			used = len(users) > 0
			return err
		}); err != nil {
			return n, err
		}
		if !used {
			if err := s.dropPackIfUnused(ctx, id); err != nil {
				return n, err
			}
			n++
		}
	}
	return n, nil
}

// packIDs lists the stored packs' ids.
func (s *Store) packIDs(ctx context.Context) ([][]byte, error) {
	var ids [][]byte
	err := s.db.View(func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.PrefetchValues = false
		o.Prefix = []byte{nsPack}
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			ids = append(ids, it.Item().KeyCopy(nil)[1:])
		}
		return nil
	})
	return ids, err
}

// PackMembers returns, for each stored pack (by id), the CIDs its record
// holds, whether or not their keys still point into it (tests, and what
// a redaction checks is gone).
func (s *Store) PackMembers(ctx context.Context) (map[string][]objects.CID, error) {
	out := map[string][]objects.CID{}
	err := s.db.View(func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.Prefix = []byte{nsPack}
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			rec, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			ms, _, err := decodePackHead(rec)
			if err != nil {
				continue
			}
			var cs []objects.CID
			for _, m := range ms {
				cs = append(cs, m.cid)
			}
			out[string(it.Item().Key()[1:])] = cs
		}
		return nil
	})
	return out, err
}

// unpackFor makes ready the deletion of cids: every pack whose record
// holds one of them (the one its key points into, and any older pack still
// holding its bytes) is to go, so the other blocks stored in it are
// written back whole first; the ids of those packs are returned for
// deletion once cids are deleted (dropPackIfUnused). A kill part-way
// leaves blocks stored whole beside their pack, each readable.
func (s *Store) unpackFor(ctx context.Context, cids []objects.CID) ([][]byte, error) {
	all, err := s.PackMembers(ctx)
	if err != nil || len(all) == 0 {
		return nil, err
	}
	dying := make(map[objects.CID]bool, len(cids))
	for _, c := range cids {
		dying[c] = true
	}
	var ids [][]byte
	for id, members := range all {
		if !slices.ContainsFunc(members, func(c objects.CID) bool { return dying[c] }) {
			continue
		}
		ids = append(ids, []byte(id))
		var keep []objects.Block
		if err := s.db.View(func(txn *badger.Txn) error {
			users, err := s.packUsers(txn, []byte(id))
			if err != nil {
				return err
			}
			for _, c := range users {
				if dying[c] {
					continue
				}
				it, err := txn.Get(blockKey(c))
				if err != nil {
					return err
				}
				b, err := s.blockValue(txn, c, it)
				if err == nil {
					err = objects.Verify(c, b)
				}
				if err != nil {
					return err // a kept block that cannot be read whole: delete nothing
				}
				keep = append(keep, objects.Block{CID: c, Data: b})
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("store: unpacking the blocks kept beside deleted ones: %w", err)
		}
		if err := s.writeWhole(ctx, keep); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// writeWhole writes blocks as plain values over whatever their keys hold.
func (s *Store) writeWhole(ctx context.Context, blocks []objects.Block) error {
	if len(blocks) == 0 {
		return nil
	}
	var n int64
	for _, b := range blocks {
		n += int64(len(b.Data) + 64)
	}
	if err := s.checkWrite(n); err != nil {
		return err
	}
	wb := s.db.NewWriteBatch()
	defer wb.Cancel()
	for _, b := range blocks {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := wb.Set(blockKey(b.CID), b.Data); err != nil {
			return err
		}
	}
	s.writes.Add(1)
	return wb.Flush()
}

// DropPackForTest deletes pack id's record, as damage would.
func (s *Store) DropPackForTest(id []byte) error {
	s.packs.drop(id)
	return s.db.Update(func(txn *badger.Txn) error { return txn.Delete(packKey(id)) })
}

// RepairPacks deletes the pointers of packed blocks whose pack is missing
// or damaged (verify --repair): their bytes are nowhere in the store, and
// a pointer left in place would make the block look stored, so that
// storing its content again (a commit of the same file, a fetch from a
// copy) would skip it. Afterwards such a block reads as missing. It also
// deletes the packs no pointer names. It returns the pointers dropped.
func (s *Store) RepairPacks(ctx context.Context) (int, error) {
	var bad []objects.CID
	state := map[string]bool{} // pack id → readable
	err := s.db.View(func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.PrefetchValues = false
		o.Prefix = []byte{nsBlock}
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			item := it.Item()
			if item.UserMeta()&metaPacked == 0 {
				continue
			}
			c, err := objects.CIDFromBytes(item.Key()[1:])
			if err != nil {
				continue
			}
			v, err := item.ValueCopy(nil)
			if err != nil {
				return err
			}
			id, off, size, ok := decodePointer(v)
			if ok {
				good, seen := state[string(id)]
				if !seen {
					plain, err := s.packPlain(txn, id)
					good = err == nil
					state[string(id)] = good
					ok = good && off+size <= len(plain)
				} else {
					ok = good
				}
			}
			if !ok {
				bad = append(bad, c)
			}
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if len(bad) > 0 {
		if err := s.checkWrite(int64(len(bad)) * 64); err != nil {
			return 0, err
		}
		wb := s.db.NewWriteBatch()
		defer wb.Cancel()
		for _, c := range bad {
			if err := wb.Delete(blockKey(c)); err != nil {
				return 0, err
			}
		}
		if err := wb.Flush(); err != nil {
			return 0, err
		}
	}
	if _, err := s.SweepPacks(ctx); err != nil {
		return len(bad), err
	}
	return len(bad), nil
}
