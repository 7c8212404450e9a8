package execwire

import (
	"io"
)

// The front end speaks drpc's wire format (storj.io/drpc/drpcwire) itself:
// drpcwire links fmt and, through it, os, whose initialisation (the GODEBUG
// machinery among it) costs a served command about a tenth of its time.
// What is here is the part of drpcwire the front end uses: a packet is one
// frame on the way out, and frames are joined into packets on the way in by
// drpcwire.Reader's rules. TestPacketsMatchLibrary and FuzzReadPacket hold
// it to the library: the same bytes out, and never more accepted in.

// Packet kinds (drpcwire.Kind).
const (
	KindInvoke    = 1
	KindMessage   = 2
	KindError     = 3
	KindCancel    = 4
	KindClose     = 5
	KindCloseSend = 6
)

// Packet is one drpc packet.
type Packet struct {
	Kind            byte
	Stream, Message uint64
	Data            []byte
}

// AppendPacket appends p as a single frame (drpcwire.AppendFrame with Done
// set and Control clear).
func AppendPacket(b []byte, p Packet) []byte {
	b = append(b, p.Kind<<1|1)
	b = appendVarint(b, p.Stream)
	b = appendVarint(b, p.Message)
	b = appendVarint(b, uint64(len(p.Data)))
	return append(b, p.Data...)
}

func appendVarint(b []byte, x uint64) []byte {
	for x >= 128 {
		b = append(b, byte(x&127|128))
		x >>= 7
	}
	return append(b, byte(x))
}

// readVarint reads a varint at the front of b; ok is false when b ends
// first, err set when it runs past 64 bits.
func readVarint(b []byte) (rest []byte, x uint64, ok bool, err error) {
	rest = b
	for shift := uint(0); shift < 64; shift += 7 {
		if len(rest) == 0 {
			return b, 0, false, nil
		}
		v := uint64(rest[0])
		x, rest = x|(v&127)<<shift, rest[1:]
		if v < 128 {
			return rest, x, true, nil
		}
	}
	return rest, 0, false, errProtocol("varint too long")
}

// frame is one frame of a packet.
type frame struct {
	kind            byte
	done, control   bool
	stream, message uint64
	data            []byte
}

// parseFrame reads a frame at the front of b: ok is false when b holds
// only part of one.
func parseFrame(b []byte) (rest []byte, fr frame, ok bool, err error) {
	if len(b) < 4 {
		return b, fr, false, nil
	}
	c := b[0]
	fr.done, fr.control, fr.kind = c&1 != 0, c&0x80 != 0, c&0x7e>>1
	rest = b[1:]
	var n uint64
	for _, v := range []*uint64{&fr.stream, &fr.message, &n} {
		if rest, *v, ok, err = readVarint(rest); !ok || err != nil {
			return b, fr, false, err
		}
	}
	if n > uint64(len(rest)) {
		return b, fr, false, nil
	}
	fr.data, rest = rest[:n], rest[n:]
	return rest, fr, true, nil
}

// ProtocolError is a byte stream that breaks drpc's framing.
type ProtocolError struct{ msg string }

func (e *ProtocolError) Error() string { return "protocol error: " + e.msg }

func errProtocol(msg string) error { return &ProtocolError{msg} }

// Reader joins the frames read from r into packets, as drpcwire.Reader
// does: a frame whose stream and message number are below the last one's
// is refused, one with a new number starts a new packet (dropping a
// partial one), a packet ends with a frame marked done, and no packet nor
// the bytes waiting to be parsed grow past max.
type Reader struct {
	r       io.Reader
	max     int
	buf     []byte // bytes read, from off
	off     int
	stream  uint64 // the number the next frame may not be below
	message uint64
}

// NewReader reads packets of at most max bytes from r.
func NewReader(r io.Reader, max int) *Reader {
	return &Reader{r: r, max: max, stream: 1, message: 1}
}

// maxFrameOverhead is a frame's most bytes besides its data.
const maxFrameOverhead = 1 + 9 + 9 + 9

// ReadPacket returns the next packet; its Data is valid until the next call.
func (r *Reader) ReadPacket() (Packet, error) {
	var p Packet
	started := false
	for {
		rest, fr, ok, err := parseFrame(r.buf[r.off:])
		if err != nil {
			return Packet{}, err
		}
		if !ok {
			if err := r.fill(); err != nil {
				return Packet{}, err
			}
			continue
		}
		r.off = len(r.buf) - len(rest)
		if fr.stream < r.stream || fr.stream == r.stream && fr.message < r.message {
			return Packet{}, errProtocol("id monotonicity violation")
		}
		switch {
		case fr.stream != r.stream || fr.message != r.message || !started:
			r.stream, r.message = fr.stream, fr.message
			p = Packet{Kind: fr.kind, Stream: fr.stream, Message: fr.message, Data: p.Data[:0]}
			started = true
		case fr.kind != p.Kind:
			return Packet{}, errProtocol("packet kind change")
		}
		if len(p.Data) == 0 && fr.done {
			p.Data = fr.data[:len(fr.data):len(fr.data)] // one frame: the read buffer's bytes, no copy
		} else {
			p.Data = append(p.Data, fr.data...)
		}
		if len(p.Data) > r.max {
			return Packet{}, errProtocol("data overflow (len:" + decimal(uint64(len(p.Data))) + ")")
		}
		if fr.done {
			r.message++
			return p, nil
		}
	}
}

// fill reads more bytes, keeping the unparsed ones.
func (r *Reader) fill() error {
	if r.off > 0 {
		r.buf = r.buf[:copy(r.buf, r.buf[r.off:])]
		r.off = 0
	}
	if cap(r.buf)-len(r.buf) < 4096 {
		nb := make([]byte, len(r.buf), 2*cap(r.buf)+4096)
		copy(nb, r.buf)
		r.buf = nb
	}
	for range 100 {
		n, err := r.r.Read(r.buf[len(r.buf):cap(r.buf)])
		r.buf = r.buf[:len(r.buf)+n]
		if len(r.buf)-maxFrameOverhead > r.max {
			return errProtocol("data overflow")
		}
		if n > 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

// RemoteError is an error packet's content: drpc's code and the message.
type RemoteError struct {
	Code uint64
	Msg  string
}

func (e *RemoteError) Error() string { return e.Msg }

// DecodeError reads an error packet's data (drpcwire.MarshalError: the
// code in 8 bytes, big-endian, then the message).
func DecodeError(data []byte) *RemoteError {
	if len(data) < 8 {
		return &RemoteError{Msg: string(data) + " (drpcwire note: invalid error data)"}
	}
	var code uint64
	for _, c := range data[:8] {
		code = code<<8 | uint64(c)
	}
	return &RemoteError{Code: code, Msg: string(data[8:])}
}
