package rowdiff

import (
	"encoding/binary"
	"testing"
)

// FuzzParsePage: a crafted page is an error or a parse, never a panic, and
// what it names stays inside the page's bounds.
func FuzzParsePage(f *testing.F) {
	leaf := make([]byte, 512)
	leaf[0] = leafTable
	binary.BigEndian.PutUint16(leaf[3:], 1)
	binary.BigEndian.PutUint16(leaf[8:], 500)
	copy(leaf[500:], []byte{0x05, 0x81, 0x00, 1, 2, 3})
	f.Add(leaf, int64(2), 512)
	interior := make([]byte, 512)
	interior[0] = interiorIndex
	binary.BigEndian.PutUint16(interior[3:], 1)
	binary.BigEndian.PutUint32(interior[8:], 7)
	binary.BigEndian.PutUint16(interior[12:], 400)
	copy(interior[400:], []byte{0, 0, 0, 3, 0x8f, 0xff, 0xff, 0x7f})
	f.Add(interior, int64(3), 512)
	f.Add(make([]byte, 4096), int64(1), 4000)
	f.Fuzz(func(t *testing.T, data []byte, n int64, usable int) {
		p, err := parsePage(data, n, usable)
		if err != nil {
			return
		}
		if p.typ == leafTable && len(p.children) != 0 {
			t.Fatal("a leaf with children")
		}
	})
}

func TestLocalPayload(t *testing.T) {
	// The file format's examples for a 4096-byte page: a table leaf keeps
	// up to 4061 bytes, an index cell up to 1002.
	for _, c := range []struct {
		size  uint64
		leaf  bool
		local uint64
	}{{4061, true, 4061}, {4062, true, 489 + (4062-489)%4092}, {1002, false, 1002}, {20000, true, 489 + (20000-489)%4092}} {
		want := c.local
		if want > 4061 && c.leaf {
			want = 489
		}
		if got := localPayload(c.size, 4096, c.leaf); got != want {
			t.Errorf("localPayload(%d, leaf %v) = %d, want %d", c.size, c.leaf, got, want)
		}
	}
}

// FuzzSameRecord: two crafted cells compare or are refused, never a
// panic; a cell that decodes reads the same as itself, and the comparison
// does not depend on the order of the two.
func FuzzSameRecord(f *testing.F) {
	// payload size 6, rowid 1, header of 3 bytes: an integer 1 byte wide, a
	// 1-byte text; then 0x2a and "x".
	f.Add([]byte{6, 1, 3, 1, 15, 0x2a, 'x'}, []byte{6, 1, 3, 1, 15, 0x2b, 'x'}, 2, true)
	f.Add([]byte{4, 1, 2, 9, 2, 0x01}, []byte{10, 1, 2, 7, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0}, 1, true)
	f.Fuzz(func(t *testing.T, x, y []byte, n int, realFirst bool) {
		if n < 0 || n > 64 {
			return
		}
		real := make([]bool, n)
		if n > 0 {
			real[0] = realFirst
		}
		same, ok := sameRecord(x, y, real)
		back, okBack := sameRecord(y, x, real)
		if ok != okBack || same != back {
			t.Fatalf("sameRecord(x, y) = %v, %v; sameRecord(y, x) = %v, %v", same, ok, back, okBack)
		}
		if self, ok := sameRecord(x, x, real); ok && !self {
			t.Fatalf("a record differs from itself: %x", x)
		}
	})
}
