package httpstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/agentstate/agentstate/walrus"
)

// The test vector printed in docs/walrus.md: "hello, walrus" (13 bytes)
// split into parts of 8 and 5 bytes whose blob ids are 32 bytes of 0x01 and
// 32 bytes of 0x02.
const manifestVector = "894147534d414e0a" + // magic
	"01" + // version
	"000000000000000d" + // total size 13
	"1855f79aa7661ea335c0c460fa000cd5fdc2f4bd2759762c3474a8f13cb8ad1b" + // sha256("hello, walrus")
	"00000002" + // two parts
	"0101010101010101010101010101010101010101010101010101010101010101" + "0000000000000008" +
	"0202020202020202020202020202020202020202020202020202020202020202" + "0000000000000005"

func vectorManifest() *Manifest {
	var a, b [32]byte
	for i := range a {
		a[i], b[i] = 1, 2
	}
	return &Manifest{
		Size:   13,
		SHA256: sha256.Sum256([]byte("hello, walrus")),
		Parts:  []Part{{walrus.BlobIDFromBytes(a), 8}, {walrus.BlobIDFromBytes(b), 5}},
	}
}

func TestManifestVector(t *testing.T) {
	want, _ := hex.DecodeString(manifestVector)
	got, err := vectorManifest().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding\n got %x\nwant %x", got, want)
	}
	m, err := DecodeManifest(want)
	if err != nil {
		t.Fatal(err)
	}
	if m.Parts[0].ID != "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE" || m.Parts[1].Size != 5 || m.Size != 13 {
		t.Fatalf("decoded %+v", m)
	}
	again, _ := m.MarshalBinary()
	if !bytes.Equal(again, want) {
		t.Fatal("decode then encode changed the bytes")
	}
}

func TestManifestRejects(t *testing.T) {
	good, _ := hex.DecodeString(manifestVector)
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := map[string][]byte{
		"empty":          nil,
		"magic only":     good[:8],
		"bad magic":      mutate(func(b []byte) []byte { b[0] = 0x88; return b }),
		"version 0":      mutate(func(b []byte) []byte { b[8] = 0; return b }),
		"version 2":      mutate(func(b []byte) []byte { b[8] = 2; return b }),
		"zero parts":     mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[49:], 0); return b[:53] }),
		"count too high": mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[49:], 3); return b }),
		"count huge":     mutate(func(b []byte) []byte { binary.BigEndian.PutUint32(b[49:], 1<<31); return b }),
		"trailing byte":  append(bytes.Clone(good), 0),
		"truncated":      good[:len(good)-1],
		"sum too small":  mutate(func(b []byte) []byte { b[len(b)-1] = 4; return b }),
		"sum too large":  mutate(func(b []byte) []byte { b[len(b)-1] = 6; return b }),
		"zero part":      mutate(func(b []byte) []byte { b[len(b)-1] = 0; b[16] = 8; return b }),
		"huge total":     mutate(func(b []byte) []byte { b[9] = 0xff; return b }),
		"overflow parts": mutate(func(b []byte) []byte {
			binary.BigEndian.PutUint64(b[85:], 1<<62)
			binary.BigEndian.PutUint64(b[133-8:], 1<<62)
			return b
		}),
	}
	for name, b := range cases {
		if _, err := DecodeManifest(b); !errors.Is(err, ErrBadManifest) {
			t.Errorf("%s: DecodeManifest = %v, want ErrBadManifest", name, err)
		}
	}
	for name, m := range map[string]*Manifest{
		"no parts":  {Size: 0},
		"bad id":    {Size: 1, Parts: []Part{{"x", 1}}},
		"sum wrong": {Size: 2, Parts: []Part{{vectorManifest().Parts[0].ID, 1}}},
		"negative":  {Size: -1, Parts: []Part{{vectorManifest().Parts[0].ID, 1}}},
	} {
		if _, err := m.MarshalBinary(); !errors.Is(err, ErrBadManifest) {
			t.Errorf("%s: MarshalBinary = %v, want ErrBadManifest", name, err)
		}
	}
}

func FuzzDecodeManifest(f *testing.F) {
	good, _ := hex.DecodeString(manifestVector)
	f.Add(good)
	f.Add(good[:60])
	f.Add(ManifestMagic[:])
	f.Add([]byte("not a manifest"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeManifest(b)
		if err != nil {
			if !errors.Is(err, ErrBadManifest) {
				t.Fatalf("error %v is not ErrBadManifest", err)
			}
			return
		}
		again, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded manifest does not encode: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("manifest is not canonical:\n in  %x\n out %x", b, again)
		}
	})
}
