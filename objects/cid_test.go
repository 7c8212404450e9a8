package objects_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/ipfs/go-cid"
)

// Short is always the first objects.ShortLen characters of String.
func TestShortIsPrefixOfString(t *testing.T) {
	for i := range 2000 {
		data := []byte(fmt.Sprint("short ", i))
		for _, codec := range []uint64{objects.CodecRaw, objects.CodecDagCBOR} {
			c := objects.Sum(codec, data)
			if got, want := c.Short(), c.String()[:objects.ShortLen]; got != want {
				t.Fatalf("Short %q, String starts %q", got, want)
			}
		}
	}
	if (objects.CID{}).Short() != "" {
		t.Fatal("the zero CID's short form is not empty")
	}
}

// The binary forms this store writes are read without go-cid's parser; the
// CID is the one the parser gives (same bytes, same string), and anything
// else still goes through the parser and its checks.
func TestCIDFromBytesCanonicalFormsAsParsed(t *testing.T) {
	for i := range 200 {
		for _, codec := range []uint64{objects.CodecRaw, objects.CodecDagCBOR} {
			digest := sha256.Sum256([]byte{byte(i), byte(i >> 8)})
			b := append([]byte{0x01, byte(codec), 0x12, 0x20}, digest[:]...)
			got, err := objects.CIDFromBytes(b)
			if err != nil {
				t.Fatal(err)
			}
			want, err := cid.Cast(b)
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() || !bytes.Equal(got.Bytes(), b) || got.Codec() != codec || got.KeyString() != want.KeyString() {
				t.Fatalf("CIDFromBytes(%x) = %s (%x), want %s", b, got, got.Bytes(), want)
			}
			if again, err := objects.ParseCID(got.String()); err != nil || again != got {
				t.Fatalf("ParseCID(%s) = %v %v, want the same CID", got, again, err)
			}
		}
	}
	digest := sha256.Sum256(nil)
	for name, b := range map[string][]byte{
		"short digest":  append([]byte{0x01, 0x71, 0x12, 0x1f}, digest[:31]...),
		"truncated":     append([]byte{0x01, 0x71, 0x12, 0x20}, digest[:31]...),
		"trailing byte": append(append([]byte{0x01, 0x71, 0x12, 0x20}, digest[:]...), 0),
		"other codec":   append([]byte{0x01, 0x70, 0x12, 0x20}, digest[:]...),
		"other hash":    append([]byte{0x01, 0x71, 0x13, 0x20}, digest[:]...),
		"version 0":     append([]byte{0x12, 0x20}, digest[:]...),
	} {
		if c, err := objects.CIDFromBytes(b); !errors.Is(err, objects.ErrBadCID) {
			t.Errorf("%s: CIDFromBytes = %v, %v; want ErrBadCID", name, c, err)
		}
	}
}

// CIDFromKeyString accepts and returns exactly what CIDFromBytes does for
// the same bytes.
func TestCIDFromKeyStringAsFromBytes(t *testing.T) {
	var inputs [][]byte
	for _, codec := range []uint64{objects.CodecRaw, objects.CodecDagCBOR} {
		c := objects.Sum(codec, []byte("key string"))
		b := c.Bytes()
		inputs = append(inputs, b, b[:35], append(bytes.Clone(b), 0))
		for i := range 4 {
			d := bytes.Clone(b)
			d[i] ^= 0x40
			inputs = append(inputs, d)
		}
	}
	inputs = append(inputs, nil, []byte{1}, bytes.Repeat([]byte{0xff}, 36))
	for _, in := range inputs {
		want, werr := objects.CIDFromBytes(in)
		got, gerr := objects.CIDFromKeyString(string(in))
		if (werr == nil) != (gerr == nil) || got != want {
			t.Fatalf("%x: CIDFromKeyString %v %v, CIDFromBytes %v %v", in, got, gerr, want, werr)
		}
	}
}

// AppendShort appends what Short returns, the zero CID nothing.
func TestAppendShort(t *testing.T) {
	for _, c := range []objects.CID{{}, objects.EmptyTreeCID, objects.NewValue([]byte("x")).CID} {
		if got := string(c.AppendShort([]byte("> "))); got != "> "+c.Short() {
			t.Errorf("AppendShort of %s: %q, want %q", c, got, "> "+c.Short())
		}
	}
}
