package rowdiff

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"

	"github.com/agentstate/agentstate/dag/sqlitedb"
)

// Counting a rowid table's changes from its record bytes (Options.Counts).
//
// A rowid table's rows are keyed by rowid, and every row that may have
// changed is on a leaf the diff has parsed already (candidateCells), with
// its cell's bytes when the payload is on the page. A row on one version's
// changed leaves only was inserted or deleted; a row on both whose bytes
// differ was updated if a column reads differently, which is decided here
// by decoding both records as SQLite reads a column: integers of any
// stored width, 0 and 1 stored as serial types 8 and 9, reals, text and
// blobs as they are, and an integer stored in a column of REAL affinity
// read as a real (SQLite keeps integral reals there as integers). Anything
// the bytes alone cannot settle leaves the table to the SQLite reads: a
// cell that spills to overflow pages, a record with fewer or more fields
// than the table has columns (a column added by ALTER TABLE reads as its
// default), hidden or generated columns, a text encoding other than UTF-8,
// a malformed record.

// realAffinity reports whether a column declared as typ has REAL affinity,
// by SQLite's rules (the first that applies: INT, then CHAR, CLOB or TEXT,
// then BLOB or nothing, then REAL, FLOA or DOUB).
func realAffinity(typ string) bool {
	u := strings.ToUpper(typ)
	switch {
	case strings.Contains(u, "INT"),
		strings.Contains(u, "CHAR"), strings.Contains(u, "CLOB"), strings.Contains(u, "TEXT"),
		strings.Contains(u, "BLOB"), u == "":
		return false
	}
	return strings.Contains(u, "REAL") || strings.Contains(u, "FLOA") || strings.Contains(u, "DOUB")
}

// countByCells counts the candidate rows of c (by rowid) that the cells
// settle, inserted, updated and deleted, and returns the ones they do not
// (a cell that spills, a record that does not decode to one field a
// column); ok is false when the cells can settle none of the table's rows.
func countByCells(c cands, ta, tb tinfo, ha, hb []byte) (counts [3]int, unsettled map[int64]bool, ok bool) {
	const utf8 = 1
	if ta.hidden || tb.hidden || len(ta.cols) != len(tb.cols) || len(ta.real) != len(ta.cols) ||
		binary.BigEndian.Uint32(ha[56:]) != utf8 || binary.BigEndian.Uint32(hb[56:]) != utf8 {
		return counts, nil, false
	}
	for i := range ta.cols {
		if ta.cols[i] != tb.cols[i] || ta.real[i] != tb.real[i] {
			return counts, nil, false
		}
	}
	unsettled = map[int64]bool{}
	for r := range c.ids {
		inA, inB := c.in[0][r], c.in[1][r]
		switch {
		case inA && inB:
			e := c.cells[r]
			if e == nil || e[0] == nil || e[1] == nil {
				unsettled[r] = true // a cell that spills
				continue
			}
			same, ok := sameRecord(e[0], e[1], ta.real)
			switch {
			case !ok:
				unsettled[r] = true
			case !same:
				counts[1]++
			}
		case inB:
			counts[0]++
		case inA:
			counts[2]++
		}
	}
	return counts, unsettled, true
}

// sameRecord reports whether two table leaf cells (payload size, rowid,
// record) hold records whose columns read the same, real giving each
// column's REAL affinity; ok is false when either cannot be decoded or its
// fields are not one for each column.
func sameRecord(x, y []byte, real []bool) (same, ok bool) {
	fx, ok := recordFields(x, len(real))
	if !ok {
		return false, false
	}
	fy, ok := recordFields(y, len(real))
	if !ok {
		return false, false
	}
	for i := range real {
		if !sameField(fx[i], fy[i], real[i]) {
			return false, true
		}
	}
	return true, true
}

// field is one decoded record field: its serial type and its bytes.
type field struct {
	typ  uint64
	data []byte
}

// recordFields decodes the record of a table leaf cell into exactly n
// fields; ok is false for a malformed record or another field count.
func recordFields(cell []byte, n int) ([]field, bool) {
	_, k, ok := varint(cell) // payload size
	if !ok {
		return nil, false
	}
	cell = cell[k:]
	if _, k, ok = varint(cell); !ok { // rowid
		return nil, false
	}
	rec := cell[k:]
	hsize, k, ok := varint(rec)
	if !ok || hsize < uint64(k) || hsize > uint64(len(rec)) {
		return nil, false
	}
	hdr, body := rec[k:hsize], rec[hsize:]
	fields := make([]field, 0, n)
	for len(hdr) > 0 {
		typ, k, ok := varint(hdr)
		if !ok || len(fields) == n {
			return nil, false
		}
		hdr = hdr[k:]
		size, ok := fieldSize(typ)
		if !ok || size > uint64(len(body)) {
			return nil, false
		}
		fields = append(fields, field{typ, body[:size]})
		body = body[size:]
	}
	return fields, len(fields) == n && len(body) == 0
}

// fieldSize is the byte length of a field of serial type typ.
func fieldSize(typ uint64) (uint64, bool) {
	switch {
	case typ <= 4:
		return typ, true
	case typ == 5:
		return 6, true
	case typ == 6 || typ == 7:
		return 8, true
	case typ == 8 || typ == 9:
		return 0, true
	case typ >= 12:
		return (typ - 12) / 2, true
	}
	return 0, false // 10 and 11 are reserved
}

// cell is a field as SQLite reads it from a column (real: of REAL
// affinity).
func (f field) cell(real bool) Cell {
	switch {
	case f.typ == 0:
		return Cell{Kind: sqlitedb.Null}
	case f.typ <= 6 || f.typ == 8 || f.typ == 9:
		var v int64
		switch f.typ {
		case 8:
		case 9:
			v = 1
		default:
			for i, b := range f.data {
				if i == 0 {
					v = int64(int8(b))
				} else {
					v = v<<8 | int64(b)
				}
			}
		}
		if real {
			return Cell{Kind: sqlitedb.Real, Real: float64(v)}
		}
		return Cell{Kind: sqlitedb.Integer, Int: v}
	case f.typ == 7:
		return Cell{Kind: sqlitedb.Real, Real: math.Float64frombits(binary.BigEndian.Uint64(f.data))}
	case f.typ%2 == 0:
		return Cell{Kind: sqlitedb.Blob, Blob: f.data}
	}
	return Cell{Kind: sqlitedb.Text, Text: string(f.data)}
}

// sameField reports whether two fields read the same from a column.
func sameField(x, y field, real bool) bool {
	if x.typ == y.typ && bytes.Equal(x.data, y.data) {
		return true
	}
	return cellEqual(x.cell(real), y.cell(real))
}
