package execwire_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/agentstate/agentstate/internal/rpcwire/execwire"
	"storj.io/drpc/drpcerr"
	"storj.io/drpc/drpcwire"
)

// The kinds are drpc's.
func TestKindsAreDrpcs(t *testing.T) {
	for _, k := range []struct {
		ours   byte
		theirs drpcwire.Kind
	}{
		{execwire.KindInvoke, drpcwire.KindInvoke}, {execwire.KindMessage, drpcwire.KindMessage},
		{execwire.KindError, drpcwire.KindError}, {execwire.KindCancel, drpcwire.KindCancel},
		{execwire.KindClose, drpcwire.KindClose}, {execwire.KindCloseSend, drpcwire.KindCloseSend},
	} {
		if k.ours != byte(k.theirs) {
			t.Errorf("kind %v: ours is %d", k.theirs, k.ours)
		}
	}
}

// A packet is written as drpcwire writes it, and drpc's reader reads it back.
func TestAppendPacketMatchesLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	var ours, theirs bytes.Buffer
	w := drpcwire.NewWriter(&theirs, 0)
	var sent []execwire.Packet
	stream, message := uint64(1), uint64(0)
	for range 2000 {
		switch r.IntN(8) { // ids count up, by small and large steps (varints of every length)
		case 0:
			stream, message = stream+1, 1
		case 1:
			stream, message = stream+1<<(7*r.IntN(9)), 1
		case 2:
			message += 1 << (7 * r.IntN(9))
		default:
			message++
		}
		p := execwire.Packet{Kind: byte(1 + r.IntN(7)), Stream: stream, Message: message}
		switch r.IntN(4) {
		case 1:
			p.Data = make([]byte, r.IntN(300))
			for j := range p.Data {
				p.Data[j] = byte(r.Uint32())
			}
		}
		ours.Write(execwire.AppendPacket(nil, p))
		if err := w.WritePacket(drpcwire.Packet{Kind: drpcwire.Kind(p.Kind), ID: drpcwire.ID{Stream: p.Stream, Message: p.Message}, Data: p.Data}); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, p)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ours.Bytes(), theirs.Bytes()) {
		t.Fatal("the bytes differ from drpcwire's")
	}
	// Read back by both readers.
	rd := execwire.NewReader(bytes.NewReader(ours.Bytes()), 1<<20)
	lib := drpcwire.NewReader(bytes.NewReader(ours.Bytes()))
	for i, want := range sent {
		got, err := rd.ReadPacket()
		if err != nil {
			t.Fatalf("packet %d: %v", i, err)
		}
		lp, err := lib.ReadPacket()
		if err != nil {
			t.Fatalf("packet %d (library): %v", i, err)
		}
		if got.Kind != want.Kind || got.Stream != want.Stream || got.Message != want.Message || !bytes.Equal(got.Data, want.Data) ||
			byte(lp.Kind) != got.Kind || lp.ID.Stream != got.Stream || lp.ID.Message != got.Message || !bytes.Equal(lp.Data, got.Data) {
			t.Fatalf("packet %d: read %+v, library %v, sent %+v", i, got, lp, want)
		}
	}
	if _, err := rd.ReadPacket(); err != io.EOF {
		t.Fatalf("after the last packet: %v, want EOF", err)
	}
}

// An error packet's code and message are what drpc put in it.
func TestDecodeErrorMatchesLibrary(t *testing.T) {
	for _, code := range []uint64{0, 1, 104, 106, 1<<64 - 1} {
		data := drpcwire.MarshalError(drpcerr.WithCode(errors.New("no such key"), code))
		got := execwire.DecodeError(data)
		want := drpcwire.UnmarshalError(data)
		if got.Code != code || got.Code != drpcerr.Code(want) || got.Msg != want.Error() {
			t.Errorf("code %d: got %d %q, library %d %q", code, got.Code, got.Msg, drpcerr.Code(want), want.Error())
		}
	}
	for _, data := range [][]byte{nil, []byte("short")} {
		got := execwire.DecodeError(data)
		want := drpcwire.UnmarshalError(data)
		if got.Code != 0 || got.Msg != want.Error() {
			t.Errorf("%q: got %d %q, library %q", data, got.Code, got.Msg, want.Error())
		}
	}
}

// oneByte hands its bytes over one at a time, as a slow socket may.
type oneByte struct{ b []byte }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, io.EOF
	}
	p[0], o.b = o.b[0], o.b[1:]
	return 1, nil
}

// readAll reads packets until an error: the packets, and the error (nil at a
// clean end).
func readAll(next func() (execwire.Packet, error)) ([]execwire.Packet, error) {
	var out []execwire.Packet
	for len(out) < 1000 {
		p, err := next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		p.Data = append([]byte(nil), p.Data...)
		out = append(out, p)
	}
	return out, nil
}

// FuzzReadPacket holds the reader to drpc's: on any bytes, the packets
// read before either stops are the same, and it accepts nothing drpc's
// reader refuses. It must also never panic, whatever the bytes.
func FuzzReadPacket(f *testing.F) {
	var b []byte
	b = execwire.AppendPacket(b, execwire.Packet{Kind: execwire.KindInvoke, Stream: 1, Message: 1, Data: []byte(execwire.RPCExec)})
	b = execwire.AppendPacket(b, execwire.Packet{Kind: execwire.KindMessage, Stream: 1, Message: 2, Data: []byte{0xa1, 0x04, 0xf5}})
	f.Add(b, false)
	f.Add(b, true)
	split := drpcwire.AppendFrame(nil, drpcwire.Frame{Kind: drpcwire.KindMessage, ID: drpcwire.ID{Stream: 1, Message: 1}, Data: []byte("ab")})
	split = drpcwire.AppendFrame(split, drpcwire.Frame{Kind: drpcwire.KindMessage, ID: drpcwire.ID{Stream: 1, Message: 1}, Data: []byte("cd"), Done: true})
	split = drpcwire.AppendFrame(split, drpcwire.Frame{Kind: drpcwire.KindError, ID: drpcwire.ID{Stream: 1, Message: 1}, Done: true})
	f.Add(split, false)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, false)
	f.Fuzz(func(t *testing.T, data []byte, slow bool) {
		const max = 64
		var src, libSrc io.Reader = bytes.NewReader(data), bytes.NewReader(data)
		if slow {
			src, libSrc = &oneByte{data}, &oneByte{data}
		}
		rd := execwire.NewReader(src, max)
		ours, ourErr := readAll(rd.ReadPacket)
		lib := drpcwire.NewReaderWithOptions(libSrc, drpcwire.ReaderOptions{MaximumBufferSize: max})
		theirs, theirErr := readAll(func() (execwire.Packet, error) {
			p, err := lib.ReadPacket()
			return execwire.Packet{Kind: byte(p.Kind), Stream: p.ID.Stream, Message: p.ID.Message, Data: p.Data}, err
		})
		n := min(len(ours), len(theirs))
		for i := range n {
			o, l := ours[i], theirs[i]
			if o.Kind != l.Kind || o.Stream != l.Stream || o.Message != l.Message || !bytes.Equal(o.Data, l.Data) {
				t.Fatalf("packet %d: ours %+v, library's %+v", i, o, l)
			}
		}
		if len(ours) > len(theirs) {
			t.Fatalf("read %d packets where the library read %d and stopped with %v", len(ours), len(theirs), theirErr)
		}
		if len(ours) == len(theirs) && ourErr == nil && theirErr != nil {
			t.Fatalf("a clean end where the library refused: %v", theirErr)
		}
	})
}
