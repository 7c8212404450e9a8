package objects_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

func FuzzDecodeNode(f *testing.F) {
	bs := memstore.New()
	m := map[string]string{}
	for i := range 100 {
		m[keyN(i)] = keyN(i)
	}
	build(f, bs, m, keysOf(m))
	for c := range bs.AllCIDs(context.Background()) {
		if c.Codec() == objects.CodecDagCBOR {
			data, _ := bs.Get(context.Background(), c)
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// Never a panic; and the decoder takes canonical bytes only: what
		// it accepts encodes back to exactly those bytes.
		again, err := objects.ReencodeNodeForTest(data)
		if err == nil && !bytes.Equal(again, data) {
			t.Fatalf("accepted a node that encodes to other bytes:\n in  %x\n out %x", data, again)
		}
	})
}

// Each deviation from the canonical bytes of a tree node is refused: a head
// in a longer form than it needs (the entry count, a key's length, a prefix
// length, the CID tag), a prefix shorter than the one the keys share, a
// CID with a byte past its digest. Only the bytes differ: each decodes to
// the same node as the canonical form.
func TestDecodeNodeRefusesNonCanonicalBytes(t *testing.T) {
	val := objects.NewValue([]byte("v")).CID
	good := objects.EncodeNodeForTest(objects.CID{}, []string{"memory/a.md", "memory/b.md"}, val)
	if err := objects.DecodeNodeForTest(good); err != nil {
		t.Fatal(err)
	}
	// The canonical bytes, in order: a1 61 65 82 (map 2, "e", array 2), then
	// per entry a4 61 6b 4b/42 <suffix> 61 70 00/07 61 74 f6 61 76 d8 2a 58 25 00 <cid>.
	at := func(sub []byte, n int) int {
		t.Helper()
		i := -1
		for range n {
			j := bytes.Index(good[i+1:], sub)
			if j < 0 {
				t.Fatalf("no %x in %x", sub, good)
			}
			i += 1 + j
		}
		return i
	}
	splice := func(i, n int, with ...byte) []byte {
		return append(append(append([]byte{}, good[:i]...), with...), good[i+n:]...)
	}
	second := at([]byte{0x61, 0x6b}, 2) + 2 // the second entry's key head
	cases := map[string][]byte{
		"entry count in two bytes":   splice(3, 1, 0x98, 0x02),
		"key length in two bytes":    splice(second, 1, 0x58, 0x04),
		"prefix length in two bytes": splice(at([]byte{0x61, 0x70, 0x07}, 1)+2, 1, 0x18, 0x07),
		"CID tag in three bytes":     splice(at([]byte{0xd8, 0x2a}, 1), 2, 0xd9, 0x00, 0x2a),
	}
	// The shorter prefix: the second key written as "/b.md" after 6 shared
	// bytes ("memory"), where the keys share 7 ("memory/").
	cases["prefix shorter than shared"] = func() []byte {
		b := splice(second, 5, append([]byte{0x45}, "/b.md"...)...)
		p := bytes.Index(b[second:], []byte{0x61, 0x70, 0x07}) + second + 2
		b[p] = 0x06
		return b
	}()
	// The longer CID: one byte more after the digest, the byte string's
	// length saying so.
	cases["CID with a byte past its hash"] = func() []byte {
		i := at([]byte{0x58, 0x25, 0x00}, 1)
		b := append([]byte{}, good[:i]...)
		b = append(b, 0x58, 0x26, 0x00)
		b = append(b, good[i+3:i+3+36]...)
		b = append(b, 0x00)
		return append(b, good[i+3+36:]...)
	}()
	for name, data := range cases {
		if bytes.Equal(data, good) {
			t.Fatalf("%s: the bytes did not change", name)
		}
		if err := objects.DecodeNodeForTest(data); err == nil {
			t.Errorf("%s: accepted %x", name, data)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
