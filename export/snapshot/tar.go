package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

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
	return tarball.File{Path: path, Size: int64(len(data)), Open: func(context.Context) (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}}
}

// treeFiles yields a tree's entries as tar files, merged in bytewise order
// with the extra (derived) files.
func treeFiles(ctx context.Context, bs objects.BlockStore, tree objects.CID, extra []tarball.File) iter.Seq2[tarball.File, error] {
	return func(yield func(tarball.File, error) bool) {
		t, err := objects.LoadTree(ctx, bs, tree)
		if err != nil {
			yield(tarball.File{}, err)
			return
		}
		for e, err := range t.Entries(ctx, "") {
			if err != nil {
				yield(tarball.File{}, err)
				return
			}
			for len(extra) > 0 && extra[0].Path < e.Key {
				if !yield(extra[0], nil) {
					return
				}
				extra = extra[1:]
			}
			// The content streams a chunk at a time (the tar writer reads
			// past its end, where a chunked value's sha256 is checked).
			rd, size, err := objects.OpenValue(ctx, bs, e.Value)
			if err != nil {
				yield(tarball.File{}, fmt.Errorf("snapshot: value of %q: %w", e.Key, err))
				return
			}
			f := tarball.File{Path: e.Key, Size: int64(size), Open: func(context.Context) (io.ReadCloser, error) {
				return io.NopCloser(rd), nil
			}}
			if !yield(f, nil) {
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
