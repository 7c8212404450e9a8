package export

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"sync"
	"time"

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
// files in the store directory) and MemMeta (a map) implement it.
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
	c, err := decodeStatCache(data)
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
	// raw is the entry's encoding in the record it was read from (empty
	// for an entry made since): an entry carried over unchanged is written
	// back as these bytes, not encoded again.
	raw string
}

// statCache is one directory's cache: the tree its entries make, when the
// stats were taken (no earlier than this), and the entries in key order.
type statCache struct {
	tree    objects.CID
	start   int64
	entries []statEntry
}

const statCacheVersion = 1

var errBadStatCache = errors.New("export: malformed stat cache")

// lookupFrom is lookup for keys asked in increasing order: *at is where
// the previous one was looked for (0 at first), and the search moves on
// from there, so a sorted list of keys costs one pass over the entries.
func (c *statCache) lookupFrom(key string, at *int) (statEntry, bool) {
	if c == nil {
		return statEntry{}, false
	}
	i := *at
	for i < len(c.entries) && c.entries[i].key < key {
		i++
	}
	*at = i
	if i < len(c.entries) && c.entries[i].key == key {
		return c.entries[i], true
	}
	return statEntry{}, false
}

func (c *statCache) lookup(key string) (statEntry, bool) {
	if c == nil {
		return statEntry{}, false
	}
	lo, hi := 0, len(c.entries)
	for lo < hi {
		m := (lo + hi) / 2
		if c.entries[m].key < key {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(c.entries) && c.entries[lo].key == key {
		return c.entries[lo], true
	}
	return statEntry{}, false
}

// encode: version, start, tree CID, count, then per entry key, five stat
// numbers and the value CID, all length-prefixed or varint; a sha256 of
// everything before it ends the record. An entry read from a record and
// unchanged since is copied as its bytes (statEntry.raw).
func (c *statCache) encode() []byte {
	n := 64
	for _, e := range c.entries {
		if e.raw != "" {
			n += len(e.raw)
		} else {
			n += 96 + len(e.key)
		}
	}
	b := make([]byte, 0, n+sha256.Size)
	b = binary.AppendUvarint(b, statCacheVersion)
	b = binary.AppendVarint(b, c.start)
	b = appendLen(b, c.tree.KeyString())
	b = binary.AppendUvarint(b, uint64(len(c.entries)))
	for _, e := range c.entries {
		if e.raw != "" {
			b = append(b, e.raw...)
			continue
		}
		b = appendEntry(b, e)
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

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

// cacheReader reads a record's body: b, and the same bytes as s, so that
// keys and CIDs are substrings of one string, not an allocation each.
type cacheReader struct {
	b   []byte
	s   string
	off int
	err error
}

func (r *cacheReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.err = errBadStatCache
		return 0
	}
	r.off += n
	return v
}

func (r *cacheReader) varint() int64 {
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.err = errBadStatCache
		return 0
	}
	r.off += n
	return v
}

func (r *cacheReader) str() string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)-r.off) {
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

// StatCacheTree returns the tree a stat cache record (a MetaStore record
// ImportDir or a checkout wrote) names: its entries are that tree's leaves,
// so the record is good exactly as long as that tree's blocks are kept (gc
// drops the records whose tree it deletes). ok is false for a record that
// is damaged or of another version.
func StatCacheTree(data []byte) (tree objects.CID, ok bool) {
	r, err := statCacheBody(data)
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
	c, err := decodeStatCache(data)
	if err != nil {
		return nil, false
	}
	vs := make([]objects.CID, len(c.entries))
	for i, e := range c.entries {
		vs[i] = e.value
	}
	return vs, true
}

// statCacheBody checks a record's checksum and version and returns a
// reader at what follows the version. The reader's strings are one copy of
// the body, so they do not alias data.
func statCacheBody(data []byte) (*cacheReader, error) {
	if len(data) < sha256.Size {
		return nil, errBadStatCache
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if s := sha256.Sum256(body); string(s[:]) != string(sum) {
		return nil, errBadStatCache
	}
	r := &cacheReader{b: body, s: string(body)}
	if r.uvarint() != statCacheVersion || r.err != nil {
		return nil, errBadStatCache
	}
	return r, nil
}

func decodeStatCache(data []byte) (*statCache, error) {
	r, err := statCacheBody(data)
	if err != nil {
		return nil, err
	}
	c := &statCache{start: r.varint(), tree: r.cid()}
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)-r.off) {
		return nil, errBadStatCache
	}
	c.entries = make([]statEntry, 0, n)
	for range n {
		var e statEntry
		at := r.off
		e.key = r.str()
		e.stat.size, e.stat.mtime, e.stat.ctime = r.varint(), r.varint(), r.varint()
		e.stat.ino, e.stat.dev = r.uvarint(), r.uvarint()
		e.value = r.cid()
		if r.err != nil {
			return nil, r.err
		}
		if e.value.IsZero() || (len(c.entries) > 0 && c.entries[len(c.entries)-1].key >= e.key) {
			return nil, errBadStatCache
		}
		e.raw = r.s[at:r.off]
		c.entries = append(c.entries, e)
	}
	if r.off != len(r.b) {
		return nil, errBadStatCache
	}
	return c, nil
}
