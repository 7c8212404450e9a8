package export

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/agentstate/agentstate/objects"
)

// RacyWindow is how close to a scan's start a file's mtime may be before its
// cached stat is not trusted: file systems keep coarse timestamps, so a file
// rewritten within the same tick keeps its mtime (git's "racy index" rule).
const RacyWindow = time.Second

// MetaStore keeps small named records; *store.Store satisfies it. The stat
// cache lives there under "statcache/" + the directory's absolute path.
type MetaStore interface {
	GetMeta(name string) ([]byte, bool, error)
	SetMeta(name string, v []byte) error
}

// ImportOptions tune ImportDir.
type ImportOptions struct {
	// Cache, when set, persists a stat cache for the directory (like git's
	// index): a file whose size, mtime, ctime, inode and device match the
	// previous import, and whose mtime is older than that import's start by
	// more than RacyWindow, is not read again, and the new tree is built from
	// the previous one by editing only what changed.
	Cache MetaStore
}

// ImportResult is what ImportDir did.
type ImportResult struct {
	Tree    objects.CID
	Files   int // regular files in the directory
	Read    int // files read and hashed; the others came from the stat cache
	Skipped []Skipped
}

// ImportDir stores the brain directory dir as a tree and returns its root.
// Content goes through objects.NewFileValue, so large files are chunked
// exactly as every other import path chunks them.
func ImportDir(ctx context.Context, bs objects.BlockStore, dir string, opts ImportOptions) (ImportResult, error) {
	var res ImportResult
	abs, err := filepath.Abs(dir)
	if err != nil {
		return res, fmt.Errorf("export: brain directory: %w", err)
	}
	start := time.Now()
	files, skipped, err := Scan(ctx, abs)
	if err != nil {
		return res, err
	}
	res.Files, res.Skipped = len(files), skipped
	cacheName := "statcache/" + abs

	var old *statCache
	if opts.Cache != nil {
		if data, ok, err := opts.Cache.GetMeta(cacheName); err == nil && ok {
			old, _ = decodeStatCache(data) // a damaged cache is a cold cache
		}
	}
	var t *objects.Tree
	if old != nil && !old.tree.IsZero() {
		// The cached tree's blocks must still be there (gc removes what
		// nothing reaches); otherwise start over.
		if ok, err := bs.Has(ctx, old.tree); err == nil && ok {
			t, err = objects.LoadTree(ctx, bs, old.tree)
			if err != nil {
				t = nil
			}
		}
	}
	if t == nil {
		old, t = nil, objects.NewTree(bs)
	}

	next := &statCache{entries: make([]statEntry, len(files)), start: start.UnixNano()}
	var toRead []int
	seen := make(map[string]bool, len(files))
	for i, f := range files {
		next.entries[i] = statEntry{key: f.Key, stat: f.stat}
		seen[f.Key] = true
		if old != nil {
			// Trusted: the same stat, taken when the file was already older
			// than the racy window.
			if e, ok := old.lookup(f.Key); ok && e.stat == f.stat && e.stat.mtime < old.start-RacyWindow.Nanoseconds() {
				next.entries[i].value = e.value
				continue
			}
		}
		toRead = append(toRead, i)
	}
	if old != nil {
		for _, e := range old.entries {
			if !seen[e.key] {
				if _, err := t.Delete(ctx, e.key); err != nil {
					return res, err
				}
			}
		}
	}
	res.Read = len(toRead)
	err = readInto(ctx, bs, files, toRead, func(i int, v objects.CID) error {
		next.entries[i].value = v
		_, err := t.Put(ctx, files[i].Key, v)
		return err
	})
	if err != nil {
		return res, err
	}
	if res.Tree, err = t.Commit(ctx); err != nil {
		return res, err
	}
	if opts.Cache != nil && (old == nil || res.Read > 0 || len(old.entries) != len(next.entries) || old.tree != res.Tree) {
		next.tree = res.Tree
		// A cache is an optimisation: failing to save it costs speed, not correctness.
		_ = opts.Cache.SetMeta(cacheName, next.encode())
	}
	return res, nil
}

// StoreFiles reads files in parallel, turns each into its value with
// objects.NewFileValue (the one way content becomes a value, so large files
// are chunked exactly as on every other path), stores the blocks in batches
// and calls done, from one goroutine, with each file's index and value CID.
func StoreFiles(ctx context.Context, bs objects.BlockStore, files []ScannedFile, done func(i int, v objects.CID) error) error {
	idx := make([]int, len(files))
	for i := range idx {
		idx[i] = i
	}
	return readInto(ctx, bs, files, idx, done)
}

// readInto reads the files at the given indexes in parallel, stores their
// blocks in batches, and calls done (from one goroutine) with each value.
func readInto(ctx context.Context, bs objects.BlockStore, files []ScannedFile, idx []int, done func(i int, v objects.CID) error) error {
	if len(idx) == 0 {
		return nil
	}
	type result struct {
		i      int
		v      objects.CID
		blocks []objects.Block
		size   int
		err    error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	work := make(chan int)
	results := make(chan result, 16)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0)*2, 16, len(idx)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				data, err := readRegular(files[i].Path)
				if err != nil {
					results <- result{i: i, err: err}
					continue
				}
				v, blocks := objects.NewFileValue(data)
				results <- result{i: i, v: v, blocks: blocks, size: len(data)}
			}
		}()
	}
	go func() {
		defer close(work)
		for _, i := range idx {
			select {
			case work <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()

	var batch []objects.Block
	batchBytes := 0
	var firstErr error
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := bs.Put(ctx, batch...)
		batch, batchBytes = batch[:0], 0
		return err
	}
	for r := range results {
		if firstErr != nil {
			continue // drain
		}
		err := r.err
		if err == nil {
			batch = append(batch, r.blocks...)
			batchBytes += r.size
			if batchBytes >= 64<<20 {
				err = flush()
			}
		}
		if err == nil {
			err = done(r.i, r.v)
		}
		if err != nil {
			firstErr = err
			cancel()
		}
	}
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return flush()
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
// scan that produced it started, and the entries in key order.
type statCache struct {
	tree    objects.CID
	start   int64
	entries []statEntry
}

const statCacheVersion = 1

var errBadStatCache = errors.New("export: malformed stat cache")

func (c *statCache) lookup(key string) (statEntry, bool) {
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
// everything before it ends the record.
func (c *statCache) encode() []byte {
	b := make([]byte, 0, 64+len(c.entries)*96)
	b = binary.AppendUvarint(b, statCacheVersion)
	b = binary.AppendVarint(b, c.start)
	b = appendLen(b, c.tree.Bytes())
	b = binary.AppendUvarint(b, uint64(len(c.entries)))
	for _, e := range c.entries {
		b = appendLen(b, []byte(e.key))
		b = binary.AppendVarint(b, e.stat.size)
		b = binary.AppendVarint(b, e.stat.mtime)
		b = binary.AppendVarint(b, e.stat.ctime)
		b = binary.AppendUvarint(b, e.stat.ino)
		b = binary.AppendUvarint(b, e.stat.dev)
		b = appendLen(b, e.value.Bytes())
	}
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

func appendLen(b, p []byte) []byte { return append(binary.AppendUvarint(b, uint64(len(p))), p...) }

type cacheReader struct {
	b   []byte
	err error
}

func (r *cacheReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errBadStatCache
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *cacheReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errBadStatCache
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *cacheReader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errBadStatCache
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *cacheReader) cid() objects.CID {
	p := r.bytes()
	if r.err != nil || len(p) == 0 {
		return objects.CID{}
	}
	c, err := objects.CIDFromBytes(p)
	if err != nil {
		r.err = errBadStatCache
	}
	return c
}

func decodeStatCache(data []byte) (*statCache, error) {
	if len(data) < sha256.Size {
		return nil, errBadStatCache
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if s := sha256.Sum256(body); string(s[:]) != string(sum) {
		return nil, errBadStatCache
	}
	r := &cacheReader{b: body}
	if r.uvarint() != statCacheVersion {
		return nil, errBadStatCache
	}
	c := &statCache{start: r.varint(), tree: r.cid()}
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		return nil, errBadStatCache
	}
	c.entries = make([]statEntry, 0, n)
	for range n {
		var e statEntry
		e.key = string(r.bytes())
		e.stat.size, e.stat.mtime, e.stat.ctime = r.varint(), r.varint(), r.varint()
		e.stat.ino, e.stat.dev = r.uvarint(), r.uvarint()
		e.value = r.cid()
		if r.err != nil {
			return nil, r.err
		}
		if e.value.IsZero() || (len(c.entries) > 0 && c.entries[len(c.entries)-1].key >= e.key) {
			return nil, errBadStatCache
		}
		c.entries = append(c.entries, e)
	}
	if len(r.b) != 0 {
		return nil, errBadStatCache
	}
	return c, nil
}
