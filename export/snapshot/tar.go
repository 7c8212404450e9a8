package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentstate/agentstate/export/tarball"
	"github.com/agentstate/agentstate/objects"
)

// LockVersion is the "version" of the generated bundle.lock.json.
const LockVersion = 1

var (
	ErrNoLock          = errors.New("snapshot: no bundle.lock.json in the snapshot")
	ErrLineageMismatch = errors.New("snapshot: content does not match the lineage it claims")
)

// Lock is the content of a generated bundle.lock.json.
type Lock struct {
	BundleHash string      `json:"bundleHash"`
	Tree       objects.CID `json:"tree"`
	Version    int         `json:"version"`
}

// Encode returns the lock's exact bytes: compact JSON, keys in this order, a newline.
func (l Lock) Encode() []byte {
	b, _ := json.Marshal(l)
	return append(b, '\n')
}

func bytesFile(path string, data []byte) tarball.File {
	return tarball.File{Path: path, Size: int64(len(data)), Data: data}
}

// Read-ahead of WriteTar: the values of the next readAhead entries are
// read (and checked) at once, by helper goroutines and by the writer
// itself, so reading values, which is mostly hashing them, runs on every
// core while the tar is written. The writer never waits for a helper to
// start a value: it reads whatever no helper has taken, the value it needs
// first, else a later one, and waits only when every value in the window
// is taken (on a busy machine a helper may get no core for a while, and the
// tar must not wait on it then). Only values held in one block (at most
// objects.ChunkThreshold bytes, as every store writes them) are read whole
// ahead; a chunked value streams, chunksAhead of its chunks read ahead, so
// memory stays bounded whatever a value's size.
const readAhead = 8

// chunksAhead is how many chunks of a chunked value are read ahead of the
// one being written (each at most 256 KiB).
const chunksAhead = 8

// helpers is how many goroutines read values beside the writer.
func helpers() int { return min(max(goruntime.GOMAXPROCS(0)-1, 1), 3) }

// fetch is one tree entry's value, read ahead.
type fetch struct {
	key   string
	v     objects.CID
	taken atomic.Bool // by the writer or a helper, which then reads it
	file  tarball.File
	err   error
	done  chan struct{}
}

func (f *fetch) isDone() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

func (f *fetch) run(ctx context.Context, bs objects.BlockStore) {
	defer close(f.done)
	if f.v.Codec() == objects.CodecRaw {
		// The store checks the block against its CID, the digest of the
		// content the bundle hash commits to.
		data, err := bs.Get(ctx, f.v)
		if err != nil {
			f.err = fmt.Errorf("snapshot: value of %q: %w", f.key, err)
			return
		}
		f.file = tarball.File{Path: f.key, Size: int64(len(data)), Data: data}
		return
	}
	// The content streams, a few chunks read ahead (the tar writer reads
	// past its end, where a chunked value's sha256 is checked, and closes
	// it, which waits for the reads under way).
	rd, size, err := objects.OpenValueAhead(ctx, bs, f.v, chunksAhead)
	if err != nil {
		f.err = fmt.Errorf("snapshot: value of %q: %w", f.key, err)
		return
	}
	f.file = tarball.File{Path: f.key, Size: int64(size), Open: func(context.Context) (io.ReadCloser, error) {
		return rd, nil
	}}
}

// treeFiles yields a tree's entries as tar files, merged in bytewise order
// with the extra (derived) files, their values read ahead (see readAhead).
func treeFiles(ctx context.Context, bs objects.BlockStore, tree objects.CID, extra []tarball.File) iter.Seq2[tarball.File, error] {
	return func(yield func(tarball.File, error) bool) {
		t, err := objects.LoadTree(ctx, bs, tree)
		if err != nil {
			yield(tarball.File{}, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		next, stop := iter.Pull2(t.Entries(ctx, ""))
		work := make(chan *fetch, readAhead)
		var wg sync.WaitGroup
		defer func() {
			stop()
			cancel()
			close(work)
			wg.Wait() // nothing reads the store once the tar is written
		}()
		for range helpers() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for f := range work {
					if f.taken.CompareAndSwap(false, true) {
						f.run(ctx, bs)
					}
				}
			}()
		}
		var window []*fetch // listed, not yet yielded, in order
		listed := false     // every entry is in window or yielded
		for {
			for !listed && len(window) < readAhead {
				e, err, ok := next()
				if !ok {
					listed = true
					break
				}
				if err != nil {
					yield(tarball.File{}, err)
					return
				}
				f := &fetch{key: e.Key, v: e.Value, done: make(chan struct{})}
				window = append(window, f)
				select {
				case work <- f:
				default: // the helpers are behind: the writer reads it
				}
			}
			if len(window) == 0 {
				break
			}
			f := window[0]
			for !f.isDone() {
				if f.taken.CompareAndSwap(false, true) {
					f.run(ctx, bs)
					break
				}
				// A helper is reading f: read a later value meanwhile,
				// or, when all are taken, wait.
				i := slices.IndexFunc(window[1:], func(g *fetch) bool { return g.taken.CompareAndSwap(false, true) })
				if i < 0 {
					<-f.done
					break
				}
				window[1+i].run(ctx, bs)
			}
			window = window[1:]
			if f.err != nil {
				yield(tarball.File{}, f.err)
				return
			}
			for len(extra) > 0 && extra[0].Path < f.key {
				if !yield(extra[0], nil) {
					return
				}
				extra = extra[1:]
			}
			if !yield(f.file, nil) {
				return
			}
		}
		for _, f := range extra {
			if !yield(f, nil) {
				return
			}
		}
	}
}

// WriteTar writes the deterministic tar of tree: its files, a generated
// bundle.lock.json stating bundle (the tree's bundle hash, which the caller
// usually has cached: repo.BundleHash, or objects.TreeBundleHash), and
// receipts.ndjson when receipts is not empty. The bytes depend only on the
// tree (and the receipts given).
func WriteTar(ctx context.Context, w io.Writer, bs objects.BlockStore, tree objects.CID, bundle objects.BundleHash, receipts []byte) (tarball.Stats, error) {
	extra := []tarball.File{bytesFile(objects.LockFile, Lock{BundleHash: bundle.String(), Tree: tree, Version: LockVersion}.Encode())}
	if len(receipts) > 0 {
		extra = append(extra, bytesFile(objects.ReceiptsFile, receipts))
	}
	return tarball.Write(ctx, w, treeFiles(ctx, bs, tree, extra), tarball.WriteOptions{})
}

// Imported is the outcome of ReadTar.
type Imported struct {
	Tree     objects.CID
	Bundle   objects.BundleHash
	Lock     *Lock  // nil when the tar has no bundle.lock.json
	Receipts []byte // receipts.ndjson, if present
	Files    int
	Skipped  []tarball.Skipped
}

// MaxDerivedSize bounds the derived files read into memory from a tar.
const MaxDerivedSize = 256 << 20

// ReadTar imports a tar as a tree: regular files become values (stored as
// they are read; if the import fails they are unreferenced and gc removes
// them), bundle.lock.json and receipts.ndjson are returned rather than
// stored. Entries outside the brain are refused by tarball.Read; links and
// devices are refused unless skip is set, in which case they are reported.
func ReadTar(ctx context.Context, r io.Reader, bs objects.BlockStore, skip bool) (Imported, error) {
	var imp Imported
	t := objects.NewTree(bs)
	rep, err := tarball.Read(ctx, r, func(path string, size int64, content io.Reader) error {
		if objects.IsDerived(path) {
			if size > MaxDerivedSize {
				return fmt.Errorf("snapshot: %s is %d bytes, larger than %d", path, size, MaxDerivedSize)
			}
			data, err := io.ReadAll(content)
			if err != nil {
				return err
			}
			if path == objects.LockFile {
				var l Lock
				if err := json.Unmarshal(data, &l); err != nil {
					return fmt.Errorf("snapshot: bundle.lock.json: %w", err)
				}
				imp.Lock = &l
			} else {
				imp.Receipts = data
			}
			return nil
		}
		// Stored as it is read, in bounded memory whatever its size (the
		// values objects.NewFileValue gives, as on every import path).
		v, _, err := objects.WriteValue(ctx, bs, content)
		if err != nil {
			return err
		}
		_, err = t.Put(ctx, path, v)
		return err
	}, tarball.ReadOptions{SkipUnsupported: skip})
	if err != nil {
		return imp, err
	}
	imp.Files, imp.Skipped = rep.Files, rep.Skipped
	if imp.Tree, err = t.Commit(ctx); err != nil {
		return imp, err
	}
	if imp.Bundle, err = objects.TreeBundleHash(ctx, bs, imp.Tree); err != nil {
		return imp, err
	}
	return imp, nil
}

// CheckLineage verifies an import against the lock it carried: the same
// bundle hash and the same tree. want, if not nil, is a bundle hash the
// caller expects (for example one recorded on chain).
func (imp Imported) CheckLineage(want *objects.BundleHash) error {
	if imp.Lock == nil {
		return ErrNoLock
	}
	if imp.Lock.BundleHash != imp.Bundle.String() {
		return fmt.Errorf("%w: it hashes to %s but its bundle.lock.json claims %s", ErrLineageMismatch, imp.Bundle, imp.Lock.BundleHash)
	}
	if !imp.Lock.Tree.IsZero() && imp.Lock.Tree != imp.Tree {
		return fmt.Errorf("%w: it rebuilds tree %s but its bundle.lock.json claims tree %s", ErrLineageMismatch, imp.Tree, imp.Lock.Tree)
	}
	if want != nil && *want != imp.Bundle {
		return fmt.Errorf("%w: it hashes to %s, expected %s", ErrLineageMismatch, imp.Bundle, *want)
	}
	return nil
}
