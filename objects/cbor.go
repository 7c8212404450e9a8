package objects

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"
)

// A minimal canonical DAG-CBOR writer and strict reader for the fixed object
// shapes of this package. Canonical means: shortest-form lengths and integers,
// definite lengths only, map keys ordered by length then bytes, CIDs as tag 42
// over a byte string with a leading 0x00. The reader refuses heads in any but
// their shortest form; the tree node decoder (the one read on every walk)
// checks the rest of canonical form as it reads, the other decoders re-encode
// what they read and compare, so any byte-level deviation is refused.

const (
	majUint  = 0 << 5
	majBytes = 2 << 5
	majText  = 3 << 5
	majArray = 4 << 5
	majMap   = 5 << 5
	majTag   = 6 << 5
	cborNull = 0xf6
	tagCID   = 42
)

func appendHead(b []byte, major byte, n uint64) []byte {
	switch {
	case n < 24:
		return append(b, major|byte(n))
	case n <= 0xff:
		return append(b, major|24, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, major|25), uint16(n))
	case n <= 0xffffffff:
		return binary.BigEndian.AppendUint32(append(b, major|26), uint32(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, major|27), n)
	}
}

func appendText(b []byte, s string) []byte {
	b = appendHead(b, majText, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, p []byte) []byte {
	b = appendHead(b, majBytes, uint64(len(p)))
	return append(b, p...)
}

func appendCID(b []byte, c CID) []byte {
	if c.IsZero() {
		return append(b, cborNull)
	}
	raw := c.KeyString() // the binary form, not copied
	b = appendHead(b, majTag, tagCID)
	b = appendHead(b, majBytes, uint64(len(raw)+1))
	b = append(b, 0)
	return append(b, raw...)
}

// reader is a strict cursor over CBOR bytes.
type reader struct {
	b   []byte
	off int
	// s, when set, holds b's bytes as a string: text strings and CIDs are
	// then cut from it instead of each copied out (a decoded object's
	// strings share one allocation).
	s string
}

func (r *reader) fail(format string, a ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrBadObject, r.off, fmt.Sprintf(format, a...))
}

// head reads a major type and argument. Indefinite lengths and non-shortest
// forms are rejected here.
func (r *reader) head() (major byte, n uint64, err error) {
	if r.off >= len(r.b) {
		return 0, 0, r.fail("unexpected end of input")
	}
	ib := r.b[r.off]
	r.off++
	major, info := ib&0xe0, ib&0x1f
	var need int
	switch {
	case info < 24:
		return major, uint64(info), nil
	case info == 24:
		need = 1
	case info == 25:
		need = 2
	case info == 26:
		need = 4
	case info == 27:
		need = 8
	default:
		return 0, 0, r.fail("unsupported additional info %d (indefinite lengths and simple values other than null are not allowed)", info)
	}
	if len(r.b)-r.off < need {
		return 0, 0, r.fail("unexpected end of input")
	}
	for i := 0; i < need; i++ {
		n = n<<8 | uint64(r.b[r.off+i])
	}
	if n < shortestAbove[need] {
		return 0, 0, fmt.Errorf("%w: at byte %d: argument %d not in its shortest form", ErrNonCanonical, r.off, n)
	}
	r.off += need
	return major, n, nil
}

// shortestAbove[k] is the least argument whose shortest form takes k bytes
// after the initial byte (appendHead).
var shortestAbove = [9]uint64{1: 24, 2: 0x100, 4: 0x10000, 8: 0x100000000}

func (r *reader) expect(major byte) (uint64, error) {
	m, n, err := r.head()
	if err != nil {
		return 0, err
	}
	if m != major {
		return 0, r.fail("major type %d, want %d", m>>5, major>>5)
	}
	return n, nil
}

func (r *reader) take(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.off) {
		return nil, r.fail("length %d exceeds remaining input", n)
	}
	p := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return p, nil
}

func (r *reader) text() (string, error) {
	n, err := r.expect(majText)
	if err != nil {
		return "", err
	}
	p, err := r.take(n)
	if err != nil {
		return "", err
	}
	if !utf8.Valid(p) {
		return "", r.fail("text string is not valid UTF-8")
	}
	if r.s != "" {
		return r.s[r.off-len(p) : r.off], nil
	}
	return string(p), nil
}

func (r *reader) bytes() ([]byte, error) {
	n, err := r.expect(majBytes)
	if err != nil {
		return nil, err
	}
	return r.take(n)
}

func (r *reader) uint() (uint64, error) { return r.expect(majUint) }

func (r *reader) key(want string) error {
	// Compared as bytes, not made a string: a walk reads five or six keys a
	// commit. Equal to want, the key is valid UTF-8 as want is.
	n, err := r.expect(majText)
	if err != nil {
		return err
	}
	p, err := r.take(n)
	if err != nil {
		return err
	}
	if string(p) != want {
		return r.fail("map key %q, want %q", p, want)
	}
	return nil
}

func (r *reader) peekNull() bool { return r.off < len(r.b) && r.b[r.off] == cborNull }

// cidOrNull reads a CID link or null (zero CID).
func (r *reader) cidOrNull() (CID, error) {
	if r.peekNull() {
		r.off++
		return CID{}, nil
	}
	return r.cid()
}

func (r *reader) cid() (CID, error) {
	tag, err := r.expect(majTag)
	if err != nil {
		return CID{}, err
	}
	if tag != tagCID {
		return CID{}, r.fail("tag %d, want 42 (CID)", tag)
	}
	p, err := r.bytes()
	if err != nil {
		return CID{}, err
	}
	if len(p) == 0 || p[0] != 0 {
		return CID{}, r.fail("CID bytes lack the 0x00 multibase prefix")
	}
	var c CID
	if r.s != "" {
		c, err = CIDFromKeyString(r.s[r.off-len(p)+1 : r.off])
	} else {
		c, err = CIDFromBytes(p[1:])
	}
	if err != nil {
		return CID{}, fmt.Errorf("%w: at byte %d: %w", ErrBadObject, r.off, err)
	}
	return c, nil
}

func (r *reader) end() error {
	if r.off != len(r.b) {
		return r.fail("%d trailing bytes", len(r.b)-r.off)
	}
	return nil
}

// CARHeader encodes a CARv1 header, {"roots": [roots...], "version": 1}, as
// canonical DAG-CBOR with this package's writer (keys in length-first
// order: "roots" before "version").
func CARHeader(roots ...CID) []byte {
	b := appendHead(nil, majMap, 2)
	b = appendText(b, "roots")
	b = appendHead(b, majArray, uint64(len(roots)))
	for _, r := range roots {
		b = appendCID(b, r)
	}
	b = appendText(b, "version")
	return appendHead(b, majUint, 1)
}

// ParseCARHeader reads a CAR header map strictly (definite lengths, at most
// the fields roots, an array of CID links, and version, an unsigned
// integer, each at most once, nothing after the map) and returns what it
// holds; which roots and versions to accept, and whether the bytes are the
// canonical CARHeader, is the caller's to judge. A CARv2 file's pragma
// ({version: 2}, no roots) reads without error.
func ParseCARHeader(b []byte) (roots []CID, version uint64, err error) {
	r := &reader{b: b}
	n, err := r.expect(majMap)
	if err != nil {
		return nil, 0, err
	}
	seen := map[string]bool{} // a third field is repeated or unknown: refused
	for range n {
		k, err := r.text()
		if err != nil {
			return nil, 0, err
		}
		if seen[k] {
			return nil, 0, r.fail("CAR header: field %q twice", k)
		}
		seen[k] = true
		switch k {
		case "version":
			if version, err = r.uint(); err != nil {
				return nil, 0, err
			}
		case "roots":
			nr, err := r.expect(majArray)
			if err != nil {
				return nil, 0, err
			}
			if nr > 16 {
				return nil, 0, r.fail("CAR header has %d roots", nr)
			}
			for range nr {
				c, err := r.cid()
				if err != nil {
					return nil, 0, err
				}
				roots = append(roots, c)
			}
		default:
			return nil, 0, r.fail("CAR header: unexpected field %q (only roots and version)", k)
		}
	}
	return roots, version, r.end()
}
