package export

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/agentstate/agentstate/internal/progress"
	"github.com/agentstate/agentstate/objects"
)

// ImportOptions tune ImportDir.
type ImportOptions struct {
	// Cache, when set, keeps the directory's stat cache (statcache.go): a
	// file whose size, mtime, ctime, inode and device match what the
	// previous import or a checkout recorded, and whose mtime was older
	// than that recording by more than the racy window, is not read again,
	// and the new tree is built from the cached one by editing only what
	// changed.
	Cache MetaStore
	// RacyWindow replaces the package's RacyWindow when positive (tests).
	RacyWindow time.Duration
	// Ahead, when set, is the directory's scan started earlier (StartScan),
	// for instance while the store was being opened: ImportDir takes its
	// result instead of scanning, and its start as the recording's time.
	Ahead *ScanAhead
}

// A ScanAhead is a brain directory's scan (Scan) running in the background,
// started before the store it is imported into is open: a commit's scan of
// 10k files and the store's open take about as long each, and neither needs
// the other.
type ScanAhead struct {
	abs     string
	start   time.Time // taken before the scan stats any file
	cancel  context.CancelFunc
	done    chan struct{}
	files   []ScannedFile
	skipped []Skipped
	err     error
}

// StartScan starts scanning dir in the background. Stop ends it; ImportDir
// waits for it (ImportOptions.Ahead).
func StartScan(ctx context.Context, dir string) *ScanAhead {
	ctx, cancel := context.WithCancel(ctx)
	a := &ScanAhead{start: time.Now(), cancel: cancel, done: make(chan struct{})}
	var err error
	if a.abs, err = filepath.Abs(dir); err != nil {
		a.err = fmt.Errorf("export: brain directory: %w", err)
		close(a.done)
		return a
	}
	go func() {
		defer close(a.done)
		a.files, a.skipped, a.err = Scan(ctx, a.abs)
	}()
	return a
}

// Stop cancels the scan if it is still running and waits for it to end.
func (a *ScanAhead) Stop() {
	a.cancel()
	<-a.done
}

// result waits for the scan of abs and returns what it found.
func (a *ScanAhead) result(abs string) ([]ScannedFile, []Skipped, error) {
	<-a.done
	if a.abs != "" && a.abs != abs {
		return nil, nil, fmt.Errorf("export: the scan started ahead is of %s, not %s", a.abs, abs)
	}
	return a.files, a.skipped, a.err
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
	window := opts.RacyWindow
	if window <= 0 {
		window = RacyWindow
	}
	// Taken before any file is stat'd: the recording is no later than them.
	start := time.Now()
	if opts.Ahead != nil {
		start = opts.Ahead.start
	}
	old := loadStatCache(opts.Cache, abs)
	var t *objects.Tree
	if old.usable(ctx, bs) {
		if t, err = objects.LoadTree(ctx, bs, old.tree); err != nil {
			t = nil
		}
	}
	if t == nil {
		old, t = nil, objects.NewTree(bs)
	}
	// A changed file's previous version (a memory database with a few pages
	// rewritten) shares most of its chunks with the new one: those are known
	// to be stored from the previous version's chunk lists (objects.Known)
	// and are neither copied nor looked up again, one by one. The lists are
	// read in the background, beside the scan and the hashing: a chunked
	// file the cache does not trust by its own lstat starts now, any other
	// the scan finds changed right after it.
	known := objects.NewKnown(ctx)
	defer known.Stop()
	started := map[string]bool{}
	if old != nil {
		for i := range old.len() {
			e := old.entry(i)
			if e.value.Codec() != objects.CodecDagCBOR || objects.ValidateKey(e.key) != nil {
				continue
			}
			fi, err := os.Lstat(filepath.Join(abs, filepath.FromSlash(e.key)))
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			if _, ok := old.trusted(e.key, fileStatOf(fi), window); !ok {
				known.AddVersion(bs, e.value)
				started[e.key] = true
			}
		}
	}
	var files []ScannedFile
	var skipped []Skipped
	if opts.Ahead != nil {
		files, skipped, err = opts.Ahead.result(abs)
	} else {
		files, skipped, err = Scan(ctx, abs)
	}
	if err != nil {
		return res, err
	}
	res.Files, res.Skipped = len(files), skipped

	// The next record: each file's entry is carried over as its bytes from
	// the cache entry carried[i] when the cache trusts it (its value is
	// already in the cached tree), or else made from the scan's stat and
	// the value read (read[i]).
	carried := make([]int32, len(files))
	var toRead []int
	at, size := 0, 0 // files and the cache's entries are both in key order
	for i, f := range files {
		if e, j, ok := old.lookupFrom(f.Key, &at); ok && old.trustedEntry(e, f.stat, window) {
			carried[i] = int32(j)
			size += int(old.offs[j+1] - old.offs[j])
			continue
		}
		carried[i] = -1
		size += entrySize(f.Key)
		toRead = append(toRead, i)
	}
	read := make(map[int]objects.CID, len(toRead))
	if old != nil {
		// Keys the cache has and the directory no longer has: both lists
		// are in key order, so one merge finds them.
		j := 0
		for i := range old.len() {
			key := old.key(i)
			for j < len(files) && files[j].Key < key {
				j++
			}
			if j < len(files) && files[j].Key == key {
				continue
			}
			if _, err := t.Delete(ctx, key); err != nil {
				return res, err
			}
		}
	}
	res.Read = len(toRead)
	prevs := map[int]objects.CID{}
	for _, i := range toRead {
		if e, ok := old.lookup(files[i].Key); ok && e.value.Codec() == objects.CodecDagCBOR {
			if !started[e.key] {
				known.AddVersion(bs, e.value)
			}
			prevs[i] = e.value
		}
	}
	// Progress: the bytes of the files read (those the cache trusts are
	// not).
	var bytes int64
	for _, i := range toRead {
		bytes += files[i].Size
	}
	pc := progress.Start(ctx, bytes)
	err = readInto(ctx, bs, &versions{known, prevs}, files, toRead, func(i int, v objects.CID) error {
		pc.Add(files[i].Size)
		read[i] = v
		_, err := t.Put(ctx, files[i].Key, v)
		return err
	})
	if err != nil {
		return res, err
	}
	if res.Tree, err = t.Commit(ctx); err != nil {
		return res, err
	}
	if opts.Cache != nil && (old == nil || res.Read > 0 || old.len() != len(files) || old.tree != res.Tree) {
		rec := encodeRecord(res.Tree, start.UnixNano(), len(files), size, func(b []byte, i int) []byte {
			if j := carried[i]; j >= 0 {
				return append(b, old.raw(int(j))...)
			}
			f := files[i]
			return appendEntry(b, statEntry{key: f.Key, stat: f.stat, value: read[i]})
		})
		_ = opts.Cache.SetMeta(statCacheName(abs), rec) // failing to costs speed only
	}
	return res, nil
}

// StoreFiles reads files in parallel, turns each into its value with
// objects.NewFileValue (the one way content becomes a value, so large files
// are chunked exactly as on every other path), stores the blocks in batches
// and calls done, from one goroutine, with each file's index and value CID.
// A file over the chunking threshold streams into the store as it is read
// (objects.WriteValue, the same CID), so memory does not grow with file size.
func StoreFiles(ctx context.Context, bs objects.BlockStore, files []ScannedFile, done func(i int, v objects.CID) error) error {
	idx := make([]int, len(files))
	for i := range idx {
		idx[i] = i
	}
	return readInto(ctx, bs, nil, files, idx, done)
}

// versions is what an import knows of the files it reads: the blocks known
// stored and the previous value of each file (by index) that had a chunked
// one.
type versions struct {
	known *objects.Known
	prev  map[int]objects.CID
}

// readValue reads the file at p as a value. Content up to the chunking
// threshold comes back as its blocks, for the caller to store in a batch
// with other files'; a longer file streams into bs as it is read
// (objects.WriteValue, the same CID as objects.NewFileValue), so a worker
// holds a few MiB of it whatever its size.
func readValue(ctx context.Context, bs objects.BlockStore, vs *versions, i int, p string, size int64) (objects.CID, []objects.Block, int, error) {
	f, err := openRegular(p)
	if err != nil {
		return objects.CID{}, nil, 0, err
	}
	defer f.Close()
	// The buffer is the size the scan saw, plus one byte to notice a file
	// that grew since: a million small files must not cost a
	// threshold-sized allocation each.
	want := objects.ChunkThreshold + 1
	if size >= 0 && size < objects.ChunkThreshold {
		want = int(size) + 1
	}
	head := make([]byte, want)
	n, err := io.ReadFull(f, head)
	if err == nil && want < objects.ChunkThreshold+1 { // grew: read on up to the threshold
		head = append(head, make([]byte, objects.ChunkThreshold+1-want)...)
		var m int
		m, err = io.ReadFull(f, head[want:])
		n = want + m
	}
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		v, blocks := objects.NewFileValue(head[:n])
		return v, blocks, n, nil
	}
	if err != nil {
		return objects.CID{}, nil, 0, fmt.Errorf("export: reading %s: %w", p, err)
	}
	content := io.MultiReader(bytes.NewReader(head), readErrs{f, p})
	if vs != nil {
		v, _, err := objects.WriteVersion(ctx, bs, content, vs.known, vs.prev[i])
		return v, nil, 0, err
	}
	v, _, err := objects.WriteValue(ctx, bs, content)
	return v, nil, 0, err
}

// readErrs names the file in a read error, so it is not taken for the store's.
type readErrs struct {
	f *os.File
	p string
}

func (r readErrs) Read(b []byte) (int, error) {
	n, err := r.f.Read(b)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("export: reading %s: %w", r.p, err)
	}
	return n, err
}

// readInto reads the files at the given indexes in parallel, stores their
// blocks in batches, and calls done (from one goroutine) with each value.
func readInto(ctx context.Context, bs objects.BlockStore, vs *versions, files []ScannedFile, idx []int, done func(i int, v objects.CID) error) error {
	if len(idx) == 0 {
		return nil
	}
	store := bs // small files' blocks, in batches
	if vs != nil {
		store = objects.SkipKnown(bs, vs.known)
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
				v, blocks, size, err := readValue(ctx, bs, vs, i, files[i].Path, files[i].Size)
				results <- result{i: i, v: v, blocks: blocks, size: size, err: err}
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
		err := store.Put(ctx, batch...)
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
			if batchBytes >= 16<<20 {
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
