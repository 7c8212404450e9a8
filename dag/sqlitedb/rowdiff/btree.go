package rowdiff

import (
	"encoding/binary"
	"fmt"

	"github.com/agentstate/agentstate/dag/sqlitedb"
)

// The b-tree page reading here is the least that finds which rows changed
// without reading a whole database: a page's type, its cell pointers, the
// child page numbers of interior pages, the rowids of table leaf cells,
// the first overflow page of a cell whose payload spills, and a table leaf
// cell's bytes as they are (compared between versions, never decoded). SQLite (through
// modernc.org/sqlite and zombiezen.com/go/sqlite) reads rows by key but
// has no API that says which b-tree a page belongs to or which rows a page
// holds, short of the dbstat virtual table, which walks every page of every
// b-tree it reports: the very cost this package exists to avoid. Every
// value read is bounds-checked; a malformed page is an error wrapping
// sqlitedb.ErrCorrupt, never a panic (FuzzParsePage).

// Page types (the first byte of a b-tree page's header).
const (
	interiorIndex = 0x02
	interiorTable = 0x05
	leafIndex     = 0x0a
	leafTable     = 0x0d
)

// page is what parsePage learns of one b-tree page.
type page struct {
	typ      byte
	children []uint32 // interior pages: the child page numbers, the right-most last
	rowids   []int64  // table leaf pages: the rowid of each cell
	overflow []uint32 // the first overflow page of each cell that spills
	keys     []int64  // interior table pages: each cell's rowid key (children[i] holds rowids <= keys[i])
	rowOver  []uint32 // table leaf pages: each cell's first overflow page, 0 for none
	// cells, of table leaf pages: each cell's bytes (payload size, rowid,
	// the payload kept on the page), nil for a cell whose payload spills or
	// that runs past the page. Two versions' cells of one rowid with the
	// same bytes hold the same row (the schema and text encoding the same).
	cells [][]byte
}

func corruptf(format string, a ...any) error {
	return fmt.Errorf("%w: %s", sqlitedb.ErrCorrupt, fmt.Sprintf(format, a...))
}

// varint decodes a SQLite varint (1 to 9 bytes, big-endian, 7 bits a byte
// and 8 in the ninth) at b[0:].
func varint(b []byte) (uint64, int, bool) {
	var v uint64
	for i := 0; i < 9; i++ {
		if i >= len(b) {
			return 0, 0, false
		}
		if i == 8 {
			return v<<8 | uint64(b[i]), 9, true
		}
		v = v<<7 | uint64(b[i]&0x7f)
		if b[i]&0x80 == 0 {
			return v, i + 1, true
		}
	}
	return 0, 0, false
}

// parsePage reads page number n (data is its bytes; usable is the page size
// less the header's reserved bytes) as a b-tree page.
func parsePage(data []byte, n int64, usable int) (*page, error) {
	hdr := 0
	if n == 1 {
		hdr = sqlitedb.HeaderSize
	}
	if usable < 480 || usable > len(data) || len(data) < hdr+12 {
		return nil, corruptf("page %d: %d usable bytes of %d", n, usable, len(data))
	}
	p := &page{typ: data[hdr]}
	hlen := 8
	switch p.typ {
	case interiorIndex, interiorTable:
		hlen = 12
	case leafIndex, leafTable:
	default:
		return nil, corruptf("page %d is not a b-tree page (type 0x%02x)", n, p.typ)
	}
	cells := int(binary.BigEndian.Uint16(data[hdr+3:]))
	ptrs := hdr + hlen
	if ptrs+2*cells > usable {
		return nil, corruptf("page %d: %d cells do not fit", n, cells)
	}
	for i := 0; i < cells; i++ {
		off := int(binary.BigEndian.Uint16(data[ptrs+2*i:]))
		if off < ptrs+2*cells || off >= usable {
			return nil, corruptf("page %d: cell %d at offset %d is outside the page", n, i, off)
		}
		c := data[off:usable]
		whole := c
		switch p.typ {
		case interiorTable:
			if len(c) < 4 {
				return nil, corruptf("page %d: cell %d is truncated", n, i)
			}
			p.children = append(p.children, binary.BigEndian.Uint32(c))
			key, _, ok := varint(c[4:])
			if !ok {
				return nil, corruptf("page %d: cell %d's key is truncated", n, i)
			}
			p.keys = append(p.keys, int64(key))
			continue
		case interiorIndex:
			if len(c) < 4 {
				return nil, corruptf("page %d: cell %d is truncated", n, i)
			}
			p.children = append(p.children, binary.BigEndian.Uint32(c))
			c = c[4:]
		}
		size, k, ok := varint(c)
		if !ok {
			return nil, corruptf("page %d: cell %d's payload size is truncated", n, i)
		}
		c = c[k:]
		if p.typ == leafTable {
			rowid, k, ok := varint(c)
			if !ok {
				return nil, corruptf("page %d: cell %d's rowid is truncated", n, i)
			}
			p.rowids = append(p.rowids, int64(rowid))
			c = c[k:]
		}
		var over uint32
		if local := localPayload(size, usable, p.typ == leafTable); local < size {
			if uint64(len(c)) < local+4 {
				return nil, corruptf("page %d: cell %d's overflow pointer is outside the page", n, i)
			}
			over = binary.BigEndian.Uint32(c[local:])
			p.overflow = append(p.overflow, over)
		}
		if p.typ == leafTable {
			p.rowOver = append(p.rowOver, over)
			var cell []byte
			if end := uint64(len(whole)-len(c)) + size; over == 0 && size <= uint64(len(c)) {
				cell = whole[:end]
			}
			p.cells = append(p.cells, cell)
		}
	}
	if hlen == 12 {
		p.children = append(p.children, binary.BigEndian.Uint32(data[hdr+8:]))
	}
	return p, nil
}

// localPayload is how many bytes of a payload of size bytes a cell keeps on
// its page (the rest is in overflow pages), by the file format's rule.
func localPayload(size uint64, usable int, tableLeaf bool) uint64 {
	u := uint64(usable)
	x := (u-12)*64/255 - 23
	if tableLeaf {
		x = u - 35
	}
	if size <= x {
		return size
	}
	m := (u-12)*32/255 - 23
	k := m + (size-m)%(u-4)
	if k <= x {
		return k
	}
	return m
}
