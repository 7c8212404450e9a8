package execwire

import (
	"errors"
	"unicode/utf8"
)

// The Exec messages are what every served command encodes and decodes
// first, in a process that has just started. The CBOR library builds its
// encoder for a type by reflection on first use (about 0.35 ms, a tenth of a
// served command), so the front end encodes ExecStart and ExecIn and decodes
// ExecOut with the functions below instead. They write exactly the bytes
// rpcwire.Encoding writes (core deterministic CBOR: a map of the non-omitted fields
// under their integer keys, in key order) and read a subset of what
// rpcwire.Encoding reads (definite lengths, no tags, no duplicate or unknown keys,
// the types the fields have); TestExecCodecMatchesLibrary and
// FuzzDecodeExecOut hold them to it.

// AppendCBOR appends m as Encoding encodes it.
func (m *ExecStart) AppendCBOR(b []byte) []byte {
	n := 2
	if len(m.Env) > 0 {
		n++
	}
	if m.StdoutTTY {
		n++
	}
	if m.Width != 0 {
		n++
	}
	b = cborHead(b, 5, uint64(n))
	b = cborHead(b, 0, 1)
	b = cborStrings(b, m.Args)
	b = cborHead(b, 0, 2)
	b = cborText(b, m.Dir)
	if len(m.Env) > 0 {
		b = cborHead(b, 0, 3)
		b = cborStrings(b, m.Env)
	}
	if m.StdoutTTY {
		b = append(cborHead(b, 0, 4), 0xf5)
	}
	if m.Width != 0 {
		b = cborInt(cborHead(b, 0, 5), int64(m.Width))
	}
	return b
}

// AppendCBOR appends m as Encoding encodes it.
func (m *ExecIn) AppendCBOR(b []byte) []byte {
	n := 0
	if len(m.Data) > 0 {
		n++
	}
	if m.EOF {
		n++
	}
	b = cborHead(b, 5, uint64(n))
	if len(m.Data) > 0 {
		b = cborHead(b, 0, 1)
		b = append(cborHead(b, 2, uint64(len(m.Data))), m.Data...)
	}
	if m.EOF {
		b = append(cborHead(b, 0, 2), 0xf5)
	}
	return b
}

var errExecOut = errors.New("not an ExecOut")

// DecodeExecOut reads an ExecOut. It accepts what Encoding writes and
// refuses anything Encoding would refuse (and some things it would take,
// which no server sends). Errors are ErrMalformed. The ExecOut's Data is
// part of b, not a copy.
func DecodeExecOut(b []byte) (ExecOut, error) {
	var m ExecOut
	bad := func(why string) (ExecOut, error) {
		return ExecOut{}, ErrMalformed{&wrapped{errExecOut, why}}
	}
	major, n, rest, ok := cborReadHead(b)
	if !ok || major != 5 || n > 6 {
		return bad("want a map of at most 6 members")
	}
	var seen [7]bool
	for range n {
		var key uint64
		var vmaj byte
		var v uint64
		if major, key, rest, ok = cborReadHead(rest); !ok || major != 0 || key < 1 || key > 6 || seen[key] {
			return bad("a key that is not 1 to 6, or repeated")
		}
		seen[key] = true
		if len(rest) > 0 && key == 4 {
			switch rest[0] {
			case 0xf5:
				m.Done = true
			case 0xf4:
			default:
				return bad("member 4 is not a bool")
			}
			rest = rest[1:]
			continue
		}
		if vmaj, v, rest, ok = cborReadHead(rest); !ok {
			return bad("truncated")
		}
		switch key {
		case 2:
			if vmaj != 2 || v > uint64(len(rest)) {
				return bad("member 2 is not a byte string")
			}
			m.Data = rest[:v:v] // b's bytes: no copy of a command's output
			rest = rest[v:]
		case 6:
			if vmaj != 3 || v > uint64(len(rest)) || !utf8.Valid(rest[:v]) {
				return bad("member 6 is not a text string")
			}
			m.Pager = string(rest[:v])
			rest = rest[v:]
		default:
			var x int64
			switch {
			case vmaj == 0 && v <= maxInt64:
				x = int64(v)
			case vmaj == 1 && v <= maxInt64:
				x = -1 - int64(v)
			default:
				return bad("member " + decimal(key) + " is not an integer")
			}
			if int64(int(x)) != x {
				return bad("member " + decimal(key) + " overflows int")
			}
			switch key {
			case 1:
				m.Stream = int(x)
			case 3:
				m.Want = int(x)
			case 5:
				m.Code = int(x)
			}
		}
	}
	if len(rest) != 0 {
		return bad(decimal(uint64(len(rest))) + " bytes after the map")
	}
	return m, nil
}

// cborHead appends a CBOR head: major type and argument, shortest form.
func cborHead(b []byte, major byte, v uint64) []byte {
	m := major << 5
	switch {
	case v < 24:
		return append(b, m|byte(v))
	case v <= 0xff:
		return append(b, m|24, byte(v))
	case v <= 0xffff:
		return appendBig(append(b, m|25), v, 2)
	case v <= 0xffffffff:
		return appendBig(append(b, m|26), v, 4)
	}
	return appendBig(append(b, m|27), v, 8)
}

func cborInt(b []byte, x int64) []byte {
	if x >= 0 {
		return cborHead(b, 0, uint64(x))
	}
	return cborHead(b, 1, uint64(-1-x))
}

func cborText(b []byte, s string) []byte { return append(cborHead(b, 3, uint64(len(s))), s...) }

// cborStrings appends a text-string array, or null for a nil slice (as the
// library encodes a nil slice).
func cborStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, 0xf6)
	}
	b = cborHead(b, 4, uint64(len(ss)))
	for _, s := range ss {
		b = cborText(b, s)
	}
	return b
}

// cborReadHead reads a head in its shortest form (as deterministic encoders
// write it); ok is false for anything else, an indefinite length included.
func cborReadHead(b []byte) (major byte, v uint64, rest []byte, ok bool) {
	if len(b) == 0 {
		return 0, 0, nil, false
	}
	major, info := b[0]>>5, b[0]&31
	b = b[1:]
	switch {
	case info < 24:
		return major, uint64(info), b, true
	case info == 24 && len(b) >= 1 && b[0] >= 24:
		return major, uint64(b[0]), b[1:], true
	case info == 25 && len(b) >= 2 && big(b[:2]) > 0xff:
		return major, big(b[:2]), b[2:], true
	case info == 26 && len(b) >= 4 && big(b[:4]) > 0xffff:
		return major, big(b[:4]), b[4:], true
	case info == 27 && len(b) >= 8 && big(b[:8]) > 0xffffffff:
		return major, big(b[:8]), b[8:], true
	}
	return 0, 0, nil, false
}

// appendBig appends v's low n bytes, big-endian.
func appendBig(b []byte, v uint64, n int) []byte {
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(v>>(8*i)))
	}
	return b
}

// big reads b as a big-endian number.
func big(b []byte) uint64 {
	var v uint64
	for _, c := range b {
		v = v<<8 | uint64(c)
	}
	return v
}

// wrapped is an error with a reason after it (fmt.Errorf("%w: %s") without fmt).
type wrapped struct {
	err error
	why string
}

func (w *wrapped) Error() string { return w.err.Error() + ": " + w.why }
func (w *wrapped) Unwrap() error { return w.err }

const maxInt64 = 1<<63 - 1 // math.MaxInt64
