package tarball

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentstate/agentstate/objects"
)

// Sentinel errors. Errors about one entry are *EntryError values wrapping one
// of these, so both errors.Is and errors.As work.
var (
	// ErrInvalidPath: a name is not a valid brain key (objects.ValidateKey:
	// absolute, "..", ".", empty segment, control character, not UTF-8, too
	// long, under .agentstate/ or a derived file name), so it would land
	// outside the brain, in its store, or nowhere.
	ErrInvalidPath = errors.New("tarball: invalid path")
	// ErrUnsorted: Write was given paths out of strictly increasing bytewise order.
	ErrUnsorted = errors.New("tarball: paths not in strictly increasing bytewise order")
	// ErrDuplicatePath: the same path occurs twice.
	ErrDuplicatePath = errors.New("tarball: duplicate path")
	// ErrFileDirConflict: a path is a regular file and also a directory
	// holding another entry (for example "a" and "a/b").
	ErrFileDirConflict = errors.New("tarball: path is both a file and a directory")
	// ErrSizeMismatch: a file's content is longer or shorter than its declared size.
	ErrSizeMismatch = errors.New("tarball: content size differs from declared size")
	// ErrInvalidFile: a File has a negative Size or no Open function.
	ErrInvalidFile = errors.New("tarball: invalid file")
	// ErrUnsupportedEntry: an archive entry is neither a regular file nor a
	// directory (symlink, hard link, device, FIFO, sparse file, ...).
	ErrUnsupportedEntry = errors.New("tarball: unsupported entry type")
	// ErrTruncated: the archive ends before its end-of-archive marker or in
	// the middle of a header or of a file's content.
	ErrTruncated = errors.New("tarball: archive truncated")
	// ErrMalformed: the archive is not a well-formed tar.
	ErrMalformed = errors.New("tarball: malformed archive")

	errReaderDone = errors.New("tarball: content reader used after its callback returned")
)

// File is one brain file handed to Write.
type File struct {
	// Path is the file's brain key.
	Path string
	// Size is the exact number of bytes Open yields.
	Size int64
	// Open returns the file's content. Write closes it.
	Open func(ctx context.Context) (io.ReadCloser, error)
	// Data, if not nil, is the file's content, already in memory: Write
	// writes it without copying it through its buffer, and Open is not
	// called (nor needed).
	Data []byte
}

// EntryType is a tar typeflag.
type EntryType byte

// String names the entry type for messages.
func (t EntryType) String() string {
	switch t {
	case '0', 0:
		return "regular file"
	case '1':
		return "hard link"
	case '2':
		return "symlink"
	case '3':
		return "character device"
	case '4':
		return "block device"
	case '5':
		return "directory"
	case '6':
		return "FIFO"
	case '7':
		return "contiguous file"
	case 'S':
		return "GNU sparse file"
	case 'D':
		return "GNU directory dump"
	case 'M':
		return "GNU multi-volume continuation"
	case 'V':
		return "GNU volume label"
	}
	if t >= 0x20 && t < 0x7f {
		return fmt.Sprintf("entry type %q", rune(t))
	}
	return fmt.Sprintf("entry type 0x%02x", byte(t))
}

// EntryError reports a problem with one file (Write) or archive entry (Read).
type EntryError struct {
	// Index is the 0-based position of the file in Write's input, or of the
	// entry in the archive for Read (PAX and GNU long-name records are not
	// counted; a PAX global header is).
	Index int
	// Path is the file's path (Write) or the entry's name as recorded in the
	// archive (Read), before any normalisation.
	Path string
	// Type is the entry's typeflag (Read only; 0 for Write).
	Type EntryType
	// Err wraps one of the package's sentinel errors.
	Err error
}

func (e *EntryError) Error() string {
	msg := strings.TrimPrefix(e.Err.Error(), "tarball: ")
	if e.Type != 0 {
		return fmt.Sprintf("tarball: entry %d %q (%s): %s", e.Index, e.Path, e.Type, msg)
	}
	return fmt.Sprintf("tarball: entry %d %q: %s", e.Index, e.Path, msg)
}

func (e *EntryError) Unwrap() error { return e.Err }

// validKey applies the brain key rules, which objects.ValidateKey defines
// (one definition for every path that takes keys). The returned error wraps
// both ErrInvalidPath and the *objects.KeyError that says which rule failed.
// A backslash is an ordinary character.
func validKey(p string) error {
	if err := objects.ValidateKey(p); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidPath, err)
	}
	return nil
}
