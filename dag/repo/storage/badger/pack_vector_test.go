package badger

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

// TestPackVector pins a pack record's head and a pack pointer
// (docs/format.md, "Packs"); the ZSTD frame after the head is any frame
// that decompresses to the members' bytes.
func TestPackVector(t *testing.T) {
	a, b := objects.NewValue([]byte("hello")), objects.NewValue([]byte("world"))
	rec := encodePack([]objects.CID{a.CID, b.CID}, [][]byte{a.Data, b.Data})
	const head = "0102" +
		"24" + "01551220" + "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" + "05" +
		"24" + "01551220" + "486ea46224d1bb4fb680f34f7c9ad96a8f24ec88be73ea8e5a6c65260e9cb8a7" + "05"
	if got := hex.EncodeToString(rec); got[:len(head)] != head {
		t.Fatalf("pack head\n got %s\nwant %s", got[:len(head)], head)
	}
	ms, plain, err := decodePack(rec)
	if err != nil || len(ms) != 2 || ms[1].off != 5 || string(plain) != "helloworld" {
		t.Fatalf("decodePack: %v %+v %q", err, ms, plain)
	}
	id := bytes.Repeat([]byte{0xab}, 32)
	// A short pointer (user-meta 02), as Pack writes it: offset, size, the
	// id's first 4 bytes.
	if got, want := hex.EncodeToString(encodePointer(id, 5, 5)), "0505abababab"; got != want {
		t.Fatalf("pointer %s, want %s", got, want)
	}
	if ref, off, size, ok := decodePointer(metaPackedShort, encodePointer(id, 300, 4096)); !ok || off != 300 || size != 4096 || !bytes.Equal(ref, id[:4]) {
		t.Fatal("short pointer does not round-trip")
	}
	// A long pointer (user-meta 01), as earlier builds wrote it: the whole
	// id, offset, size.
	long := append(bytes.Clone(id), 0xac, 0x02, 0x80, 0x20)
	if ref, off, size, ok := decodePointer(metaPacked, long); !ok || off != 300 || size != 4096 || !bytes.Equal(ref, id) {
		t.Fatalf("long pointer read as %x %d %d %v", ref, off, size, ok)
	}
	// Malformed heads and pointers are refused, not read past.
	for _, bad := range [][]byte{nil, {2}, {1, 0}, {1, 5, 36}, rec[:10]} {
		if _, _, err := decodePackHead(bad); err == nil {
			t.Fatalf("head %x accepted", bad)
		}
	}
	for _, bad := range []struct {
		meta byte
		v    []byte
	}{
		{metaPacked, append(bytes.Clone(id), 0x80)},                             // truncated
		{metaPacked, append(bytes.Clone(id), 5, 5, 0)},                          // bytes after the size
		{metaPackedShort, []byte{0x80}},                                         // truncated
		{metaPackedShort, append([]byte{5, 5}, bytes.Repeat([]byte{1}, 33)...)}, // a prefix longer than an id
		{metaPackedShort, []byte{0xff, 0xff, 0xff, 0x7f, 5}},                    // an offset past any pack
		{0, []byte{5, 5}}, // not a pointer
	} {
		if _, _, _, ok := decodePointer(bad.meta, bad.v); ok {
			t.Fatalf("pointer %02x %x accepted", bad.meta, bad.v)
		}
	}
}

// FuzzDecodePointer: a pointer read from a store's files is hostile: any
// bytes under either user-meta byte decode without a panic, and what
// decodes names offsets and sizes within a pack's bounds and, for a short
// pointer, re-encodes to the same bytes.
func FuzzDecodePointer(f *testing.F) {
	id := bytes.Repeat([]byte{0xab}, 32)
	f.Add(metaPackedShort, encodePointer(id, 5, 5))
	f.Add(metaPacked, encodeLongPointer(id, 300, 4096))
	f.Add(byte(0), []byte{5, 5})
	f.Fuzz(func(t *testing.T, meta byte, v []byte) {
		ref, off, size, ok := decodePointer(meta, v)
		if !ok {
			return
		}
		if off < 0 || size < 0 || off > maxPackPlain || size > maxPackPlain || len(ref) > 32 {
			t.Fatalf("decoded %x %d %d from %02x %x", ref, off, size, meta, v)
		}
		if meta == metaPackedShort {
			again := binary.AppendUvarint(binary.AppendUvarint(nil, uint64(off)), uint64(size))
			if !bytes.Equal(append(again, ref...), v) && len(again)+len(ref) == len(v) {
				t.Fatalf("short pointer %x decoded to %x %d %d", v, ref, off, size)
			}
		}
	})
}
