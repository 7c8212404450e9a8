package tarball

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
)

// WriteOptions tunes Write. The zero value is ready to use; no option
// changes the bytes written.
type WriteOptions struct {
	// Progress, if set, is called after each file's content is written,
	// with the file's path and size.
	Progress func(path string, size int64)
}

// Stats counts what Write wrote.
type Stats struct {
	Files        int   // regular-file entries
	Dirs         int   // directory entries
	ContentBytes int64 // sum of the files' sizes
	TarBytes     int64 // bytes written to w, headers and padding included
}

// copyBufSize is the write buffer (and so the largest content chunk held in
// memory at once).
const copyBufSize = 256 << 10

// Write writes the deterministic tar projection of files to w (see
// docs/tar.md). files must yield regular files in strictly increasing
// bytewise Path order, with valid keys; a path that is also a directory of a
// later path is refused. Each file's Open must yield exactly Size bytes.
//
// On the first bad file, error from files, failure of Open, short or long
// content, write error or cancelled ctx, Write stops, writes nothing more
// (the archive then lacks its end marker, so readers see it as truncated)
// and returns the error; errors about one file are *EntryError. Content is
// copied through a fixed-size buffer, so memory does not grow with file size.
func Write(ctx context.Context, w io.Writer, files iter.Seq2[File, error], opts WriteOptions) (Stats, error) {
	if w == nil || files == nil {
		return Stats{}, errors.New("tarball: Write needs a writer and a file sequence")
	}
	cw := &countWriter{w: w}
	pw := &projWriter{bw: bufio.NewWriterSize(cw, copyBufSize), opts: opts}
	err := pw.writeAll(ctx, files)
	if err == nil {
		_, err = pw.bw.Write(zeroBlock[:])
		if err == nil {
			_, err = pw.bw.Write(zeroBlock[:])
		}
		if err != nil {
			err = fmt.Errorf("tarball: writing end of archive: %w", err)
		}
	}
	// Flush what was fully written before the failure too, so that the
	// output is a prefix of the projection ending at an entry boundary
	// or inside the entry that failed.
	if ferr := pw.bw.Flush(); ferr != nil && err == nil {
		err = fmt.Errorf("tarball: writing archive: %w", ferr)
	}
	pw.stats.TarBytes = cw.n
	return pw.stats, err
}

type projWriter struct {
	bw    *bufio.Writer
	opts  WriteOptions
	stats Stats
	hdr   []byte // reused header buffer
	prev  string // previous file's path; "" before the first
	// files holds earlier file paths, each a prefix of the next: the only
	// earlier files that a later path can still conflict with.
	files []string
}

func (pw *projWriter) writeAll(ctx context.Context, files iter.Seq2[File, error]) error {
	i := 0
	for f, err := range files {
		if err != nil {
			return fmt.Errorf("tarball: listing file %d: %w", i, err)
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("tarball: writing archive: %w", err)
		}
		if err := pw.writeFile(ctx, i, f); err != nil {
			return err
		}
		i++
	}
	return nil
}

func (pw *projWriter) check(f File) error {
	if err := validKey(f.Path); err != nil {
		return err
	}
	if pw.stats.Files > 0 {
		switch {
		case f.Path == pw.prev:
			return ErrDuplicatePath
		case f.Path < pw.prev:
			return fmt.Errorf("%w: %q comes after %q", ErrUnsorted, f.Path, pw.prev)
		}
	}
	if f.Size < 0 {
		return fmt.Errorf("%w: negative size %d", ErrInvalidFile, f.Size)
	}
	if f.Open == nil && f.Data == nil {
		return fmt.Errorf("%w: no Open function", ErrInvalidFile)
	}
	if f.Data != nil && int64(len(f.Data)) != f.Size {
		return fmt.Errorf("%w: declared %d bytes, content has %d", ErrSizeMismatch, f.Size, len(f.Data))
	}
	// Drop earlier files that are not a prefix of this path: sorted order
	// means no later path can start with them either.
	for len(pw.files) > 0 && !strings.HasPrefix(f.Path, pw.files[len(pw.files)-1]) {
		pw.files = pw.files[:len(pw.files)-1]
	}
	if n := len(pw.files); n > 0 {
		if top := pw.files[n-1]; f.Path[len(top)] == '/' {
			return fmt.Errorf("%w: file %q is also a directory of this path", ErrFileDirConflict, top)
		}
	}
	return nil
}

func (pw *projWriter) writeFile(ctx context.Context, i int, f File) error {
	if err := pw.check(f); err != nil {
		return &EntryError{Index: i, Path: f.Path, Err: err}
	}
	// Directories not shared with the previous file are new: emit them,
	// shallowest first. Sorted input keeps a directory's files contiguous,
	// so each directory is emitted exactly once, just before its first file.
	hdr := pw.hdr[:0]
	for j := 0; j < len(f.Path); j++ {
		if f.Path[j] == '/' && !strings.HasPrefix(pw.prev, f.Path[:j+1]) {
			hdr = appendHeader(hdr, f.Path[:j+1], typeDir, modeDir, 0)
			pw.stats.Dirs++
		}
	}
	hdr = appendHeader(hdr, f.Path, typeReg, modeFile, f.Size)
	pw.hdr = hdr
	pw.prev = f.Path
	pw.files = append(pw.files, f.Path)

	if f.Data != nil {
		if err := pw.writeData(ctx, hdr, f.Data); err != nil {
			return &EntryError{Index: i, Path: f.Path, Err: err}
		}
		pw.done(f)
		return nil
	}
	rc, err := f.Open(ctx)
	if err == nil && rc == nil {
		err = errors.New("Open returned no reader")
	}
	if err != nil {
		return &EntryError{Index: i, Path: f.Path, Err: fmt.Errorf("tarball: opening: %w", err)}
	}
	err = pw.copyContent(ctx, hdr, rc, f.Size)
	if cerr := rc.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("tarball: closing: %w", cerr)
	}
	if err != nil {
		return &EntryError{Index: i, Path: f.Path, Err: err}
	}
	pw.done(f)
	return nil
}

func (pw *projWriter) done(f File) {
	pw.stats.Files++
	pw.stats.ContentBytes += f.Size
	if pw.opts.Progress != nil {
		pw.opts.Progress(f.Path, f.Size)
	}
}

// writeData writes a header and content held in memory. A content as long
// as the buffer goes to w directly (the buffer flushed first), not copied
// through the buffer.
func (pw *projWriter) writeData(ctx context.Context, hdr, data []byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("tarball: reading content: %w", err)
	}
	if _, err := pw.bw.Write(hdr); err != nil {
		return fmt.Errorf("tarball: writing header: %w", err)
	}
	if len(data) >= pw.bw.Size() {
		if err := pw.bw.Flush(); err != nil {
			return fmt.Errorf("tarball: writing header: %w", err)
		}
	}
	if _, err := pw.bw.Write(data); err != nil {
		return fmt.Errorf("tarball: writing content: %w", err)
	}
	if _, err := pw.bw.Write(zeroBlock[:padding(int64(len(data)))]); err != nil {
		return fmt.Errorf("tarball: writing content: %w", err)
	}
	return nil
}

func (pw *projWriter) copyContent(ctx context.Context, hdr []byte, r io.Reader, size int64) error {
	if _, err := pw.bw.Write(hdr); err != nil {
		return fmt.Errorf("tarball: writing header: %w", err)
	}
	src := &ctxReader{ctx: ctx, r: r}
	n, err := io.Copy(pw.bw, io.LimitReader(src, size))
	if err != nil {
		if src.err != nil { // the error came from reading, not writing
			return fmt.Errorf("tarball: reading content: %w", err)
		}
		return fmt.Errorf("tarball: writing content: %w", err)
	}
	if n < size {
		return fmt.Errorf("%w: declared %d bytes, content has %d", ErrSizeMismatch, size, n)
	}
	var one [1]byte
	switch m, err := io.ReadFull(src, one[:]); {
	case m > 0:
		return fmt.Errorf("%w: declared %d bytes, content is longer", ErrSizeMismatch, size)
	case err != io.EOF:
		return fmt.Errorf("tarball: reading content: %w", err)
	}
	if _, err := pw.bw.Write(zeroBlock[:padding(size)]); err != nil {
		return fmt.Errorf("tarball: writing content: %w", err)
	}
	return nil
}

// ctxReader stops reading once ctx is done and remembers its own errors, so
// a copy can tell a read failure from a write failure.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
	err error
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		c.err = err
		return 0, err
	}
	n, err := c.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		c.err = err
	}
	return n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
