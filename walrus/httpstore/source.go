package httpstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"

	"github.com/agentstate/agentstate/walrus"
)

// source is a Put body that can be read again for retries.
type source struct {
	ra    io.ReaderAt
	size  int64
	sum   [32]byte // sha256 of the whole body
	magic bool     // the body begins with ManifestMagic
	close func()
}

type readSeekerAt interface {
	io.ReaderAt
	io.Seeker
}

// openSource makes r re-readable: in place when it allows random access,
// else by spooling it. It checks the size and hashes the content.
func (c *Client) openSource(ctx context.Context, r io.Reader, size int64) (*source, error) {
	if rs, ok := r.(readSeekerAt); ok && size >= 0 {
		return c.inPlace(ctx, rs, size)
	}
	return c.spool(ctx, r, size)
}

func sizeMismatch(declared, got int64) error {
	what := fmt.Sprint(got)
	if got > declared {
		what = "more"
	}
	return fmt.Errorf("walrus/httpstore: store: %w: declared %d bytes, reader gave %s", walrus.ErrSizeMismatch, declared, what)
}

func (c *Client) inPlace(ctx context.Context, rs readSeekerAt, size int64) (*source, error) {
	base, err := rs.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, fmt.Errorf("walrus/httpstore: store: locating the blob in its reader: %w", err)
	}
	h := sha256.New()
	n, err := io.Copy(h, &ctxReader{ctx: ctx, r: io.NewSectionReader(rs, base, size)})
	if err != nil {
		return nil, fmt.Errorf("walrus/httpstore: store: reading the blob: %w", err)
	}
	if n != size {
		return nil, sizeMismatch(size, n)
	}
	var one [1]byte
	if k, _ := rs.ReadAt(one[:], base+size); k > 0 {
		return nil, sizeMismatch(size, size+1)
	}
	src := &source{ra: io.NewSectionReader(rs, base, size), size: size, close: func() {}}
	h.Sum(src.sum[:0])
	var head [len(ManifestMagic)]byte
	k, _ := rs.ReadAt(head[:], base)
	src.magic = IsManifest(head[:k])
	if _, err := rs.Seek(base+size, io.SeekStart); err != nil {
		return nil, fmt.Errorf("walrus/httpstore: store: %w", err)
	}
	return src, nil
}

func (c *Client) spool(ctx context.Context, r io.Reader, size int64) (*source, error) {
	h := sha256.New()
	var from io.Reader = &ctxReader{ctx: ctx, r: r}
	if size >= 0 {
		// One byte more than declared, to notice a reader that is too long.
		from = io.LimitReader(from, size+1)
	}
	in := io.TeeReader(from, h)
	// Small bodies stay in memory.
	memCap := c.memSpool
	if size >= 0 && size < memCap {
		memCap = size
	}
	var buf bytes.Buffer
	n, err := io.Copy(&buf, io.LimitReader(in, memCap+1))
	if err != nil {
		return nil, fmt.Errorf("walrus/httpstore: store: reading the blob: %w", err)
	}
	src := &source{close: func() {}}
	if n <= memCap && (size < 0 || n <= size) {
		if size >= 0 && n != size {
			return nil, sizeMismatch(size, n)
		}
		src.ra, src.size = bytes.NewReader(buf.Bytes()), n
	} else {
		if size >= 0 && n > size {
			return nil, sizeMismatch(size, n)
		}
		f, err := os.CreateTemp(c.spoolDir, "walrus-put-*")
		if err != nil {
			return nil, fmt.Errorf("walrus/httpstore: store: create spool file: %w", err)
		}
		src.close = func() {
			f.Close()
			os.Remove(f.Name())
		}
		if _, err := f.Write(buf.Bytes()); err != nil {
			src.close()
			return nil, fmt.Errorf("walrus/httpstore: store: spool: %w", err)
		}
		m, err := io.Copy(f, in)
		if err != nil {
			src.close()
			return nil, fmt.Errorf("walrus/httpstore: store: spool: %w", err)
		}
		n += m
		if size >= 0 && n != size {
			src.close()
			return nil, sizeMismatch(size, n)
		}
		src.ra, src.size = f, n
	}
	h.Sum(src.sum[:0])
	var head [len(ManifestMagic)]byte
	k, _ := src.ra.ReadAt(head[:], 0)
	src.magic = IsManifest(head[:k])
	return src, nil
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
