package envelope

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"

	"golang.org/x/crypto/argon2"
	"golang.org/x/crypto/hkdf"
)

// KeySize is the size of a master key.
const KeySize = 32

// keyFilePrefix opens the text form of a key file.
const keyFilePrefix = "agskey1:"

// maxKeyFileSize bounds what LoadKeyFile reads.
const maxKeyFileSize = 4096

// Key is a 32-byte master key. Its String method never shows the key bytes.
type Key [KeySize]byte

// KeyID is the public 16-byte identifier of a master key recorded in headers.
type KeyID [KeyIDSize]byte

// String returns the key id as 32 lowercase hex digits.
func (id KeyID) String() string { return hex.EncodeToString(id[:]) }

// IsZero reports whether id is all zero bytes.
func (id KeyID) IsZero() bool { return id == KeyID{} }

// ID derives the key's public id: the first 16 bytes of
// HKDF-SHA256(ikm=key, salt=empty, info="agentstate envelope v1: key id").
func (k Key) ID() KeyID {
	var id KeyID
	hkdfRead(k[:], nil, []byte(infoKeyID), id[:])
	return id
}

// String identifies the key by its id, never by its bytes, so a key that lands
// in a log or an error message does not leak.
func (k Key) String() string { return "envelope.Key(id=" + k.ID().String() + ")" }

// GoString is String, for %#v.
func (k Key) GoString() string { return k.String() }

// GenerateKey reads a fresh master key from r (crypto/rand.Reader when r is nil).
func GenerateKey(r io.Reader) (Key, error) {
	if r == nil {
		r = rand.Reader
	}
	var k Key
	if _, err := io.ReadFull(r, k[:]); err != nil {
		return Key{}, fmt.Errorf("envelope: generating key: %w", err)
	}
	return k, nil
}

// EncodeKeyFile returns the text form of a key file:
// "agskey1:" followed by 64 lowercase hex digits and a newline (73 bytes).
func EncodeKeyFile(k Key) []byte {
	b := make([]byte, 0, len(keyFilePrefix)+2*KeySize+1)
	b = append(b, keyFilePrefix...)
	b = hex.AppendEncode(b, k[:])
	return append(b, '\n')
}

// ParseKeyFile decodes a key file's contents: either exactly 32 raw bytes, or the
// text form "agskey1:<64 hex digits>" with optional surrounding ASCII whitespace
// (a trailing newline or CRLF). Hex digits may be upper or lower case.
func ParseKeyFile(b []byte) (Key, error) {
	var k Key
	if len(b) == KeySize && !bytes.HasPrefix(b, []byte(keyFilePrefix)) {
		copy(k[:], b)
		return k, nil
	}
	t := bytes.TrimSpace(b)
	if !bytes.HasPrefix(t, []byte(keyFilePrefix)) {
		return Key{}, fmt.Errorf("%w: %d bytes, want either exactly %d raw bytes or a line %q followed by %d hex digits",
			ErrKeyFile, len(b), KeySize, keyFilePrefix, 2*KeySize)
	}
	h := t[len(keyFilePrefix):]
	if len(h) != 2*KeySize {
		return Key{}, fmt.Errorf("%w: %d hex digits after %q, want %d", ErrKeyFile, len(h), keyFilePrefix, 2*KeySize)
	}
	if _, err := hex.Decode(k[:], h); err != nil {
		return Key{}, fmt.Errorf("%w: key is not hex: %w", ErrKeyFile, err)
	}
	return k, nil
}

// WriteKeyFile writes k in the text form to a new file at path with mode 0600.
// It refuses to overwrite an existing file (the error matches fs.ErrExist) and
// syncs the file before returning.
func WriteKeyFile(ctx context.Context, path string, k Key) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("envelope: creating key file %s: %w", path, err)
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("envelope: closing key file %s: %w", path, cerr)
		}
		if err != nil {
			_ = os.Remove(path)
		}
	}()
	if _, err := f.Write(EncodeKeyFile(k)); err != nil {
		return fmt.Errorf("envelope: writing key file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("envelope: syncing key file %s: %w", path, err)
	}
	return nil
}

// LoadKeyFile reads a key file (see ParseKeyFile for the accepted forms).
//
// When the file is fine but its mode lets group or others read or write it,
// LoadKeyFile returns the key together with a *KeyFilePermissionError (matching
// ErrKeyFilePermissions): a caller that treats every error as fatal refuses the
// key, as ssh does; a caller that only wants to warn checks errors.Is and goes on.
func LoadKeyFile(ctx context.Context, path string) (Key, error) {
	if err := ctx.Err(); err != nil {
		return Key{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return Key{}, fmt.Errorf("envelope: opening key file %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Key{}, fmt.Errorf("envelope: reading key file %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return Key{}, fmt.Errorf("%w: %s is not a regular file (mode %v)", ErrKeyFile, path, st.Mode())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFileSize+1))
	if err != nil {
		return Key{}, fmt.Errorf("envelope: reading key file %s: %w", path, err)
	}
	if len(b) > maxKeyFileSize {
		return Key{}, fmt.Errorf("%w: %s is larger than %d bytes", ErrKeyFile, path, maxKeyFileSize)
	}
	k, err := ParseKeyFile(b)
	if err != nil {
		return Key{}, fmt.Errorf("key file %s: %w", path, err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return k, &KeyFilePermissionError{Path: path, Mode: st.Mode()}
	}
	return k, nil
}

// KDFParams are argon2id parameters.
type KDFParams struct {
	Time      uint32 `json:"time"`      // passes over memory, 1..MaxKDFTime
	MemoryKiB uint32 `json:"memoryKiB"` // memory in KiB, 8*Threads..MaxKDFMemoryKiB
	Threads   uint8  `json:"threads"`   // lanes, 1..255
}

// Bounds on KDF parameters that any header may carry.
const (
	MaxKDFTime      = 64
	MaxKDFMemoryKiB = 4 << 20 // 4 GiB
	// DefaultMaxKDFMemoryKiB is the most memory Decrypt spends re-deriving a
	// passphrase key from a blob's header unless Options says otherwise.
	DefaultMaxKDFMemoryKiB = 1 << 20 // 1 GiB
	// DefaultMaxKDFTime, DefaultMaxKDFWorkKiB and DefaultMaxKDFThreads bound
	// the passes, memory×passes and lanes Decrypt accepts from a blob header.
	// agentstate writes DefaultKDFParams (3 passes × 64 MiB = 192 MiB×passes,
	// 2 lanes); the limits leave room for stronger settings chosen through the
	// API (1 GiB×passes is about 2 s of CPU on one core, measured) while refusing the
	// format's extremes (64 passes × 4 GiB), which would run for many minutes.
	DefaultMaxKDFTime    = 16
	DefaultMaxKDFWorkKiB = 1 << 20 // 1 GiB × passes
	DefaultMaxKDFThreads = 16
)

// DefaultKDFParams returns the parameters used for new passphrase keys: argon2id
// with 64 MiB of memory, 3 passes and 2 lanes (about a quarter of a second on a
// 2-core machine; RFC 9106's second recommended option uses 64 MiB and 3 passes).
func DefaultKDFParams() KDFParams {
	return KDFParams{Time: 3, MemoryKiB: 64 << 10, Threads: 2}
}

func (p KDFParams) validate() error {
	switch {
	case p.Time < 1 || p.Time > MaxKDFTime:
		return fmt.Errorf("%w: argon2id time %d, want 1..%d", ErrBadOptions, p.Time, MaxKDFTime)
	case p.Threads < 1:
		return fmt.Errorf("%w: argon2id threads 0, want 1..255", ErrBadOptions)
	case p.MemoryKiB < 8*uint32(p.Threads) || p.MemoryKiB > MaxKDFMemoryKiB:
		return fmt.Errorf("%w: argon2id memory %d KiB, want %d..%d", ErrBadOptions, p.MemoryKiB, 8*uint32(p.Threads), MaxKDFMemoryKiB)
	}
	return nil
}

func validateKDFSalt(salt []byte) error {
	if len(salt) < MinKDFSaltSize || len(salt) > MaxKDFSaltSize {
		return fmt.Errorf("%w: passphrase salt is %d bytes, want %d..%d", ErrBadOptions, len(salt), MinKDFSaltSize, MaxKDFSaltSize)
	}
	return nil
}

// NewSalt returns 16 random bytes from crypto/rand for KeyFromPassphrase. For
// deterministic envelopes the caller creates the salt once per store, persists it
// in the store's configuration and reuses it: a new salt means a new key.
func NewSalt() ([]byte, error) {
	s := make([]byte, MinKDFSaltSize)
	if _, err := io.ReadFull(rand.Reader, s); err != nil {
		return nil, fmt.Errorf("envelope: generating salt: %w", err)
	}
	return s, nil
}

// KeyFromPassphrase derives a master key with argon2id (version 0x13) from pass
// and salt: argon2.IDKey(pass, salt, p.Time, p.MemoryKiB, p.Threads, 32).
// It refuses an empty passphrase, a salt outside 16..64 bytes and parameters
// outside their bounds.
func KeyFromPassphrase(pass, salt []byte, p KDFParams) (Key, error) {
	if len(pass) == 0 {
		return Key{}, fmt.Errorf("%w: empty passphrase", ErrBadOptions)
	}
	if err := validateKDFSalt(salt); err != nil {
		return Key{}, err
	}
	if err := p.validate(); err != nil {
		return Key{}, err
	}
	var k Key
	copy(k[:], argon2IDKey(pass, salt, p.Time, p.MemoryKiB, p.Threads, KeySize))
	return k, nil
}

// argon2IDKey is argon2.IDKey; tests replace it to see whether and how the KDF runs.
var argon2IDKey = argon2.IDKey

// HKDF labels (the info strings). docs/envelope.md lists them.
const (
	infoKeyID   = "agentstate envelope v1: key id"
	infoDetSalt = "agentstate envelope v1: deterministic salt"
	infoFileKey = "agentstate envelope v1: file key"
)

// hkdfRead fills out with HKDF-SHA256(ikm, salt, info). Reading from HKDF fails
// only past 255*32 bytes, which no caller asks for.
func hkdfRead(ikm, salt, info, out []byte) {
	if _, err := io.ReadFull(hkdf.New(sha256.New, ikm, salt, info), out); err != nil {
		panic(errors.New("envelope: HKDF output too long (internal error)"))
	}
}
