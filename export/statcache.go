package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/agentstate/agentstate/objects"
)

// The stat cache answers "is this file unchanged since it was last read or
// written?" for a brain directory, like git's index. ImportDir reads and
// refreshes it; Checkout (with CheckoutOptions.Cache) records what it wrote
// or found unchanged, so the next ImportDir need not read those files again,
// and the next checkout knows them as the store's own: it replaces or
// removes only recorded files, unchanged since, and files identical to its
// tree (CheckoutWith).
// One record per directory, in a MetaStore under "statcache/" + the
// directory's absolute path: the tree the entries make, when the stats were
// taken, and per file its key, stat and value.
//
// An entry is trusted when the file's size, mtime, ctime, inode and device
// are what was recorded and its mtime is older than the recording by more
// than the racy window. The value of a trusted entry is used without
// reading the file; the entries are always leaves of the record's tree, and
// the record is used only while that tree's root is in the block store (gc
// deletes whole unreachable graphs, and first drops every record whose tree
// it is about to delete: StatCacheTree), so a trusted value's blocks are
// there.

// RacyWindow is how close to the moment a stat was recorded a file's mtime
// may be before the cached stat is not trusted: file systems keep coarse
// timestamps, so a file rewritten within the same tick keeps its mtime
// (git's "racy index" rule).
const RacyWindow = time.Second

// MetaStore keeps small named records: the stat caches. FileMeta (plain
// files in the store directory) and MemMeta (a map) implement it. The
// slice GetMeta returns is the caller's own: nothing changes it after.
type MetaStore interface {
	GetMeta(name string) ([]byte, bool, error)
	SetMeta(name string, v []byte) error
}

// MemMeta is a MetaStore in memory, for stores that are not on disk. The
// zero value is ready to use; it is safe for concurrent use.
type MemMeta struct {
	mu sync.Mutex
	m  map[string][]byte
}

// GetMeta returns a copy of a record.
func (m *MemMeta) GetMeta(name string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.m[name]
	return bytes.Clone(v), ok, nil
}

// SetMeta stores a copy of v.
func (m *MemMeta) SetMeta(name string, v []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string][]byte{}
	}
	m.m[name] = bytes.Clone(v)
	return nil
}

// Clear removes every record.
func (m *MemMeta) Clear() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.m = nil
	return nil
}

// Prune removes every record keep does not want (keep is given its bytes).
func (m *MemMeta) Prune(keep func(data []byte) bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, v := range m.m {
		if !keep(v) {
			delete(m.m, name)
		}
	}
	return nil
}

func statCacheName(abs string) string { return "statcache/" + abs }

// loadStatCache reads the record for the directory abs; a missing, damaged
// or unreadable record is no cache (a cache costs speed, not correctness).
func loadStatCache(ms MetaStore, abs string) *statCache {
	if ms == nil {
		return nil
	}
	data, ok, err := ms.GetMeta(statCacheName(abs))
	if err != nil || !ok {
		return nil
	}
	c, err := decodeStatCache(data, true) // data is this function's own
	if err != nil {
		return nil
	}
	return c
}

// usable reports whether the record's tree is still in bs: when gc has
// removed it, its values may be gone too.
func (c *statCache) usable(ctx context.Context, bs objects.BlockStore) bool {
	if c == nil || c.tree.IsZero() {
		return false
	}
	ok, err := bs.Has(ctx, c.tree)
	return err == nil && ok
}

// trusted returns the cached value of key if st is the recorded stat and
// the file was already older than window when it was recorded.
func (c *statCache) trusted(key string, st fileStat, window time.Duration) (objects.CID, bool) {
	if c == nil {
		return objects.CID{}, false
	}
	e, ok := c.lookup(key)
	if !ok || !c.trustedEntry(e, st, window) {
		return objects.CID{}, false
	}
	return e.value, true
}

// trustedEntry is trusted for an entry already looked up.
func (c *statCache) trustedEntry(e statEntry, st fileStat, window time.Duration) bool {
	return e.stat == st && e.stat.mtime < c.start-window.Nanoseconds()
}

// saveStatCache writes the record; failing to costs speed only.
func saveStatCache(ms MetaStore, abs string, c *statCache) {
	_ = ms.SetMeta(statCacheName(abs), c.encode())
}

// fileStat is what the stat cache compares.
type fileStat struct {
	size, mtime, ctime int64
	ino, dev           uint64
}

type statEntry struct {
	key   string
	stat  fileStat
	value objects.CID
}

// statCache is one directory's cache: the tree its entries make, when the
// stats were taken (no earlier than this), and the entries in key order.
// A cache read from a record keeps the record's body (rec) and where each
// entry starts in it (offs, and one more where the last ends), and
// decodes an entry when it is asked for: a 10k-file record is one string
// and 40 KB of offsets, not 10k entries, and an entry carried over
// unchanged into the next record is copied as its bytes (raw). A cache
// made in memory (a checkout's) holds its entries instead.
type statCache struct {
	tree    objects.CID
	start   int64
	rec     string
	offs    []uint32
	entries []statEntry
}

const statCacheVersion = 1

var errBadStatCache = errors.New("export: malformed stat cache")

// len is the number of entries.
func (c *statCache) len() int {
	switch {
	case c == nil:
		return 0
	case c.offs != nil:
		return len(c.offs) - 1
	}
	return len(c.entries)
}

// entry returns entry i (checked when the record was read).
func (c *statCache) entry(i int) statEntry {
	if c.offs == nil {
		return c.entries[i]
	}
	e, _, _ := readEntry(c.rec, int(c.offs[i]))
	return e
}

// key returns entry i's key alone.
func (c *statCache) key(i int) string {
	if c.offs == nil {
		return c.entries[i].key
	}
	r := cacheReader{s: c.rec, off: int(c.offs[i])}
	return r.str()
}

// raw returns entry i's bytes in the record it was read from.
func (c *statCache) raw(i int) string { return c.rec[c.offs[i]:c.offs[i+1]] }

// lookupFrom is lookup for keys asked in increasing order: *at is where
// the previous one was looked for (0 at first), and the search moves on
// from there, so a sorted list of keys costs one pass over the entries.
// It also returns the entry's index.
func (c *statCache) lookupFrom(key string, at *int) (statEntry, int, bool) {
	n := c.len()
	i := *at
	for i < n && c.key(i) < key {
		i++
	}
	*at = i
	if i < n && c.key(i) == key {
		return c.entry(i), i, true
	}
	return statEntry{}, 0, false
}

func (c *statCache) lookup(key string) (statEntry, bool) {
	lo, hi := 0, c.len()
	for lo < hi {
		m := (lo + hi) / 2
		if c.key(m) < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < c.len() && c.key(lo) == key {
		return c.entry(lo), true
	}
	return statEntry{}, false
}

// encode: version, start, tree CID, count, then per entry key, five stat
// numbers and the value CID, all length-prefixed or varint; a sha256 of
// everything before it ends the record.
func (c *statCache) encode() []byte {
	size := 0
	for i := range c.len() {
		if c.offs != nil {
			size += int(c.offs[i+1] - c.offs[i])
		} else {
			size += entrySize(c.entries[i].key)
		}
	}
	return encodeRecord(c.tree, c.start, c.len(), size, func(b []byte, i int) []byte {
		if c.offs != nil {
			return append(b, c.raw(i)...)
		}
		return appendEntry(b, c.entries[i])
	})
}

// encodeRecord writes a record of n entries, each appended by entry; size
// is about their length.
func encodeRecord(tree objects.CID, start int64, n, size int, entry func(b []byte, i int) []byte) []byte {
	b := make([]byte, 0, 64+size+sha256.Size)
	b = binary.AppendUvarint(b, statCacheVersion)
	b = binary.AppendVarint(b, start)
	b = appendLen(b, tree.KeyString())
	b = binary.AppendUvarint(b, uint64(n))
	for i := range n {
		b = entry(b, i)
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

// entrySize is at least the encoded length of an entry with this key.
func entrySize(key string) int { return len(key) + 5*binary.MaxVarintLen64 + 48 }

func appendEntry(b []byte, e statEntry) []byte {
	b = appendLen(b, e.key)
	b = binary.AppendVarint(b, e.stat.size)
	b = binary.AppendVarint(b, e.stat.mtime)
	b = binary.AppendVarint(b, e.stat.ctime)
	b = binary.AppendUvarint(b, e.stat.ino)
	b = binary.AppendUvarint(b, e.stat.dev)
	return appendLen(b, e.value.KeyString())
}

func appendLen(b []byte, p string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(p))), p...)
}

// cacheReader reads a record's body from off: keys and CIDs are substrings
// of it, not an allocation each.
type cacheReader struct {
	s   string
	off int
	err error
}

// uvarint reads what binary.Uvarint reads.
func (r *cacheReader) uvarint() uint64 {
	var x uint64
	var sh uint
	for i := 0; r.off+i < len(r.s); i++ {
		if i == binary.MaxVarintLen64 {
			break
		}
		c := r.s[r.off+i]
		if c < 0x80 {
			if i == binary.MaxVarintLen64-1 && c > 1 {
				break
			}
			r.off += i + 1
			return x | uint64(c)<<sh
		}
		x |= uint64(c&0x7f) << sh
		sh += 7
	}
	r.err = errBadStatCache
	return 0
}

// varint reads what binary.Varint reads.
func (r *cacheReader) varint() int64 {
	ux := r.uvarint()
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func (r *cacheReader) str() string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.s)-r.off) {
		r.err = errBadStatCache
		return ""
	}
	p := r.s[r.off : r.off+int(n)]
	r.off += int(n)
	return p
}

func (r *cacheReader) cid() objects.CID {
	p := r.str()
	if r.err != nil || len(p) == 0 {
		return objects.CID{}
	}
	c, err := objects.CIDFromKeyString(p)
	if err != nil {
		r.err = errBadStatCache
	}
	return c
}

// readEntry reads the entry at off in a record's body and returns where
// it ends.
func readEntry(s string, off int) (statEntry, int, error) {
	r := cacheReader{s: s, off: off}
	var e statEntry
	e.key = r.str()
	e.stat.size, e.stat.mtime, e.stat.ctime = r.varint(), r.varint(), r.varint()
	e.stat.ino, e.stat.dev = r.uvarint(), r.uvarint()
	e.value = r.cid()
	if r.err == nil && e.value.IsZero() {
		r.err = errBadStatCache
	}
	return e, r.off, r.err
}

// StatCacheTree returns the tree a stat cache record (a MetaStore record
// ImportDir or a checkout wrote) names: its entries are that tree's leaves,
// so the record is good exactly as long as that tree's blocks are kept (gc
// drops the records whose tree it deletes). ok is false for a record that
// is damaged or of another version.
func StatCacheTree(data []byte) (tree objects.CID, ok bool) {
	r, err := statCacheBody(data, false)
	if err != nil {
		return objects.CID{}, false
	}
	r.varint() // start
	tree = r.cid()
	return tree, r.err == nil && !tree.IsZero()
}

// StatCacheValues returns the values a stat cache record names (one a
// file), and whether the record could be read: gc drops a record naming a
// value whose blocks it deletes (a redacted one's), which a later import
// would otherwise take for stored from the value's list nodes.
func StatCacheValues(data []byte) ([]objects.CID, bool) {
	c, err := decodeStatCache(data, false)
	if err != nil {
		return nil, false
	}
	vs := make([]objects.CID, c.len())
	for i := range vs {
		vs[i] = c.entry(i).value
	}
	return vs, true
}

// statCacheBody checks a record's checksum and version and returns a
// reader at what follows the version. With own, the reader's string is
// data itself (the caller never changes data again: what decodeStatCache
// returns holds substrings of it); otherwise a copy.
func statCacheBody(data []byte, own bool) (*cacheReader, error) {
	if len(data) < sha256.Size || len(data) > math.MaxUint32 {
		return nil, errBadStatCache
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if s := sha256.Sum256(body); string(s[:]) != string(sum) {
		return nil, errBadStatCache
	}
	r := &cacheReader{}
	if own && len(body) > 0 {
		r.s = unsafe.String(&body[0], len(body))
	} else {
		r.s = string(body)
	}
	if r.uvarint() != statCacheVersion || r.err != nil {
		return nil, errBadStatCache
	}
	return r, nil
}

// decodeStatCache checks a whole record: its checksum and version, and
// every entry (key order, stat numbers, a value CID), keeping where each
// entry starts. own is as for statCacheBody.
func decodeStatCache(data []byte, own bool) (*statCache, error) {
	r, err := statCacheBody(data, own)
	if err != nil {
		return nil, err
	}
	c := &statCache{start: r.varint(), tree: r.cid()}
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.s)-r.off) {
		return nil, errBadStatCache
	}
	c.rec = r.s
	c.offs = make([]uint32, 0, n+1)
	prev := ""
	for i := range n {
		e, next, err := readEntry(r.s, r.off)
		if err != nil {
			return nil, err
		}
		if i > 0 && prev >= e.key {
			return nil, errBadStatCache
		}
		c.offs = append(c.offs, uint32(r.off))
		prev, r.off = e.key, next
	}
	if r.off != len(r.s) {
		return nil, errBadStatCache
	}
	c.offs = append(c.offs, uint32(r.off))
	return c, nil
}
