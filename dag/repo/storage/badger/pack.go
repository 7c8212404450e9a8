package badger

import (
	"bytes"
	"cmp"
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
	// metaPacked marks a block key whose value is a pack pointer that
	// starts with the pack's whole id (what builds before short pointers
	// wrote; still read).
	metaPacked byte = 1
	// metaPackedShort marks a block key whose value is a short pack
	// pointer: the member's offset and size, then the first bytes of the
	// pack's id (pointerPrefix of them).
	metaPackedShort byte = 2
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

// isPacked reports whether a block key's user-meta byte marks a pack
// pointer, of either layout.
func isPacked(meta byte) bool { return meta == metaPacked || meta == metaPackedShort }

// pointerPrefix is how many leading bytes of its pack's id a short pointer
// carries. A pack whose prefix another stored pack already has is written
// with long pointers (its whole id), so a short pointer's prefix names one
// pack; a reader still takes, of the packs whose ids start with it, the
// one whose record lists the block at the pointer's offset and size
// (packFor). With four bytes, a store of n packs writes a pack with long
// pointers about once in 2^32/n packs; tests shorten the prefix to make
// every pack share one.
var pointerPrefix = 4

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

// A pack pointer, the value of a packed block's key. Short (user-meta
// metaPackedShort, written now): uvarint offset and uvarint size of the
// member's bytes, then the first pointerPrefix bytes of the pack's id.
// Long (metaPacked, written by earlier builds): the pack's whole id (32
// bytes), then the offset and size.
func encodePointer(id []byte, off, size int) []byte {
	v := binary.AppendUvarint(nil, uint64(off))
	v = binary.AppendUvarint(v, uint64(size))
	return append(v, id[:pointerPrefix]...)
}

// encodeLongPointer is a pointer in the long layout (user-meta metaPacked).
func encodeLongPointer(id []byte, off, size int) []byte {
	v := binary.AppendUvarint(bytes.Clone(id), uint64(off))
	return binary.AppendUvarint(v, uint64(size))
}

// decodePointer reads a pointer of either layout (meta is its key's
// user-meta byte) and returns the id, or the prefix of one, it names.
func decodePointer(meta byte, v []byte) (ref []byte, off, size int, ok bool) {
	var p []byte
	switch meta {
	case metaPacked:
		if len(v) < 34 {
			return nil, 0, 0, false
		}
		ref, p = v[:32], v[32:]
	case metaPackedShort:
		p = v
	default:
		return nil, 0, 0, false
	}
	o, n := binary.Uvarint(p)
	if n <= 0 {
		return nil, 0, 0, false
	}
	sz, m := binary.Uvarint(p[n:])
	if m <= 0 || o > maxPackPlain || sz > maxPackPlain {
		return nil, 0, 0, false
	}
	if meta == metaPackedShort {
		ref = p[n+m:]
		if len(ref) > 32 {
			return nil, 0, 0, false
		}
	} else if n+m != len(p) {
		return nil, 0, 0, false
	}
	return ref, int(o), int(sz), true
}

// packEntry is a pack read and checked: its members, by CID, and their
// bytes.
type packEntry struct {
	members map[objects.CID]packMember
	plain   []byte
}

// member returns c's bytes in the pack, if its record lists c at off and
// size.
func (e *packEntry) member(c objects.CID, off, size int) ([]byte, bool) {
	m, ok := e.members[c]
	if !ok || m.off != off || m.size != size || off+size > len(e.plain) {
		return nil, false
	}
	return e.plain[off : off+size], true
}

// packCache holds decompressed packs, by id, up to packCacheBytes, and the
// ids met under each short pointer's prefix.
type packCache struct {
	mu     sync.Mutex
	packs  map[string]*packEntry
	order  []string
	bytes  int
	prefix map[string][][]byte // pointer prefix → pack ids starting with it
}

func (pc *packCache) get(id []byte) (*packEntry, bool) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	p, ok := pc.packs[string(id)]
	return p, ok
}

func (pc *packCache) add(id []byte, e *packEntry) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.packs == nil {
		pc.packs = map[string]*packEntry{}
	}
	if _, ok := pc.packs[string(id)]; ok || len(e.plain) > packCacheBytes/4 {
		return
	}
	for pc.bytes+len(e.plain) > packCacheBytes && len(pc.order) > 0 {
		pc.bytes -= len(pc.packs[pc.order[0]].plain)
		delete(pc.packs, pc.order[0])
		pc.order = pc.order[1:]
	}
	pc.packs[string(id)] = e
	pc.order = append(pc.order, string(id))
	pc.bytes += len(e.plain)
}

func (pc *packCache) drop(id []byte) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if p, ok := pc.packs[string(id)]; ok {
		pc.bytes -= len(p.plain)
		delete(pc.packs, string(id))
		for i, o := range pc.order {
			if o == string(id) {
				pc.order = append(pc.order[:i], pc.order[i+1:]...)
				break
			}
		}
	}
	for k, ids := range pc.prefix {
		if !bytes.HasPrefix(id, []byte(k)) {
			continue
		}
		if i := slices.IndexFunc(ids, func(o []byte) bool { return bytes.Equal(o, id) }); i >= 0 {
			pc.prefix[k] = slices.Delete(ids, i, i+1)
		}
	}
}

// withPrefix returns the pack ids known to start with prefix.
func (pc *packCache) withPrefix(prefix []byte) [][]byte {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return slices.Clone(pc.prefix[string(prefix)])
}

// notePrefix records the ids of the packs that start with prefix, as a
// read of the store found them.
func (pc *packCache) notePrefix(prefix []byte, ids [][]byte) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	if pc.prefix == nil {
		pc.prefix = map[string][][]byte{}
	}
	pc.prefix[string(prefix)] = ids
}

// addPrefix adds a pack this store wrote to the ids known under its
// pointers' prefix, if any are.
func (pc *packCache) addPrefix(id []byte) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	k := string(id[:pointerPrefix])
	if ids, ok := pc.prefix[k]; ok && !slices.ContainsFunc(ids, func(o []byte) bool { return bytes.Equal(o, id) }) {
		pc.prefix[k] = append(ids, bytes.Clone(id))
	}
}

// packByID returns pack id, read in txn and checked: its record hashes to
// id and its members' bytes decompress whole.
func (s *Store) packByID(txn *badger.Txn, id []byte) (*packEntry, error) {
	if e, ok := s.packs.get(id); ok {
		return e, nil
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
	ms, plain, err := decodePack(rec)
	if err != nil {
		return nil, err
	}
	e := &packEntry{members: make(map[objects.CID]packMember, len(ms)), plain: plain}
	for _, m := range ms {
		e.members[m.cid] = m
	}
	s.packs.add(id, e)
	return e, nil
}

// packIDsWithPrefix lists, in txn, the ids of the stored packs that start
// with prefix.
func packIDsWithPrefix(txn *badger.Txn, prefix []byte) [][]byte {
	o := badger.DefaultIteratorOptions
	o.PrefetchValues = false
	o.Prefix = packKey(prefix)
	it := txn.NewIterator(o)
	defer it.Close()
	var ids [][]byte
	for it.Rewind(); it.Valid(); it.Next() {
		if k := it.Item().Key(); len(k) == 33 {
			ids = append(ids, bytes.Clone(k[1:]))
		}
	}
	return ids
}

// packFor finds the pack a pointer names for block c (ref: the pointer's
// id, or prefix of one; off and size: where it puts c) and returns c's
// bytes in it and the pack's id. A whole id names its pack; a prefix names
// the pack, among those whose ids start with it, whose record lists c at
// off and size.
func (s *Store) packFor(txn *badger.Txn, c objects.CID, ref []byte, off, size int) ([]byte, []byte, error) {
	if len(ref) == 32 {
		return s.inPacks(txn, c, ref, off, size, [][]byte{ref}, nil)
	}
	if b, id, err := s.inPacks(txn, c, ref, off, size, s.packs.withPrefix(ref), nil); err == nil {
		return b, id, nil
	}
	ids := packIDsWithPrefix(txn, ref)
	s.packs.notePrefix(ref, ids)
	return s.inPacks(txn, c, ref, off, size, ids, nil)
}

// inPacks returns c's bytes from the first pack of ids that holds them
// where the pointer (ref, off, size) says, and that pack's id: for a long
// pointer (ref a whole id) the pack need only be long enough (the caller
// checks the bytes against c), for a short one its record must list c
// there. bad, when not nil, holds the ids of packs found unreadable: they
// are skipped, and the ones found now are added.
func (s *Store) inPacks(txn *badger.Txn, c objects.CID, ref []byte, off, size int, ids [][]byte, bad map[string]bool) ([]byte, []byte, error) {
	var firstErr error
	for _, id := range ids {
		if bad[string(id)] {
			continue
		}
		e, err := s.packByID(txn, id)
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			if bad != nil {
				bad[string(id)] = true
			}
			continue
		}
		if len(ref) == 32 {
			if off+size > len(e.plain) {
				return nil, id, errors.New("is shorter than the pointer says")
			}
			return e.plain[off : off+size], id, nil
		}
		if b, ok := e.member(c, off, size); ok {
			return b, id, nil
		}
	}
	switch {
	case firstErr != nil:
		return nil, ref, firstErr
	case len(ids) == 0:
		return nil, ref, errors.New("is missing")
	}
	return nil, ref, errors.New("does not list it")
}

// packReader resolves many pointers in one transaction (ScanBlocks,
// RepairPacks): each prefix is listed once, and each pack found unreadable
// is not read again; its lengths hold each pack's members' bytes once read
// (-1: unreadable).
type packReader struct {
	s       *Store
	txn     *badger.Txn
	ids     map[string][][]byte
	bad     map[string]bool
	lengths map[string]int
}

func (s *Store) newPackReader(txn *badger.Txn) *packReader {
	return &packReader{s: s, txn: txn, ids: map[string][][]byte{}, bad: map[string]bool{}, lengths: map[string]int{}}
}

// candidates are the packs pointer ref may name.
func (r *packReader) candidates(ref []byte) [][]byte {
	if len(ref) == 32 {
		return [][]byte{ref}
	}
	ids, ok := r.ids[string(ref)]
	if !ok {
		ids = packIDsWithPrefix(r.txn, ref)
		r.ids[string(ref)] = ids
	}
	return ids
}

// bytes is packFor for the pointers of one pass.
func (r *packReader) bytes(c objects.CID, ref []byte, off, size int) ([]byte, []byte, error) {
	return r.s.inPacks(r.txn, c, ref, off, size, r.candidates(ref), r.bad)
}

// names reports whether pointer (ref, off, size) names a readable pack long
// enough to hold c's bytes there: a pack named by a whole id or by a prefix
// only it has is read and checked once, its length kept, not its bytes (a
// pass over every pointer of a large store meets its packs in key order,
// not pack by pack); a prefix several packs share is settled by their
// member lists (packFor's rule).
func (r *packReader) names(c objects.CID, ref []byte, off, size int) bool {
	ids := r.candidates(ref)
	if len(ids) != 1 {
		_, _, err := r.bytes(c, ref, off, size)
		return err == nil
	}
	n, seen := r.lengths[string(ids[0])]
	if !seen {
		n = -1
		if e, err := r.s.packByID(r.txn, ids[0]); err == nil {
			n = len(e.plain)
		}
		r.lengths[string(ids[0])] = n
	}
	return off+size <= n
}

// blockValue returns the bytes of block c from its key's item: the value
// itself, or, for a packed block, its bytes taken from the pack. The
// caller checks them against c. The item must be one txn.Get returned.
func (s *Store) blockValue(txn *badger.Txn, c objects.CID, item *badger.Item) ([]byte, error) {
	b, _, err := s.itemBytes(txn, c, item)
	return b, err
}

// itemBytes is blockValue that also returns the id of the pack the bytes
// were taken from (nil for a block stored whole).
func (s *Store) itemBytes(txn *badger.Txn, c objects.CID, item *badger.Item) ([]byte, []byte, error) {
	meta := item.UserMeta()
	if !isPacked(meta) {
		v, err := ownValue(item)
		return v, nil, err
	}
	v, err := item.ValueCopy(nil)
	if err != nil {
		return nil, nil, err
	}
	ref, off, size, ok := decodePointer(meta, v)
	if !ok {
		return nil, nil, &PackError{CID: c, Reason: "is named by a malformed pointer"}
	}
	b, id, err := s.packFor(txn, c, ref, off, size)
	if err != nil {
		return nil, nil, &PackError{CID: c, Pack: id, Reason: err.Error()}
	}
	return bytes.Clone(b), id, nil
}

// ownValue returns the value of an item txn.Get returned, as bytes the
// caller may keep. Such an item is the caller's alone: a value held in the
// LSM tree is handed to Item.Value in a buffer of the item's own, filled
// for that call, and is kept as it is, saving a copy of every small block
// read (docs/performance.md); a value in the value log is handed in the
// log file's mapping, valid only during the call, and is copied.
func ownValue(item *badger.Item) ([]byte, error) {
	var v []byte
	err := item.Value(func(b []byte) error {
		if inTree(item, b) {
			v = b
		} else {
			v = bytes.Clone(b)
		}
		return nil
	})
	return v, err
}

// inTree reports whether item's value b is held in the LSM tree: Badger's
// EstimatedSize is then the key's and the value's lengths, and for a value
// in the value log the whole log entry's (with the key's version, a
// header and a checksum), always more (TestOwnValue).
func inTree(item *badger.Item, b []byte) bool {
	return item.EstimatedSize() == item.KeySize()+int64(len(b))
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
			b, id, err := s.itemBytes(txn, c, it)
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
		// Short pointers, unless another pack has this one's prefix.
		meta, pointer := metaPackedShort, encodePointer
		if len(packIDsWithPrefix(txn, id[:pointerPrefix])) > 0 {
			meta, pointer = metaPacked, encodeLongPointer
		}
		if err := txn.Set(packKey(id), rec); err != nil {
			return err
		}
		off := 0
		for i, c := range cids {
			if err := txn.SetEntry(badger.NewEntry(blockKey(c), pointer(id, off, len(data[i]))).WithMeta(meta)); err != nil {
				return err
			}
			off += len(data[i])
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("store: writing a pack: %w", err)
	}
	s.writes.Add(1)
	s.packs.addPrefix(id)
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
		if !isPacked(bi.UserMeta()) {
			continue
		}
		v, err := bi.ValueCopy(nil)
		if err != nil {
			return nil, err
		}
		if pointsInto(bi.UserMeta(), v, id, m) {
			users = append(users, m.cid)
		}
	}
	return users, nil
}

// pointsInto reports whether pointer v (meta: its key's user-meta byte)
// names pack id for its member m: a long pointer by its whole id, a short
// one by a prefix of it (which no other pack had when it was written) and
// m's offset and size.
func pointsInto(meta byte, v, id []byte, m packMember) bool {
	ref, off, size, ok := decodePointer(meta, v)
	if !ok {
		return false
	}
	if meta == metaPacked {
		return bytes.Equal(ref, id)
	}
	return bytes.HasPrefix(id, ref) && off == m.off && size == m.size
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
	err := s.db.View(func(txn *badger.Txn) error {
		packs := s.newPackReader(txn)
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
			if !isPacked(item.UserMeta()) {
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
			ref, off, size, ok := decodePointer(item.UserMeta(), v)
			if ok {
				ok = packs.names(c, ref, off, size)
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
