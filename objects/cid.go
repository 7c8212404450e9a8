package objects

import (
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"

	mbase "github.com/multiformats/go-multibase"
)

// Multicodec codes used by agentstate.
const (
	CodecRaw     = 0x55 // values
	CodecDagCBOR = 0x71 // trees, commits, chunked file nodes
)

// ShortLen is the length of a CID's short form (see CID.Short).
const ShortLen = 16

// CID names an object: CIDv1, sha2-256, codec raw or dag-cbor.
// The zero CID names nothing; use IsZero to test for it.
//
// A CID is kept as its binary form. It is parsed here rather than with an
// IPLD CID library: those link every multihash function they know (BLAKE2,
// BLAKE3 and its CPU feature probe, SHA-3, murmur3), whose package
// initialisers every command's start paid for, where a store uses sha2-256
// only (docs/performance.md, "Unserved log and the engine's start, again").
type CID struct{ s string }

// prefix bytes of a CIDv1 sha2-256 CID for each codec: version, codec, mh code, mh length.
var (
	prefixRaw  = []byte{0x01, CodecRaw, 0x12, 0x20}
	prefixCBOR = []byte{0x01, CodecDagCBOR, 0x12, 0x20}
)

// cidFromDigest builds the CID of the given codec over a sha256 digest.
func cidFromDigest(codec uint64, digest [32]byte) CID {
	var b [36]byte
	switch codec {
	case CodecRaw:
		copy(b[:4], prefixRaw)
	case CodecDagCBOR:
		copy(b[:4], prefixCBOR)
	default:
		panic("objects: unsupported codec") // programming error: callers pass constants
	}
	copy(b[4:], digest[:])
	c, _ := canonicalCID(b[:])
	return c
}

// canonicalCID is the CID whose binary form is b when b is exactly one of
// the two forms this store writes (prefixRaw or prefixCBOR, then a 32-byte
// digest). Every other input, ok false, goes through ReadCID's parser.
func canonicalCID(b []byte) (CID, bool) {
	if len(b) != 36 || b[0] != 0x01 || (b[1] != CodecRaw && b[1] != CodecDagCBOR) || b[2] != 0x12 || b[3] != 0x20 {
		return CID{}, false
	}
	return CID{string(b)}, true
}

// uvarint reads a multiformats unsigned varint: at most 9 bytes, minimally
// encoded.
func uvarint(b []byte) (uint64, int, error) {
	var x uint64
	var s uint
	for i, c := range b {
		if i == 9 || (i == 8 && c >= 0x80) {
			return 0, 0, errors.New("varint longer than 9 bytes")
		}
		if c < 0x80 {
			if c == 0 && i > 0 {
				return 0, 0, errors.New("varint not minimally encoded")
			}
			return x | uint64(c)<<s, i + 1, nil
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, 0, errors.New("varint cut short")
}

// ReadCID parses the CID at the start of b (binary form) and returns it
// and the number of bytes it took. Only CIDv1 with a sha2-256 multihash
// and codec raw or dag-cbor is accepted; every error wraps ErrBadCID.
func ReadCID(b []byte) (CID, int, error) {
	return readCID(b, func() string { return fmt.Sprintf("%x", b[:min(len(b), 40)]) })
}

// readCID is ReadCID naming the input as shown returns it in its errors.
func readCID(b []byte, shown func() string) (CID, int, error) {
	if len(b) >= 36 {
		if c, ok := canonicalCID(b[:36]); ok {
			return c, 36, nil
		}
	}
	if len(b) > 2 && b[0] == 0x12 && b[1] == 0x20 {
		return CID{}, 0, fmt.Errorf("%w: %s: CID version 0, want 1", ErrBadCID, shown())
	}
	var f [4]uint64 // version, codec, multihash code, digest length
	n := 0
	for i := range f {
		v, k, err := uvarint(b[n:])
		if err != nil {
			return CID{}, 0, fmt.Errorf("%w: %s: %w", ErrBadCID, shown(), err)
		}
		f[i], n = v, n+k
		if i == 0 && v != 1 {
			return CID{}, 0, fmt.Errorf("%w: %s: CID version %d, want 1", ErrBadCID, shown(), v)
		}
	}
	if f[3] > uint64(len(b)-n) {
		return CID{}, 0, fmt.Errorf("%w: %s: digest of %d bytes, %d left", ErrBadCID, shown(), f[3], len(b)-n)
	}
	if f[2] != 0x12 || f[3] != 32 {
		return CID{}, 0, fmt.Errorf("%w: %s: multihash 0x%x/%d, want sha2-256", ErrBadCID, shown(), f[2], f[3])
	}
	if f[1] != CodecRaw && f[1] != CodecDagCBOR {
		return CID{}, 0, fmt.Errorf("%w: %s: codec 0x%x, want raw (0x55) or dag-cbor (0x71)", ErrBadCID, shown(), f[1])
	}
	// Only the canonical forms remain (one-byte varints are the only
	// minimal encodings of these numbers), which the fast path took.
	return CID{}, 0, fmt.Errorf("%w: %s: not a canonical CID", ErrBadCID, shown())
}

// Sum returns the CID of data under codec (CodecRaw or CodecDagCBOR).
func Sum(codec uint64, data []byte) CID {
	return cidFromDigest(codec, sha256.Sum256(data))
}

// ParseCID parses a CID string (any multibase). Only CIDv1 with a
// sha2-256 multihash and codec raw or dag-cbor is accepted.
func ParseCID(s string) (CID, error) {
	if s == "" {
		return CID{}, fmt.Errorf("%w: empty string", ErrBadCID)
	}
	if len(s) < 2 {
		return CID{}, fmt.Errorf("%w: %q: too short", ErrBadCID, s)
	}
	if len(s) == 46 && s[:2] == "Qm" {
		return CID{}, fmt.Errorf("%w: %s: CID version 0, want 1", ErrBadCID, s)
	}
	_, b, err := mbase.Decode(s)
	if err != nil {
		return CID{}, fmt.Errorf("%w: %q: %w", ErrBadCID, s, err)
	}
	c, n, err := readCID(b, func() string { return s })
	if err != nil {
		return CID{}, err
	}
	if n != len(b) {
		return CID{}, fmt.Errorf("%w: %s: %d trailing bytes", ErrBadCID, s, len(b)-n)
	}
	return c, nil
}

// CIDFromBytes parses the binary form of a CID (as stored inside DAG-CBOR links).
func CIDFromBytes(b []byte) (CID, error) {
	if c, ok := canonicalCID(b); ok {
		return c, nil
	}
	c, n, err := readCID(b, func() string { return fmt.Sprintf("%x", b) })
	if err != nil {
		return CID{}, err
	}
	if n != len(b) {
		return CID{}, fmt.Errorf("%w: %d trailing bytes", ErrBadCID, len(b)-n)
	}
	return c, nil
}

// String returns the base32 form, or "" for the zero CID.
func (c CID) String() string {
	if c.s == "" {
		return ""
	}
	return "b" + shortEncoding.EncodeToString([]byte(c.s))
}

// Short returns the first ShortLen characters of String, enough to be unique
// to read in practice; dag.Resolver resolves abbreviations against a store.
func (c CID) Short() string {
	if len(c.s) < 10 {
		return "" // the zero CID: every other is 36 bytes
	}
	// The multibase prefix "b" and base32 of the first bytes: each base32
	// character depends only on the bits before it, so the first 14
	// characters of the whole CID's base32 are those of its first 10 bytes
	// (a log prints thousands of these). Multibase "b" is RFC 4648 base32,
	// lower case, no padding.
	var buf [16]byte
	shortEncoding.Encode(buf[:], []byte(c.s[:10]))
	return "b" + string(buf[:ShortLen-1])
}

// AppendShort appends Short's characters to b (no string is made: a log
// line is built in one buffer).
func (c CID) AppendShort(b []byte) []byte {
	if len(c.s) < 10 {
		return b
	}
	var buf [16]byte
	shortEncoding.Encode(buf[:], []byte(c.s[:10]))
	return append(append(b, 'b'), buf[:ShortLen-1]...)
}

var shortEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// IsZero reports whether c is the zero CID.
func (c CID) IsZero() bool { return c.s == "" }

// Bytes returns the binary form (36 bytes), or nil for the zero CID.
func (c CID) Bytes() []byte {
	if c.s == "" {
		return nil
	}
	return []byte(c.s)
}

// KeyString returns the binary form as a string, usable as a map key prefix.
func (c CID) KeyString() string { return c.s }

// CIDFromKeyString is the inverse of KeyString: the CID whose binary form s
// holds, checked as CIDFromBytes checks it. A canonical s is kept as it is,
// not copied, so a record holding many CIDs can be decoded from one string
// without an allocation each.
func CIDFromKeyString(s string) (CID, error) {
	if len(s) == 36 && s[0] == 0x01 && (s[1] == CodecRaw || s[1] == CodecDagCBOR) && s[2] == 0x12 && s[3] == 0x20 {
		return CID{s}, nil
	}
	return CIDFromBytes([]byte(s))
}

// Codec returns the multicodec of c (0 for the zero CID). Every CID this
// package makes is CIDv1 with a one-byte codec and a sha2-256 digest
// (ReadCID): the codec is its second byte.
func (c CID) Codec() uint64 {
	if len(c.s) != 36 {
		return 0
	}
	return uint64(c.s[1])
}

// Digest returns the 32-byte sha256 digest c names. For a value CID this is
// sha256 of the value's content.
func (c CID) Digest() [32]byte {
	var d [32]byte
	if len(c.s) == 36 {
		copy(d[:], c.s[4:])
	}
	return d
}

// MarshalText implements encoding.TextMarshaler (JSON output).
func (c CID) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *CID) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*c = CID{}
		return nil
	}
	v, err := ParseCID(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}

// Compare orders CIDs by their binary form.
func (c CID) Compare(o CID) int { return strings.Compare(c.s, o.s) }
