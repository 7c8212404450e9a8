package localstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/agentstate/agentstate/internal/atomicfile"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agentstate/agentstate/walrus"
)

// Store is a content-addressed blob directory. It is safe for concurrent use
// by several goroutines and several processes.
type Store struct {
	dir string
}

var _ walrus.Store = (*Store)(nil)

const tmpDirName = "tmp"

// Open opens the blob directory dir, creating it if needed.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("localstore: open: empty directory name")
	}
	if err := os.MkdirAll(filepath.Join(dir, tmpDirName), 0o700); err != nil {
		return nil, fmt.Errorf("localstore: open %s: %w", dir, err)
	}
	return &Store{dir: dir}, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// IDOf returns the id this store gives to content.
func IDOf(content []byte) walrus.BlobID {
	return walrus.BlobIDFromBytes(sha256.Sum256(content))
}

// path returns the file that holds the blob with the given digest.
func (s *Store) path(digest [32]byte) string {
	h := hex.EncodeToString(digest[:])
	return filepath.Join(s.dir, h[:2], h)
}

// Put stores the bytes read from r. size may be -1 when unknown; otherwise r
// must yield exactly size bytes (else walrus.ErrSizeMismatch and nothing is
// stored).
func (s *Store) Put(ctx context.Context, r io.Reader, size int64, opts walrus.StoreOptions) (walrus.Stored, error) {
	if err := opts.Validate(); err != nil {
		return walrus.Stored{}, fmt.Errorf("localstore: put: %w", err)
	}
	if size < -1 {
		return walrus.Stored{}, fmt.Errorf("localstore: put: %w: negative size %d", walrus.ErrSizeMismatch, size)
	}
	if err := ctx.Err(); err != nil {
		return walrus.Stored{}, fmt.Errorf("localstore: put: %w", err)
	}
	tmp, err := atomicfile.Create(filepath.Join(s.dir, tmpDirName), "put-*", 0o400)
	if err != nil {
		return walrus.Stored{}, fmt.Errorf("localstore: put: %w", err)
	}
	defer tmp.Abort()

	h := sha256.New()
	src := &ctxReader{ctx: ctx, r: r}
	var n int64
	if size >= 0 {
		// Read one byte more than declared to detect a reader that is too long.
		n, err = io.Copy(io.MultiWriter(tmp, h), io.LimitReader(src, size+1))
	} else {
		n, err = io.Copy(io.MultiWriter(tmp, h), src)
	}
	if err != nil {
		return walrus.Stored{}, fmt.Errorf("localstore: put: write blob: %w", err)
	}
	if size >= 0 && n != size {
		return walrus.Stored{}, fmt.Errorf("localstore: put: %w: declared %d bytes, reader gave %s", walrus.ErrSizeMismatch, size, countString(n, size))
	}
	if progress := opts.Progress; progress != nil {
		progress(n, n)
	}
	var digest [32]byte
	h.Sum(digest[:0])
	id := walrus.BlobIDFromBytes(digest)
	stored := walrus.Stored{BlobID: id, Size: n}

	final := s.path(digest)
	if _, err := os.Stat(final); err == nil {
		// The blob is already here. The fresh copy still replaces it below,
		// which repairs a file that was damaged since it was written.
		stored.AlreadyCertified = true
	}
	if err := ctx.Err(); err != nil {
		return walrus.Stored{}, fmt.Errorf("localstore: put: %w", err)
	}
	shard := filepath.Dir(final)
	newShard := false
	if _, err := os.Stat(shard); errors.Is(err, fs.ErrNotExist) {
		newShard = true
	}
	if err := os.MkdirAll(shard, 0o700); err != nil {
		return walrus.Stored{}, fmt.Errorf("localstore: put %s: create shard directory: %w", id, err)
	}
	if err := tmp.Commit(final); err != nil {
		return walrus.Stored{}, fmt.Errorf("localstore: put %s: %w", id, err)
	}
	if newShard {
		if err := atomicfile.SyncDir(s.dir); err != nil {
			return walrus.Stored{}, fmt.Errorf("localstore: put %s: %w", id, err)
		}
	}
	return stored, nil
}

func countString(n, size int64) string {
	if n > size {
		return "more"
	}
	return fmt.Sprintf("%d", n)
}

// Get opens the blob named id. The reader re-hashes the content and returns a
// *walrus.CorruptError instead of io.EOF if it does not match id.
func (s *Store) Get(ctx context.Context, id walrus.BlobID) (io.ReadCloser, error) {
	digest, err := id.Bytes()
	if err != nil {
		return nil, fmt.Errorf("localstore: get: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("localstore: get %s: %w", id, err)
	}
	f, err := os.Open(s.path(digest))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("localstore: get %s: %w", id, walrus.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("localstore: get %s: %w", id, err)
	}
	return &verifyingReader{ctx: ctx, f: f, id: id, want: digest, h: sha256.New()}, nil
}

// Has reports whether the store holds a blob named id, without verifying it.
func (s *Store) Has(ctx context.Context, id walrus.BlobID) (bool, error) {
	digest, err := id.Bytes()
	if err != nil {
		return false, fmt.Errorf("localstore: has: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("localstore: has %s: %w", id, err)
	}
	_, err = os.Stat(s.path(digest))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("localstore: has %s: %w", id, err)
	}
}

// Verify reads the blob named id whole and checks it against its name.
func (s *Store) Verify(ctx context.Context, id walrus.BlobID) error {
	rc, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(io.Discard, rc)
	return err
}

// verifyingReader streams a blob file, hashing as it goes.
type verifyingReader struct {
	ctx  context.Context
	f    *os.File
	id   walrus.BlobID
	want [32]byte
	h    hash.Hash
	err  error // sticky terminal error (io.EOF or a failure)
}

func (v *verifyingReader) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	if err := v.ctx.Err(); err != nil {
		v.err = fmt.Errorf("localstore: read %s: %w", v.id, err)
		return 0, v.err
	}
	n, err := v.f.Read(p)
	v.h.Write(p[:n])
	if err == io.EOF {
		var got [32]byte
		v.h.Sum(got[:0])
		if got != v.want {
			v.err = &walrus.CorruptError{ID: v.id, What: "sha256", Want: hex.EncodeToString(v.want[:]), Got: hex.EncodeToString(got[:])}
		} else {
			v.err = io.EOF
		}
		return n, v.err
	}
	if err != nil {
		v.err = fmt.Errorf("localstore: read %s: %w", v.id, err)
		return n, v.err
	}
	return n, nil
}

func (v *verifyingReader) Close() error {
	if v.err == nil {
		v.err = errors.New("localstore: read from closed blob")
	}
	return v.f.Close()
}

// ctxReader stops a copy when its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
