package walrus

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// BlobIDLen is the length of a printed blob id: 32 bytes in URL-safe base64
// without padding.
const BlobIDLen = 43

// blobIDBytes is the length of a blob id in bytes.
const blobIDBytes = 32

// MaxEpochsAhead is the largest number of epochs ahead of the current one that
// Walrus lets a blob be stored for.
const MaxEpochsAhead = 53

var (
	// ErrNotFound reports a blob that was never stored or has expired.
	ErrNotFound = errors.New("walrus: blob not found")
	// ErrTooLarge reports a blob (or part) the service refused for its size.
	ErrTooLarge = errors.New("walrus: blob too large")
	// ErrUnavailable reports a service that stayed unavailable (503, 504, 429,
	// dropped connections, truncated transfers) through every retry.
	ErrUnavailable = errors.New("walrus: service unavailable")
	// ErrBadBlobID reports a string that is not a well-formed blob id.
	ErrBadBlobID = errors.New("walrus: malformed blob id")
	// ErrCorrupt reports bytes read back that do not match what was stored.
	ErrCorrupt = errors.New("walrus: blob content does not verify")
	// ErrSizeMismatch reports a reader that yielded a different number of
	// bytes than the size passed to Put.
	ErrSizeMismatch = errors.New("walrus: blob size does not match the declared size")
	// ErrInvalidOptions reports StoreOptions that no store accepts.
	ErrInvalidOptions = errors.New("walrus: invalid store options")
)

// BlobID names a stored blob: 32 bytes printed as 43 characters of URL-safe
// base64 without padding. The zero value is the empty string and names
// nothing; obtain valid ids from ParseBlobID, BlobIDFromBytes or a Store.
type BlobID string

// blobIDEncoding is strict so that every id has exactly one printed form
// (the unused low bits of the last character must be zero).
var blobIDEncoding = base64.RawURLEncoding.Strict()

// ParseBlobID checks that s is a canonical blob id and returns it. Errors
// match ErrBadBlobID.
func ParseBlobID(s string) (BlobID, error) {
	if len(s) != BlobIDLen {
		return "", fmt.Errorf("%w: %s: want %d characters, got %d", ErrBadBlobID, quoteShort(s), BlobIDLen, len(s))
	}
	var buf [blobIDBytes + 1]byte
	n, err := blobIDEncoding.Decode(buf[:], []byte(s))
	if err != nil {
		return "", fmt.Errorf("%w: %s: not URL-safe base64 without padding: %w", ErrBadBlobID, quoteShort(s), err)
	}
	if n != blobIDBytes {
		return "", fmt.Errorf("%w: %s: decodes to %d bytes, want %d", ErrBadBlobID, quoteShort(s), n, blobIDBytes)
	}
	return BlobID(s), nil
}

// BlobIDFromBytes prints 32 raw bytes as a blob id.
func BlobIDFromBytes(b [32]byte) BlobID {
	return BlobID(blobIDEncoding.EncodeToString(b[:]))
}

// Bytes returns the 32 bytes the id stands for. It fails (ErrBadBlobID) only
// for ids that did not come from ParseBlobID or BlobIDFromBytes.
func (id BlobID) Bytes() ([32]byte, error) {
	var out [32]byte
	if _, err := ParseBlobID(string(id)); err != nil {
		return out, err
	}
	var buf [blobIDBytes + 1]byte
	if _, err := blobIDEncoding.Decode(buf[:], []byte(id)); err != nil {
		return out, fmt.Errorf("%w: %w", ErrBadBlobID, err)
	}
	copy(out[:], buf[:blobIDBytes])
	return out, nil
}

// String returns the printed id.
func (id BlobID) String() string { return string(id) }

// Short returns the first 10 characters of the id, for logs and tables.
func (id BlobID) Short() string {
	if len(id) <= 10 {
		return string(id)
	}
	return string(id[:10])
}

// IsZero reports whether id is the empty id.
func (id BlobID) IsZero() bool { return id == "" }

// quoteShort quotes s for an error message, cutting it if it is long (ids may
// come from outside and be arbitrarily large).
func quoteShort(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}

// StoreOptions says how a blob is stored. Stores that have no notion of
// lifetime or ownership (the local directory store) validate but ignore
// Epochs, Permanent and SendObjectTo.
type StoreOptions struct {
	// Epochs is how many epochs ahead of the current one the blob is kept,
	// 1..MaxEpochsAhead; 0 means the store's default (1 for Walrus).
	Epochs int
	// Permanent asks for a permanent blob rather than a deletable one (Walrus
	// creates deletable blobs by default).
	Permanent bool
	// SendObjectTo, if set, is the Sui address ("0x" and 1 to 64 hex digits)
	// that receives the Blob object Walrus creates.
	SendObjectTo string
	// Progress, if set, is called as bytes are sent with the bytes of the
	// blob sent so far and the blob's total size (-1 while unknown). done
	// never decreases; a retry does not report again the bytes it resends.
	// It is called from the goroutine running Put and must be quick.
	Progress func(done, total int64)
}

// Validate checks the options. Errors match ErrInvalidOptions.
func (o StoreOptions) Validate() error {
	if o.Epochs < 0 || o.Epochs > MaxEpochsAhead {
		return fmt.Errorf("%w: epochs %d out of range 1..%d (0 for the default)", ErrInvalidOptions, o.Epochs, MaxEpochsAhead)
	}
	if o.SendObjectTo != "" && !IsSuiAddress(o.SendObjectTo) {
		return fmt.Errorf("%w: send-object-to %s is not a Sui address (0x and 1 to 64 hex digits)", ErrInvalidOptions, quoteShort(o.SendObjectTo))
	}
	return nil
}

// IsSuiAddress reports whether s looks like a Sui address or object id: "0x"
// followed by 1 to 64 hex digits.
func IsSuiAddress(s string) bool {
	if !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") {
		return false
	}
	h := s[2:]
	if len(h) == 0 || len(h) > 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// Stored describes a blob after Put.
type Stored struct {
	// BlobID names the blob; pass it to Get.
	BlobID BlobID
	// ObjectID is the Sui object id of the Blob object Walrus created, or ""
	// when none was reported (already certified blobs, local stores).
	ObjectID string
	// EndEpoch is the epoch at which the blob expires (exclusive); 0 when not
	// applicable (local stores). For a blob split into parts it is the
	// earliest end epoch among the parts and the manifest.
	EndEpoch int64
	// Size is the size of the blob's content in bytes.
	Size int64
	// AlreadyCertified reports that the store already held this content for
	// at least the requested lifetime, so nothing new was created.
	AlreadyCertified bool
	// Parts is the number of part blobs the content was split into under a
	// manifest blob; 0 when it was stored as a single blob.
	Parts int
}

// Store stores and reads blobs. Implementations are safe for concurrent use.
type Store interface {
	// Put stores the size bytes read from r and returns how they were stored.
	// size may be -1 when unknown; otherwise r must yield exactly size bytes
	// (else ErrSizeMismatch). Storing the same bytes again returns the same
	// BlobID.
	Put(ctx context.Context, r io.Reader, size int64, opts StoreOptions) (Stored, error)
	// Get streams the blob named id. The caller must close the reader and
	// must not trust the bytes until Read has returned io.EOF: verification
	// failures found at the end are reported by Read instead of io.EOF.
	Get(ctx context.Context, id BlobID) (io.ReadCloser, error)
}

// APIError is an error answered by a Walrus publisher or aggregator, decoded
// from its JSON error body (`{"error":{"code","status","message","details"}}`)
// when there is one, or carrying the plain-text body otherwise.
type APIError struct {
	// Op is what was being done: "store" or "read".
	Op string
	// HTTPStatus is the HTTP status code of the response.
	HTTPStatus int
	// Code is the numeric code from the error body (usually HTTPStatus).
	Code int
	// Status is the UPPER_SNAKE_CASE error kind from the body, such as
	// "NOT_FOUND".
	Status string
	// Message is the human-readable message from the body, or the start of a
	// plain-text body.
	Message string
	// Reasons lists the machine-readable reasons from the body's details, such
	// as "BLOB_NOT_FOUND".
	Reasons []string
	// RetryAfter is the delay the server asked for in a Retry-After header,
	// 0 if none.
	RetryAfter time.Duration
}

// Error describes the failure.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("walrus: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "HTTP %d", e.HTTPStatus)
	if e.Status != "" {
		b.WriteString(" ")
		b.WriteString(e.Status)
	}
	if len(e.Reasons) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(e.Reasons, ", "))
		b.WriteString(")")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// HasReason reports whether the error's details carry reason.
func (e *APIError) HasReason(reason string) bool {
	for _, r := range e.Reasons {
		if r == reason {
			return true
		}
	}
	return false
}

// Temporary reports whether the failure is worth retrying: 429, 502, 503
// and 504.
func (e *APIError) Temporary() bool {
	switch e.HTTPStatus {
	case 429, 502, 503, 504:
		return true
	}
	return false
}

// Is maps the error onto the package's sentinels: a 404 on a read is
// ErrNotFound, 413 is ErrTooLarge, and the retryable statuses are
// ErrUnavailable.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrNotFound:
		return e.HTTPStatus == 404 && e.Op != "store"
	case ErrTooLarge:
		return e.HTTPStatus == 413
	case ErrUnavailable:
		return e.Temporary()
	}
	return false
}

// RetryError reports an operation that kept failing with retryable errors
// until its attempts ran out. It matches ErrUnavailable and unwraps to the
// last failure.
type RetryError struct {
	// Op is what was being done, such as "store" or "read".
	Op string
	// Attempts is how many attempts were made.
	Attempts int
	// Err is the last failure.
	Err error
}

// Error describes the failure.
func (e *RetryError) Error() string {
	return fmt.Sprintf("walrus: %s: giving up after %d attempts: %v", e.Op, e.Attempts, e.Err)
}

// Unwrap returns the last failure.
func (e *RetryError) Unwrap() error { return e.Err }

// Is reports that a RetryError is ErrUnavailable.
func (e *RetryError) Is(target error) bool { return target == ErrUnavailable }

// CorruptError reports blob bytes that failed verification on read. It
// matches ErrCorrupt.
type CorruptError struct {
	// ID is the blob that failed.
	ID BlobID
	// What says which check failed, such as "sha256" or "part 2 size".
	What string
	// Want and Got are the expected and actual values, printed.
	Want, Got string
}

// Error describes the failure.
func (e *CorruptError) Error() string {
	return fmt.Sprintf("walrus: blob %s does not verify: %s: want %s, got %s", e.ID, e.What, e.Want, e.Got)
}

// Is reports that a CorruptError is ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }
