package objects

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"

	"github.com/ipfs/go-cid"
	"github.com/multiformats/go-multihash"
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
type CID struct{ c cid.Cid }

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
// digest), built without parsing: those bytes are a valid CIDv1 whatever
// the digest, and go-cid keeps a CID as its bytes. Every other input, ok
// false, goes through go-cid's parser.
func canonicalCID(b []byte) (CID, bool) {
	if len(b) != 36 || b[0] != 0x01 || (b[1] != CodecRaw && b[1] != CodecDagCBOR) || b[2] != 0x12 || b[3] != 0x20 {
		return CID{}, false
	}
	return CID{cid.NewCidV1(uint64(b[1]), multihash.Multihash(b[2:]))}, true
}

// Sum returns the CID of data under codec (CodecRaw or CodecDagCBOR).
func Sum(codec uint64, data []byte) CID {
	return cidFromDigest(codec, sha256.Sum256(data))
}

// ParseCID parses a CID string. Only CIDv1 with a sha2-256 multihash and codec
// raw or dag-cbor is accepted.
func ParseCID(s string) (CID, error) {
	if s == "" {
		return CID{}, fmt.Errorf("%w: empty string", ErrBadCID)
	}
	c, err := cid.Decode(s)
	if err != nil {
		return CID{}, fmt.Errorf("%w: %q: %w", ErrBadCID, s, err)
	}
	return fromCid(c, func() string { return s })
}

// CIDFromBytes parses the binary form of a CID (as stored inside DAG-CBOR links).
func CIDFromBytes(b []byte) (CID, error) {
	if c, ok := canonicalCID(b); ok {
		return c, nil
	}
	n, c, err := cid.CidFromBytes(b)
	if err != nil {
		return CID{}, fmt.Errorf("%w: %w", ErrBadCID, err)
	}
	if n != len(b) {
		return CID{}, fmt.Errorf("%w: %d trailing bytes", ErrBadCID, len(b)-n)
	}
	return fromCid(c, func() string { return fmt.Sprintf("%x", b) })
}

// fromCid checks c is a CID this store uses; shown prints the input for an
// error (only then: a store decodes many CIDs).
func fromCid(c cid.Cid, shown func() string) (CID, error) {
	p := c.Prefix()
	if p.Version != 1 {
		return CID{}, fmt.Errorf("%w: %s: CID version %d, want 1", ErrBadCID, shown(), p.Version)
	}
	if p.MhType != multihash.SHA2_256 || p.MhLength != 32 {
		return CID{}, fmt.Errorf("%w: %s: multihash 0x%x/%d, want sha2-256", ErrBadCID, shown(), p.MhType, p.MhLength)
	}
	if p.Codec != CodecRaw && p.Codec != CodecDagCBOR {
		return CID{}, fmt.Errorf("%w: %s: codec 0x%x, want raw (0x55) or dag-cbor (0x71)", ErrBadCID, shown(), p.Codec)
	}
	return CID{c}, nil
}

// String returns the base32 form, or "" for the zero CID.
func (c CID) String() string {
	if !c.c.Defined() {
		return ""
	}
	return c.c.String()
}

// Short returns the first ShortLen characters of String, enough to be unique
// to read in practice; dag.Resolver resolves abbreviations against a store.
func (c CID) Short() string {
	b := c.c.Bytes()
	if len(b) < 10 {
		s := c.String()
		return s[:min(len(s), ShortLen)]
	}
	// The multibase prefix "b" and base32 of the first bytes: each base32
	// character depends only on the bits before it, so the first 14
	// characters of the whole CID's base32 are those of its first 10 bytes
	// (a log prints thousands of these). Multibase "b" is RFC 4648 base32,
	// lower case, no padding.
	var buf [16]byte
	shortEncoding.Encode(buf[:], b[:10])
	return "b" + string(buf[:ShortLen-1])
}

var shortEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// IsZero reports whether c is the zero CID.
func (c CID) IsZero() bool { return !c.c.Defined() }

// Bytes returns the binary form (36 bytes), or nil for the zero CID.
func (c CID) Bytes() []byte {
	if !c.c.Defined() {
		return nil
	}
	return c.c.Bytes()
}

// KeyString returns the binary form as a string, usable as a map key prefix.
func (c CID) KeyString() string { return c.c.KeyString() }

// Codec returns the multicodec of c.
func (c CID) Codec() uint64 {
	if !c.c.Defined() {
		return 0
	}
	// Every CID this package makes is CIDv1 with a one-byte codec and a
	// sha2-256 digest (fromCid, canonicalCID): the codec is its second
	// byte, read without parsing.
	if k := c.c.KeyString(); len(k) == 36 && k[0] == 0x01 {
		return uint64(k[1])
	}
	return c.c.Prefix().Codec
}

// Digest returns the 32-byte sha256 digest c names. For a value CID this is
// sha256 of the value's content.
func (c CID) Digest() [32]byte {
	var d [32]byte
	b := c.c.Bytes()
	if len(b) == 36 {
		copy(d[:], b[4:])
	}
	return d
}

// Cid returns the go-cid form, for interoperation with IPLD libraries.
func (c CID) Cid() cid.Cid { return c.c }

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
func (c CID) Compare(o CID) int { return strings.Compare(c.c.KeyString(), o.c.KeyString()) }
