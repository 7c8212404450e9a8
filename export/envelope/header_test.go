package envelope

import (
	"bytes"
	"context"
	"errors"
	"io"
	"reflect"
	"testing"
)

func sampleHeaders() []Header {
	base := Header{Version: Version1, CipherID: CipherAES256GCMv1, ChunkSize: DefaultChunkSize, KeyID: testKey().ID()}
	for i := range base.Salt {
		base.Salt[i] = byte(0xc0 + i)
	}
	random := base
	random.Randomized = true
	random.ChunkSize = MinChunkSize
	kdf := base
	kdf.KDF = &KDFHeader{Params: DefaultKDFParams(), Salt: bytes.Repeat([]byte{7}, MinKDFSaltSize)}
	other := base
	other.CipherID = "seal-tibe.v1_x"
	other.ChunkSize = MaxChunkSize
	other.KDF = &KDFHeader{Params: KDFParams{Time: MaxKDFTime, MemoryKiB: MaxKDFMemoryKiB, Threads: 255}, Salt: make([]byte, MaxKDFSaltSize)}
	return []Header{base, random, kdf, other}
}

func TestHeaderRoundTrip(t *testing.T) {
	for _, h := range sampleHeaders() {
		raw, err := h.MarshalBinary()
		if err != nil {
			t.Fatalf("%+v: %v", h, err)
		}
		if len(raw) != h.Size() {
			t.Fatalf("encoded %d bytes, Size says %d", len(raw), h.Size())
		}
		got, n, err := ParseHeader(append(bytes.Clone(raw), "trailing chunk bytes"...))
		if err != nil || n != len(raw) {
			t.Fatalf("ParseHeader: n=%d err=%v", n, err)
		}
		if !reflect.DeepEqual(got, h) {
			t.Fatalf("round trip:\n got  %+v\n want %+v", got, h)
		}
		// ReadHeader consumes exactly the header.
		r := bytes.NewReader(append(bytes.Clone(raw), 0xEE))
		_, rawRead, err := ReadHeader(context.Background(), r)
		if err != nil || !bytes.Equal(rawRead, raw) {
			t.Fatalf("ReadHeader: %v", err)
		}
		if rest, _ := io.ReadAll(r); !bytes.Equal(rest, []byte{0xEE}) {
			t.Fatalf("ReadHeader read past the header: %d bytes left, want 1", len(rest))
		}
	}
}

// The byte layout of docs/envelope.md, checked field by field.
func TestHeaderLayout(t *testing.T) {
	h := sampleHeaders()[2] // with a KDF block
	raw, err := h.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte("AGSENV")
	want = append(want, 0x01, 0x02, 14)
	want = append(want, "aes-256-gcm-v1"...)
	want = append(want, 0x00, 0x01, 0x00, 0x00) // 65536
	want = append(want, h.KeyID[:]...)
	want = append(want, h.Salt[:]...)
	want = append(want, 0x01, 0, 0, 0, 3, 0, 1, 0, 0, 2, 16) // argon2id, t=3, m=65536 KiB, p=2, salt 16
	want = append(want, bytes.Repeat([]byte{7}, 16)...)
	if !bytes.Equal(raw, want) {
		t.Fatalf("header bytes\n got  %x\n want %x", raw, want)
	}
	if len(raw) != 102 {
		t.Fatalf("KDF header is %d bytes, docs say 102", len(raw))
	}
	h.KDF = nil
	if h.Size() != 75 {
		t.Fatalf("key-file header is %d bytes, docs say 75", h.Size())
	}
}

func TestHeaderRejects(t *testing.T) {
	good, err := sampleHeaders()[2].MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	// Offsets in the KDF header: 6 version, 7 flags, 8 id length, 9..22 id,
	// 23..26 chunk size, 27..42 key id, 43..74 salt, 75 KDF id, 76..79 time,
	// 80..83 memory, 84 threads, 85 salt length.
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	cases := map[string][]byte{
		"magic":              mutate(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version 0":          mutate(func(b []byte) []byte { b[6] = 0; return b }),
		"version 2":          mutate(func(b []byte) []byte { b[6] = 2; return b }),
		"unknown flag":       mutate(func(b []byte) []byte { b[7] |= 0x04; return b }),
		"id length 0":        mutate(func(b []byte) []byte { b[8] = 0; return b }),
		"id length 33":       mutate(func(b []byte) []byte { b[8] = 33; return b }),
		"upper-case id":      mutate(func(b []byte) []byte { b[9] = 'A'; return b }),
		"NUL in id":          mutate(func(b []byte) []byte { b[12] = 0; return b }),
		"chunk size 0":       mutate(func(b []byte) []byte { copy(b[23:27], []byte{0, 0, 0, 0}); return b }),
		"chunk size 255":     mutate(func(b []byte) []byte { copy(b[23:27], []byte{0, 0, 0, 255}); return b }),
		"chunk size 16MiB+1": mutate(func(b []byte) []byte { copy(b[23:27], []byte{1, 0, 0, 1}); return b }),
		"chunk size 4GiB-1":  mutate(func(b []byte) []byte { copy(b[23:27], []byte{255, 255, 255, 255}); return b }),
		"KDF id 2":           mutate(func(b []byte) []byte { b[75] = 2; return b }),
		"KDF time 0":         mutate(func(b []byte) []byte { copy(b[76:80], []byte{0, 0, 0, 0}); return b }),
		"KDF memory huge":    mutate(func(b []byte) []byte { copy(b[80:84], []byte{255, 0, 0, 0}); return b }),
		"KDF threads 0":      mutate(func(b []byte) []byte { b[84] = 0; return b }),
		"KDF salt 15":        mutate(func(b []byte) []byte { b[85] = 15; return b }),
		"KDF salt 65":        mutate(func(b []byte) []byte { b[85] = 65; return b }),
	}
	for name, b := range cases {
		if _, _, err := ParseHeader(b); !errors.Is(err, ErrBadHeader) {
			t.Errorf("%s: %v, want ErrBadHeader", name, err)
		}
	}
	for n := 0; n < len(good); n++ {
		if _, _, err := ParseHeader(good[:n]); !errors.Is(err, ErrTruncated) {
			t.Errorf("header cut to %d bytes: %v, want ErrTruncated", n, err)
		}
	}
	// MarshalBinary refuses what ParseHeader refuses.
	for _, h := range []Header{
		{Version: 2, CipherID: CipherAES256GCMv1, ChunkSize: DefaultChunkSize},
		{Version: Version1, CipherID: "", ChunkSize: DefaultChunkSize},
		{Version: Version1, CipherID: CipherAES256GCMv1, ChunkSize: 1},
		{Version: Version1, CipherID: CipherAES256GCMv1, ChunkSize: DefaultChunkSize, KDF: &KDFHeader{Params: DefaultKDFParams(), Salt: []byte("short")}},
	} {
		if _, err := h.MarshalBinary(); !errors.Is(err, ErrBadHeader) {
			t.Errorf("MarshalBinary(%+v): %v, want ErrBadHeader", h, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := ReadHeader(ctx, bytes.NewReader(good)); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadHeader on a cancelled context: %v", err)
	}
}
