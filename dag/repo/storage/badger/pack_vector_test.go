package badger

import (
	"bytes"
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
	if got, want := hex.EncodeToString(encodePointer(id, 5, 5)), hex.EncodeToString(id)+"0505"; got != want {
		t.Fatalf("pointer %s, want %s", got, want)
	}
	if _, off, size, ok := decodePointer(encodePointer(id, 300, 4096)); !ok || off != 300 || size != 4096 {
		t.Fatal("pointer does not round-trip")
	}
	// Malformed heads and pointers are refused, not read past.
	for _, bad := range [][]byte{nil, {2}, {1, 0}, {1, 5, 36}, rec[:10]} {
		if _, _, err := decodePackHead(bad); err == nil {
			t.Fatalf("head %x accepted", bad)
		}
	}
	if _, _, _, ok := decodePointer(append(bytes.Clone(id), 0x80)); ok {
		t.Fatal("truncated pointer accepted")
	}
}
