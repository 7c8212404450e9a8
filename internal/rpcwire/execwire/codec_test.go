package execwire_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/internal/rpcwire"
	"github.com/agentstate/agentstate/internal/rpcwire/execwire"
)

func randBytes(r *rand.Rand, max int) []byte {
	if r.IntN(4) == 0 {
		return nil
	}
	b := make([]byte, r.IntN(max))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func randStrings(r *rand.Rand) []string {
	if r.IntN(5) == 0 {
		return nil
	}
	out := make([]string, r.IntN(6))
	for i := range out {
		out[i] = strings.Repeat("é", r.IntN(3)) + string(randBytes(r, 300))
	}
	return out
}

func randInt(r *rand.Rand) int {
	switch r.IntN(5) {
	case 0:
		return 0
	case 1:
		return -r.IntN(1 << 20)
	case 2:
		return math.MaxInt64 - r.IntN(3)
	case 3:
		return math.MinInt64 + r.IntN(3)
	}
	return r.IntN(70000)
}

// The hand codec writes exactly the library's bytes, and reads back what
// the library writes.
func TestExecCodecMatchesLibrary(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := range 5000 {
		s := execwire.ExecStart{Args: randStrings(r), Dir: string(randBytes(r, 40)), Env: randStrings(r), StdoutTTY: r.IntN(2) == 0, Width: randInt(r)}
		want, err := rpcwire.Encoding.Marshal(&s)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.AppendCBOR(nil); !bytes.Equal(got, want) {
			t.Fatalf("ExecStart %d %+v:\nhand    %x\nlibrary %x", i, s, got, want)
		}
		in := execwire.ExecIn{Data: randBytes(r, 70000), EOF: r.IntN(2) == 0}
		if want, _ = rpcwire.Encoding.Marshal(&in); !bytes.Equal(in.AppendCBOR(nil), want) {
			t.Fatalf("ExecIn %d: hand %x library %x", i, in.AppendCBOR(nil), want)
		}
		out := execwire.ExecOut{Stream: randInt(r), Data: randBytes(r, 70000), Want: randInt(r), Done: r.IntN(2) == 0, Code: randInt(r)}
		if r.IntN(2) == 0 {
			out.Pager = strings.ToValidUTF8(string(randBytes(r, 40)), "?")
		}
		enc, err := rpcwire.Encoding.Marshal(&out)
		if err != nil {
			t.Fatal(err)
		}
		got, err := execwire.DecodeExecOut(enc)
		if err != nil {
			t.Fatalf("ExecOut %d: %v (%x)", i, err, enc)
		}
		if len(out.Data) == 0 {
			out.Data = nil
		}
		if !reflect.DeepEqual(got, out) {
			t.Fatalf("ExecOut %d: hand decoded %+v, want %+v", i, got, out)
		}
	}
}

// FuzzDecodeExecOut: the hand decoder never panics and is never more
// permissive than the library: what it accepts, the library accepts as the
// same message.
func FuzzDecodeExecOut(f *testing.F) {
	for _, m := range []execwire.ExecOut{{}, {Stream: 1, Data: []byte("hi\n")}, {Want: 4096}, {Done: true, Code: 3}, {Stream: 2, Data: bytes.Repeat([]byte{0}, 300)}, {Pager: "less -FRX"}} {
		b, _ := rpcwire.Encoding.Marshal(&m)
		f.Add(b)
	}
	f.Add([]byte{0xa1, 0x04, 0xf4})
	f.Add([]byte{0xbf, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := execwire.DecodeExecOut(b)
		if err != nil {
			return
		}
		var lib execwire.ExecOut
		if lerr := rpcwire.Encoding.Unmarshal(b, &lib); lerr != nil {
			t.Fatalf("hand decoder accepted %x, the library refuses it: %v", b, lerr)
		}
		if len(lib.Data) == 0 {
			lib.Data = nil
		}
		if len(got.Data) == 0 {
			got.Data = nil
		}
		if !reflect.DeepEqual(got, lib) {
			t.Fatalf("%x: hand %+v, library %+v", b, got, lib)
		}
	})
}
