package objects_test

import (
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/ipfs/go-cid"
	mbase "github.com/multiformats/go-multibase"
)

// goCidAccepts is what the store accepted while it parsed CIDs with go-cid:
// go-cid's parse, then CIDv1, sha2-256 of 32 bytes, raw or dag-cbor.
func goCidAccepts(c cid.Cid, err error) bool {
	if err != nil {
		return false
	}
	p := c.Prefix()
	return p.Version == 1 && p.MhType == 0x12 && p.MhLength == 32 && (p.Codec == objects.CodecRaw || p.Codec == objects.CodecDagCBOR)
}

// cidInputs are binary CIDs of every kind a reader may meet: the two this
// store writes, and others (version 0, other codecs and hashes, digests of
// other lengths, non-minimal and overlong varints, cut short, trailing
// bytes), plus random bytes around them.
func cidInputs() [][]byte {
	d := sha256.Sum256([]byte("cid"))
	raw := append([]byte{0x01, 0x55, 0x12, 0x20}, d[:]...)
	cbor := append([]byte{0x01, 0x71, 0x12, 0x20}, d[:]...)
	in := [][]byte{
		raw, cbor,
		append([]byte{0x12, 0x20}, d[:]...),                              // version 0
		append([]byte{0x01, 0x70, 0x12, 0x20}, d[:]...),                  // dag-pb
		append([]byte{0x01, 0x55, 0x13, 0x40}, append(d[:], d[:]...)...), // sha2-512
		append([]byte{0x01, 0x55, 0x12, 0x1f}, d[:31]...),                // short digest
		append([]byte{0x01, 0x55, 0x12, 0x20}, d[:31]...),                // cut short
		append(append([]byte{}, cbor...), 0),                             // trailing byte
		append([]byte{0x81, 0x00, 0x71, 0x12, 0x20}, d[:]...),            // non-minimal version
		append([]byte{0x01, 0xf1, 0x00, 0x12, 0x20}, d[:]...),            // non-minimal codec
		append([]byte{0x01, 0x71, 0x92, 0x00, 0x20}, d[:]...),            // non-minimal hash code
		append([]byte{0x02, 0x71, 0x12, 0x20}, d[:]...),                  // version 2
		append([]byte{0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}, d[:]...),
		{}, {0x01}, {0x01, 0x71}, {0x01, 0x71, 0x12}, {0x12}, {0x12, 0x20},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := append([]byte{}, cbor...)
		switch r.IntN(4) {
		case 0:
			b[r.IntN(4)] = byte(r.IntN(256))
		case 1:
			b = b[:r.IntN(len(b))]
		case 2:
			b = append(b, byte(r.IntN(256)))
		default:
			b = make([]byte, r.IntN(40))
			for i := range b {
				b[i] = byte(r.IntN(256))
			}
		}
		in = append(in, b)
	}
	return in
}

// CIDs are parsed without go-cid (whose multihash registry cost every
// command's start); what is accepted, and the CID it names, are what
// go-cid's parser and the store's checks gave, for binary forms and for
// strings in every multibase.
func TestCIDParseAsGoCid(t *testing.T) {
	for _, b := range cidInputs() {
		got, err := objects.CIDFromBytes(b)
		want, werr := cid.Cast(b)
		if ok := goCidAccepts(want, werr); ok != (err == nil) {
			t.Fatalf("CIDFromBytes(%x): error %v; go-cid: %v, accepted %v", b, err, werr, ok)
		} else if !ok {
			if !errors.Is(err, objects.ErrBadCID) {
				t.Fatalf("CIDFromBytes(%x): %v, not ErrBadCID", b, err)
			}
			continue
		}
		if got.String() != want.String() || got.KeyString() != want.KeyString() || got.Codec() != want.Prefix().Codec {
			t.Fatalf("CIDFromBytes(%x) = %s, go-cid %s", b, got, want)
		}
		if len(b) > 0 {
			// A frame: the CID, then a block.
			c, n, err := objects.ReadCID(append(append([]byte{}, b...), "block"...))
			if err != nil || n != len(b) || c != got {
				t.Fatalf("ReadCID(%x+block) = %s, %d, %v; want %s, %d", b, c, n, err, got, len(b))
			}
		}
	}
	for _, b := range cidInputs()[:200] {
		for _, enc := range []mbase.Encoding{mbase.Base32, mbase.Base32Upper, mbase.Base58BTC, mbase.Base64, mbase.Base16, mbase.Base36} {
			s, err := mbase.Encode(enc, b)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{s, s[:len(s)/2], s + "x"} {
				got, err := objects.ParseCID(s)
				want, werr := cid.Decode(s)
				if ok := goCidAccepts(want, werr); ok != (err == nil) {
					t.Fatalf("ParseCID(%q): error %v; go-cid: %v, accepted %v", s, err, werr, ok)
				} else if !ok {
					if !errors.Is(err, objects.ErrBadCID) {
						t.Fatalf("ParseCID(%q): %v, not ErrBadCID", s, err)
					}
					continue
				}
				if got.String() != want.String() || got.KeyString() != want.KeyString() {
					t.Fatalf("ParseCID(%q) = %s, go-cid %s", s, got, want)
				}
			}
		}
	}
	for _, s := range []string{"", "b", "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG", "bafy", "not a cid"} {
		if _, err := objects.ParseCID(s); !errors.Is(err, objects.ErrBadCID) {
			t.Fatalf("ParseCID(%q): %v, not ErrBadCID", s, err)
		}
	}
}
