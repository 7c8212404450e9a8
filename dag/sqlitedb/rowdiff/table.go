package rowdiff

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"zombiezen.com/go/sqlite"

	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/objects"
)

// tinfo is what a diff needs of one table in one version.
type tinfo struct {
	kind string   // "table", "without rowid", "fts5", "virtual", and shadow tables as their base kind
	cols []string // columns a row is read and written by (no hidden or generated ones)
	pk   []int    // WITHOUT ROWID: the primary key's columns, as indexes into cols
	decl []int    // the declared primary key's columns (any table)
	ipk  bool     // a rowid table whose one INTEGER PRIMARY KEY column is the rowid
	vtab string   // a shadow table's virtual table
	// hidden: a column was left out of cols (hidden or generated), so a
	// record's fields are not cols one for one; real: each column of cols
	// has REAL affinity (SQLite reads an integer stored there as a real).
	hidden bool
	real   []bool
}

func quoteID(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func (s *side) info(name string) (tinfo, error) {
	var t tinfo
	o := s.objs[name]
	switch {
	case s.kinds[name] == "virtual" || (o.Root == 0 && strings.HasPrefix(strings.ToUpper(strings.TrimSpace(o.SQL)), "CREATE VIRTUAL")):
		t.kind = "virtual"
		if isFTS5(o.SQL) {
			t.kind = "fts5"
		}
	case s.wr[name]:
		t.kind = "without rowid"
	default:
		t.kind = "table"
	}
	if s.kinds[name] == "shadow" {
		for n, ob := range s.objs {
			if ob.Root == 0 && ob.Type == "table" && strings.HasPrefix(name, n+"_") && len(n) > len(t.vtab) {
				t.vtab = n
			}
		}
	}
	type pkcol struct{ order, idx int }
	var pks []pkcol
	var types []string
	err := query(s.conn, "PRAGMA table_xinfo("+quoteID(name)+")", nil, func(st *sqlite.Stmt) error {
		if st.ColumnInt(6) != 0 { // hidden, or generated
			t.hidden = true
			return nil
		}
		if pk := st.ColumnInt(5); pk > 0 {
			pks = append(pks, pkcol{pk, len(t.cols)})
		}
		t.cols = append(t.cols, st.ColumnText(1))
		types = append(types, st.ColumnText(2))
		return nil
	})
	if err != nil {
		return t, fmt.Errorf("%w: reading the columns of %q: %v", sqlitedb.ErrCorrupt, name, err)
	}
	slices.SortFunc(pks, func(x, y pkcol) int { return x.order - y.order })
	for _, p := range pks {
		t.pk = append(t.pk, p.idx)
	}
	for _, ty := range types {
		t.real = append(t.real, realAffinity(ty))
	}
	if t.kind == "table" && len(pks) == 1 && strings.EqualFold(types[pks[0].idx], "INTEGER") {
		t.ipk = true
	}
	t.decl = t.pk
	if t.kind != "without rowid" {
		t.pk = nil
	}
	return t, nil
}

func isFTS5(sql string) bool {
	u := strings.ToUpper(sql)
	i := strings.Index(u, " USING ")
	return i >= 0 && strings.HasPrefix(strings.TrimSpace(u[i+7:]), "FTS5")
}

func (t tinfo) key() []string {
	if t.kind != "without rowid" {
		return []string{"rowid"}
	}
	k := make([]string, len(t.pk))
	for i, p := range t.pk {
		k[i] = t.cols[p]
	}
	return k
}

// row is one row read: its key and its columns' values.
type row struct {
	key  []Cell
	vals []Cell
}

// read reads the rows of table name in s matching where (a SQL condition
// on rowid, or "" for all), with args bound.
func (s *side) read(ctx context.Context, name string, t tinfo, where string, args []Cell, keep func([]Cell) bool, out map[string]row) error {
	var sel []string
	if t.kind != "without rowid" {
		sel = append(sel, "rowid")
	}
	for _, c := range t.cols {
		sel = append(sel, quoteID(c))
	}
	q := "SELECT " + strings.Join(sel, ", ") + " FROM " + quoteID(name)
	if where != "" {
		q += " WHERE " + where
	}
	err := query(s.conn, q, args, func(st *sqlite.Stmt) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.rowsRead++
		var r row
		off := 0
		if t.kind != "without rowid" {
			r.key = []Cell{cellAt(st, 0)}
			off = 1
		}
		r.vals = make([]Cell, len(t.cols))
		for i := range t.cols {
			r.vals[i] = cellAt(st, off+i)
		}
		for _, p := range t.pk {
			r.key = append(r.key, r.vals[p])
		}
		if keep != nil && !keep(r.key) {
			return nil
		}
		out[keyString(r.key)] = r
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: reading rows of %q: %v", sqlitedb.ErrCorrupt, name, err)
	}
	return nil
}

// readRange reads the rows of a rowid table with rowids from lo to hi, a
// changed leaf's range. A range scan ends by stepping to the row after its
// last, and the row after a leaf's last is on the next leaf, a page the
// diff has no other reason to read: so the rows below hi are scanned and
// hi itself is looked up.
func (s *side) readRange(ctx context.Context, name string, t tinfo, lo, hi int64, keep func([]Cell) bool, out map[string]row) error {
	if lo < hi {
		if err := s.read(ctx, name, t, "rowid BETWEEN ? AND ?", []Cell{{Kind: sqlitedb.Integer, Int: lo}, {Kind: sqlitedb.Integer, Int: hi - 1}}, keep, out); err != nil {
			return err
		}
	}
	return s.read(ctx, name, t, "rowid = ?", []Cell{{Kind: sqlitedb.Integer, Int: hi}}, keep, out)
}

func keyString(k []Cell) string {
	var b []byte
	for _, c := range k {
		b = append(b, byte(c.Kind))
		switch c.Kind {
		case sqlitedb.Integer:
			b = binary.BigEndian.AppendUint64(b, uint64(c.Int))
		case sqlitedb.Real:
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(c.Real))
		case sqlitedb.Text:
			b = binary.BigEndian.AppendUint32(b, uint32(len(c.Text)))
			b = append(b, c.Text...)
		case sqlitedb.Blob:
			b = binary.BigEndian.AppendUint32(b, uint32(len(c.Blob)))
			b = append(b, c.Blob...)
		}
	}
	return string(b)
}

// compareCells orders cells as SQLite's BINARY collation does: NULL, then
// numbers, then text, then blobs.
func compareCells(x, y Cell) int {
	rank := func(c Cell) int {
		switch c.Kind {
		case sqlitedb.Null:
			return 0
		case sqlitedb.Integer, sqlitedb.Real:
			return 1
		case sqlitedb.Text:
			return 2
		}
		return 3
	}
	if r := rank(x) - rank(y); r != 0 {
		return r
	}
	switch x.Kind {
	case sqlitedb.Integer, sqlitedb.Real:
		fx, fy := float64(x.Int), float64(y.Int)
		if x.Kind == sqlitedb.Real {
			fx = x.Real
		}
		if y.Kind == sqlitedb.Real {
			fy = y.Real
		}
		if x.Kind == sqlitedb.Integer && y.Kind == sqlitedb.Integer {
			switch {
			case x.Int < y.Int:
				return -1
			case x.Int > y.Int:
				return 1
			}
			return 0
		}
		switch {
		case fx < fy:
			return -1
		case fx > fy:
			return 1
		}
		return 0
	case sqlitedb.Text:
		return strings.Compare(x.Text, y.Text)
	case sqlitedb.Blob:
		return strings.Compare(string(x.Blob), string(y.Blob))
	}
	return 0
}

func compareKeys(x, y []Cell) int {
	for i := range min(len(x), len(y)) {
		if c := compareCells(x[i], y[i]); c != 0 {
			return c
		}
	}
	return len(x) - len(y)
}

// candidates reads the rowids on the leaves of b-tree tree that are not
// shared by both versions (a leaf of tree in both, with the same chunk):
// every row inserted, deleted or updated is on one of them, in one version
// or both. Of those rowids, it returns the ones whose cells the two
// versions do not both hold with the same bytes (parsePage: the same bytes
// are the same row), every one of them (sorted), and, for each version,
// the rowid ranges of those leaves.
func candidates(ctx context.Context, a, b *side, tree string, changed map[int64]bool, cache map[objects.CID]*page) (map[int64]bool, []int64, [2][][2]int64, error) {
	c, err := candidateCells(ctx, a, b, tree, changed, cache)
	return c.ids, c.all, c.ranges, err
}

// cands is what candidateCells finds: candidates' results, and for each
// candidate rowid the versions whose changed leaves hold it (in) and its
// cell's bytes in each (cells; nil for a cell that spills to overflow
// pages).
type cands struct {
	ids    map[int64]bool
	all    []int64
	ranges [2][][2]int64
	in     [2]map[int64]bool
	cells  map[int64]*[2][]byte
}

// candidateCells is candidates, keeping what it read of the cells.
func candidateCells(ctx context.Context, a, b *side, tree string, changed map[int64]bool, cache map[objects.CID]*page) (cands, error) {
	ids := map[int64]bool{}
	cells := map[int64]*[2][]byte{}
	in := [2]map[int64]bool{{}, {}}
	var ranges [2][][2]int64
	fail := func(err error) (cands, error) { return cands{}, err }
	for i, s := range []*side{a, b} {
		other := b
		if i == 1 {
			other = a
		}
		for _, l := range s.leaves[tree] {
			n := l.n
			if !changed[n] && (l.clean || other.leafOf(tree, n)) {
				continue // the same leaf of tree in both versions
			}
			p, err := s.parse(ctx, cache, n) // parsed already when its overflow was followed
			if err != nil {
				return fail(err)
			}
			if p.typ != leafTable {
				return fail(corruptf("page %d of table %q is not a table leaf (type 0x%02x)", n, tree, p.typ))
			}
			if len(p.rowids) == 0 {
				continue
			}
			lo, hi := p.rowids[0], p.rowids[0]
			for j, r := range p.rowids {
				ids[r] = true
				in[i][r] = true
				lo, hi = min(lo, r), max(hi, r)
				if c := p.cells[j]; c != nil {
					e := cells[r]
					if e == nil {
						e = &[2][]byte{}
						cells[r] = e
					}
					e[i] = c
				}
			}
			ranges[i] = append(ranges[i], [2]int64{lo, hi})
		}
	}
	all := make([]int64, 0, len(ids))
	for r := range ids {
		all = append(all, r)
	}
	slices.Sort(all)
	// The same bytes are the same row only in the same text encoding
	// (header bytes 56-59), which SQLite never changes but a crafted
	// version may.
	ha, hb := a.pages.Header(), b.pages.Header()
	if !bytes.Equal(ha[56:60], hb[56:60]) {
		clear(cells)
	}
	for r, e := range cells {
		if e[0] != nil && e[1] != nil && bytes.Equal(e[0], e[1]) {
			delete(ids, r)
		}
	}
	return cands{ids: ids, all: all, ranges: ranges, in: in, cells: cells}, nil
}

// diffTable computes one table's change.
func diffTable(ctx context.Context, d *Diff, a, b *side, name string, ina, inb bool, touched map[string]bool, changed map[int64]bool, needAll, counts bool) (*Table, error) {
	var ta, tb tinfo
	var err error
	if ina {
		if ta, err = a.info(name); err != nil {
			return nil, err
		}
	}
	if inb {
		if tb, err = b.info(name); err != nil {
			return nil, err
		}
	}
	t := &Table{Name: name, Rows: []RowChange{}}
	main := tb
	if !inb {
		main = ta
	}
	t.Kind, t.Key, t.Columns, t.ipk, t.shadowOf = main.kind, main.key(), main.cols, main.ipk, main.vtab
	switch {
	case !ina:
		t.Schema = "added"
	case !inb:
		t.Schema = "removed"
	case a.objs[name].SQL != b.objs[name].SQL:
		t.Schema = "changed"
	}
	if ina && inb && !slices.Equal(ta.cols, tb.cols) {
		t.OldColumns = ta.cols
	}
	if needAll && inb {
		// SQL writes the table whole: read every row of the new version.
		all := map[string]row{}
		if err := b.read(ctx, name, tb, "", nil, nil, all); err != nil {
			return nil, err
		}
		for _, r := range all {
			t.all = append(t.all, r)
		}
		slices.SortFunc(t.all, func(x, y row) int { return compareKeys(x.key, y.key) })
	}
	whole := t.Schema != "" || d.Whole != "" || a.pages == nil || b.pages == nil || ta.kind != tb.kind
	var keep func([]Cell) bool
	var ranges [2][][2]int64
	var settled [3]int    // counts mode: the rows counted from their cells
	var left, all []int64 // the candidate rowids (sorted), and every rowid on the changed leaves
	if !whole {
		tree := name
		switch main.kind {
		case "fts5":
			any := false
			for n := range touched {
				if strings.HasPrefix(n, name+"_") {
					any = true
				}
			}
			if !any {
				return t.unchanged()
			}
			tree = ""
			for _, suf := range []string{"_content", "_docsize"} {
				if a.kinds[name+suf] == "shadow" && b.kinds[name+suf] == "shadow" && !a.wr[name+suf] {
					tree = name + suf
					break
				}
			}
			whole = tree == ""
		case "virtual":
			any := false
			for n := range touched {
				if strings.HasPrefix(n, name+"_") {
					any = true
				}
			}
			if !any {
				return t.unchanged()
			}
			whole = true
		case "without rowid":
			if !touched[name] {
				return t.unchanged()
			}
			whole = true
		default:
			if !touched[name] {
				return t.unchanged()
			}
		}
		if !whole {
			c, err := candidateCells(ctx, a, b, tree, changed, d.cache)
			if err != nil {
				return nil, err
			}
			ids, rowids, rg := c.ids, c.all, c.ranges
			if len(ids) == 0 {
				return t.unchanged()
			}
			if counts && main.kind == "table" {
				// The rows the cells settle are counted here; only the
				// others are read through SQLite, below.
				ha, hb := a.pages.Header(), b.pages.Header()
				if n, unsettled, ok := countByCells(c, ta, tb, ha[:], hb[:]); ok {
					settled = n
					if len(unsettled) == 0 {
						t.Inserted, t.Updated, t.Deleted = n[0], n[1], n[2]
						return t, nil
					}
					ids = unsettled
				}
			}
			ranges, all = rg, rowids
			for r := range ids {
				left = append(left, r)
			}
			slices.Sort(left)
			keep = func(k []Cell) bool { return len(k) == 1 && k[0].Kind == sqlitedb.Integer && ids[k[0].Int] }
		}
	}
	// The leaves' rowid ranges of both versions, overlapping ones merged:
	// one range query each, in each version.
	merged := slices.Concat(ranges[0], ranges[1])
	slices.SortFunc(merged, func(x, y [2]int64) int { return cmpInt(x[0], y[0]) })
	var m [][2]int64
	for _, r := range merged {
		if n := len(m); n > 0 && r[0] <= m[n-1][1] {
			m[n-1][1] = max(m[n-1][1], r[1])
			continue
		}
		m = append(m, r)
	}
	merged = m
	t.Whole = whole && t.Schema == ""
	// The two versions are read at once, each on its own connection: each
	// waits on its own pages' reads.
	olds, news := map[string]row{}, map[string]row{}
	var errs [2]error
	var wg sync.WaitGroup
	for i, s := range []*side{a, b} {
		in, ti, out := ina, ta, olds
		if i == 1 {
			in, ti, out = inb, tb, news
		}
		if !in {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if whole {
				errs[i] = s.read(ctx, name, ti, "", nil, nil, out)
				return
			}
			for _, r := range merged {
				// A range whose rows are mostly the same in both versions
				// is read by its candidates' rowids, one lookup each.
				in := inRange(left, r)
				if len(in)*4 <= len(inRange(all, r)) {
					for _, id := range in {
						if errs[i] = s.read(ctx, name, ti, "rowid = ?", []Cell{{Kind: sqlitedb.Integer, Int: id}}, keep, out); errs[i] != nil {
							return
						}
					}
					continue
				}
				if errs[i] = s.readRange(ctx, name, ti, r[0], r[1], keep, out); errs[i] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	// Columns matched by name (they differ only when the schema changed).
	oldIdx := map[string]int{}
	for i, c := range ta.cols {
		oldIdx[c] = i
	}
	for k, nr := range news {
		or, ok := olds[k]
		if !ok {
			t.Rows = append(t.Rows, RowChange{Change: "insert", Key: nr.key, New: nr.vals})
			continue
		}
		// A column only one version has is NULL in the other.
		var ch []string
		newIdx := map[string]bool{}
		for i, c := range tb.cols {
			newIdx[c] = true
			was := Cell{}
			if j, ok := oldIdx[c]; ok {
				was = or.vals[j]
			}
			if !cellEqual(was, nr.vals[i]) {
				ch = append(ch, c)
			}
		}
		for j, c := range ta.cols {
			if !newIdx[c] && or.vals[j].Kind != sqlitedb.Null {
				ch = append(ch, c)
			}
		}
		if len(ch) > 0 {
			t.Rows = append(t.Rows, RowChange{Change: "update", Key: nr.key, Old: or.vals, New: nr.vals, Changed: ch})
		}
	}
	for k, or := range olds {
		if _, ok := news[k]; !ok {
			t.Rows = append(t.Rows, RowChange{Change: "delete", Key: or.key, Old: or.vals})
		}
	}
	slices.SortFunc(t.Rows, func(x, y RowChange) int { return compareKeys(x.Key, y.Key) })
	for _, r := range t.Rows {
		switch r.Change {
		case "insert":
			t.Inserted++
		case "delete":
			t.Deleted++
		default:
			t.Updated++
		}
	}
	if counts && main.kind == "table" {
		// Counts only: the rows read through SQLite are counted with the
		// others and not kept, so a table's Rows are empty whichever way
		// its rows were settled.
		t.Inserted, t.Updated, t.Deleted = t.Inserted+settled[0], t.Updated+settled[1], t.Deleted+settled[2]
		t.Rows = []RowChange{}
	}
	return t, nil
}

// unchanged is diffTable's answer for a table whose rows did not change:
// nothing, unless SQL writes it whole anyway.
func (t *Table) unchanged() (*Table, error) {
	if len(t.all) == 0 {
		return nil, nil
	}
	return t, nil
}

// inRange is the part of sorted ids from r[0] to r[1].
func inRange(ids []int64, r [2]int64) []int64 {
	lo, _ := slices.BinarySearch(ids, r[0])
	hi, _ := slices.BinarySearch(ids, r[1]+1)
	if r[1] == math.MaxInt64 {
		hi = len(ids)
	}
	return ids[lo:max(lo, hi)]
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
