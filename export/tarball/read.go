package tarball

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// ReadOptions tunes Read.
type ReadOptions struct {
	// SkipUnsupported skips entries that are neither regular files nor
	// directories (symlinks, hard links, devices, FIFOs, sparse files, ...)
	// and lists them in ReadReport.Skipped, instead of failing on the first.
	// Entries with invalid names are refused either way.
	SkipUnsupported bool
}

// Skipped is an entry Read skipped under ReadOptions.SkipUnsupported.
type Skipped struct {
	Path string // the entry's key (validated and normalised like a file's)
	Type EntryType
}

// ReadReport says what Read found.
type ReadReport struct {
	Files   int   // regular files passed to fn
	Dirs    int   // directory entries (accepted and ignored)
	Bytes   int64 // sum of the regular files' sizes
	Skipped []Skipped
}

// Read parses the tar archive in r and calls fn for each regular file, in
// archive order, with its key, its size and a reader of exactly its content
// (valid only until fn returns). It accepts USTAR, PAX, GNU and V7 archives,
// including PAX "path" records and GNU long names.
//
// Names are normalised by removing one leading "./" (and, for directories, a
// trailing '/'); the result must be a valid key. A backslash is an ordinary
// character. Directory entries are checked, then ignored: directories are
// implied by the files. PAX global headers are ignored. Everything else is
// refused with an *EntryError wrapping ErrUnsupportedEntry, or skipped with
// opts.SkipUnsupported. A duplicate file is ErrDuplicatePath; a name that is
// a file and also a directory (of another file or a directory entry) is
// ErrFileDirConflict. The archive must end with its end-of-archive marker
// (at least one zero block; what follows it is not read): an archive that
// ends early, at an entry boundary or not, is ErrTruncated.
//
// Read stops at the first error, from the archive or from fn, and returns
// it. fn has then already been called for the entries before it: callers
// stage what fn receives and commit it only when Read returns nil. Read
// keeps every file and directory name it has seen, to detect duplicates
// and conflicts, so its memory grows with the number of names.
func Read(ctx context.Context, r io.Reader, fn func(path string, size int64, content io.Reader) error, opts ReadOptions) (ReadReport, error) {
	var rep ReadReport
	if r == nil || fn == nil {
		return rep, errors.New("tarball: Read needs a reader and a callback")
	}
	cr := &countReader{r: r}
	tr := tar.NewReader(cr)
	files := map[string]struct{}{}
	dirs := map[string]struct{}{}
	// end is the offset where the last entry's content (with its padding)
	// ends, or -1 when unknown (sparse entries).
	var end int64
	for i := 0; ; i++ {
		if err := ctx.Err(); err != nil {
			return rep, fmt.Errorf("tarball: reading archive: %w", err)
		}
		hdr, err := tr.Next()
		if errors.Is(err, tar.ErrInsecurePath) && hdr != nil {
			err = nil // GODEBUG=tarinsecurepath=0; normalise checks names itself
		}
		if err == io.EOF {
			if err := cr.checkEnd(end); err != nil {
				return rep, err
			}
			return rep, nil
		}
		if err != nil {
			return rep, archiveError(i, err)
		}
		typ := EntryType(hdr.Typeflag)
		end = physicalEnd(cr.n, hdr)

		if typ == tar.TypeXGlobalHeader {
			continue
		}
		key, isRoot, err := normalise(hdr.Name, typ == tar.TypeDir)
		if err != nil {
			return rep, &EntryError{Index: i, Path: hdr.Name, Type: typ, Err: err}
		}
		switch {
		case typ == tar.TypeDir:
			if isRoot {
				rep.Dirs++
				continue
			}
			if _, ok := files[key]; ok {
				return rep, &EntryError{Index: i, Path: hdr.Name, Type: typ,
					Err: fmt.Errorf("%w: directory %q is also a file", ErrFileDirConflict, key)}
			}
			if err := addParents(key, files, dirs); err != nil {
				return rep, &EntryError{Index: i, Path: hdr.Name, Type: typ, Err: err}
			}
			dirs[key] = struct{}{}
			rep.Dirs++
		case typ == tar.TypeReg && !isSparse(hdr):
			if _, ok := files[key]; ok {
				return rep, &EntryError{Index: i, Path: hdr.Name, Type: typ, Err: ErrDuplicatePath}
			}
			if _, ok := dirs[key]; ok {
				return rep, &EntryError{Index: i, Path: hdr.Name, Type: typ,
					Err: fmt.Errorf("%w: file %q is also a directory", ErrFileDirConflict, key)}
			}
			if err := addParents(key, files, dirs); err != nil {
				return rep, &EntryError{Index: i, Path: hdr.Name, Type: typ, Err: err}
			}
			files[key] = struct{}{}
			if err := deliver(ctx, key, hdr.Size, tr, fn); err != nil {
				return rep, err
			}
			rep.Files++
			rep.Bytes += hdr.Size
		default:
			if isSparse(hdr) {
				typ = 'S'
			}
			if !opts.SkipUnsupported {
				return rep, &EntryError{Index: i, Path: hdr.Name, Type: typ,
					Err: fmt.Errorf("%w: only regular files and directories can be imported (ReadOptions.SkipUnsupported skips the rest)", ErrUnsupportedEntry)}
			}
			rep.Skipped = append(rep.Skipped, Skipped{Path: key, Type: typ})
		}
	}
}

// normalise turns an entry name into a key: one leading "./" is removed,
// and for a directory one trailing '/'. A directory named "", "." or "./"
// is the brain's root (isRoot).
func normalise(name string, dir bool) (key string, isRoot bool, err error) {
	key = strings.TrimPrefix(name, "./")
	if dir {
		key = strings.TrimSuffix(key, "/")
		if key == "" || key == "." {
			return "", true, nil
		}
	}
	if err := validKey(key); err != nil {
		return "", false, err
	}
	return key, false, nil
}

// addParents records every parent directory of key, refusing one that is a
// file already.
func addParents(key string, files, dirs map[string]struct{}) error {
	for j := len(key) - 1; j > 0; j-- {
		if key[j] != '/' {
			continue
		}
		d := key[:j]
		if _, ok := dirs[d]; ok {
			return nil // its parents were recorded with it
		}
		if _, ok := files[d]; ok {
			return fmt.Errorf("%w: %q is a file and a directory", ErrFileDirConflict, d)
		}
		dirs[d] = struct{}{}
	}
	return nil
}

// deliver calls fn with a reader of the current entry's content that stops
// working once fn returns.
func deliver(ctx context.Context, key string, size int64, tr *tar.Reader, fn func(string, int64, io.Reader) error) error {
	cr := &entryReader{ctx: ctx, r: tr}
	err := fn(key, size, cr)
	cr.done = true
	if err == nil {
		return nil
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: in the content of %q: %w", ErrTruncated, key, err)
	}
	return fmt.Errorf("tarball: importing %q: %w", key, err)
}

// isSparse reports a GNU sparse file, old style ('S') or PAX style.
func isSparse(hdr *tar.Header) bool {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// physicalEnd is the archive offset where the entry whose header ended at
// pos (as archive/tar reports it) stops, content padding included, or -1
// when that cannot be known (sparse files store less than their size).
func physicalEnd(pos int64, hdr *tar.Header) int64 {
	var n int64
	switch {
	case isSparse(hdr):
		return -1
	case hdr.Typeflag == tar.TypeLink, hdr.Typeflag == tar.TypeSymlink,
		hdr.Typeflag == tar.TypeChar, hdr.Typeflag == tar.TypeBlock,
		hdr.Typeflag == tar.TypeDir, hdr.Typeflag == tar.TypeFifo,
		hdr.Typeflag == tar.TypeXGlobalHeader:
		// Header-only entries: archive/tar skips no content for them. A
		// global header's records were read already (pos may sit inside
		// their last block; rounding up covers the padding).
	default:
		n = hdr.Size
	}
	end := pos + n
	return end + padding(end)
}

// archiveError classifies an error from tar.Reader.Next.
func archiveError(i int, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: at entry %d: %w", ErrTruncated, i, err)
	}
	if errors.Is(err, tar.ErrHeader) || errors.Is(err, tar.ErrFieldTooLong) {
		return fmt.Errorf("%w: at entry %d: %w", ErrMalformed, i, err)
	}
	return fmt.Errorf("tarball: reading entry %d: %w", i, err)
}

// countReader counts the bytes archive/tar consumes and remembers where the
// last non-zero byte was, so that Read can tell a real end-of-archive
// marker from an archive cut short (archive/tar reports both as io.EOF).
type countReader struct {
	r           io.Reader
	n           int64
	lastNonZero int64 // offset just after the last non-zero byte read
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	for i := n - 1; i >= 0; i-- {
		if p[i] != 0 {
			c.lastNonZero = c.n + int64(i) + 1
			break
		}
	}
	c.n += int64(n)
	return n, err
}

// checkEnd is called when archive/tar reports the end of the archive. The
// bytes consumed must end with at least one whole zero block that starts
// after the last entry's content (end, -1 if unknown) and after the block
// holding the last non-zero byte (which covers headers and PAX or GNU
// records that archive/tar consumed without returning an entry).
func (c *countReader) checkEnd(end int64) error {
	zeros := c.lastNonZero + padding(c.lastNonZero)
	if end > zeros {
		zeros = end
	}
	if c.n-zeros >= blockSize {
		return nil
	}
	if c.n == 0 {
		return fmt.Errorf("%w: empty input (an empty archive is two zero blocks)", ErrTruncated)
	}
	return fmt.Errorf("%w: ends at byte %d without the end-of-archive marker", ErrTruncated, c.n)
}

// entryReader is the content reader handed to fn.
type entryReader struct {
	ctx  context.Context
	r    io.Reader
	done bool
}

func (e *entryReader) Read(p []byte) (int, error) {
	if e.done {
		return 0, errReaderDone
	}
	if err := e.ctx.Err(); err != nil {
		return 0, err
	}
	return e.r.Read(p)
}
