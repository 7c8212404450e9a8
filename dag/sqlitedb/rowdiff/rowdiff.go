// Package rowdiff is the change between two versions of a SQLite value, by
// table: rows inserted, deleted and updated (matched by rowid, or by primary
// key in a WITHOUT ROWID table), the changed columns' old and new values,
// and schema changes. An FTS5 table is reported as its own rows, never as
// its shadow tables.
//
// The cost is in proportion to what changed. Two versions of a chunked
// SQLite value share the chunk of every page they have in common
// (docs/format.md §8), so the pages that differ are found by comparing
// the two chunk trees, passing over the list nodes they share
// (sqlitedb.ChangedPages), without reading a page. The changed pages are
// then fetched on every core while each b-tree's interior pages are walked
// (their parse is cached by chunk CID, so a page both versions share is
// read once) to learn which b-tree owns which leaf, without reading the
// leaves; then only the changed table leaf pages are read for their
// rowids, and only the rows with those rowids are read, through SQLite, in
// both versions, by lookups that read no leaf besides the changed ones. A
// WITHOUT ROWID table, a non-FTS5 virtual table, a table whose schema
// changed, and every table when a changed page cannot be accounted for (an
// overflow page rewritten in place under an unchanged leaf), or when the
// page size changed, are compared whole.
package rowdiff

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"zombiezen.com/go/sqlite"

	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/objects"
)

// Cell is one value of a row, typed as SQLite returned it.
type Cell = sqlitedb.Cell

// ErrTooManyRows: the change holds more rows than Options.MaxRows.
var ErrTooManyRows = errors.New("rowdiff: too many changed rows")

// Options bound a diff.
type Options struct {
	// MaxRows is the most changed rows a diff holds (DefaultMaxRows when 0);
	// past it the diff fails with ErrTooManyRows.
	MaxRows int
	// SQL: also compute what Diff.SQL needs (the changes of virtual tables'
	// shadow tables, and the tables it writes whole), which the table view
	// does not.
	SQL bool
	// Counts: only each table's counts are wanted (diff --stat). A rowid
	// table's changed rows are then told apart from the record bytes on
	// the pages the diff reads anyway (decoded with SQLite's rules for
	// reading a column: see counts.go), and its Rows are left empty; a
	// table those bytes cannot settle is read through SQLite as without
	// Counts. The counts are the same either way (TestCountsAsRows).
	Counts bool
}

// ErrNoSQL: Diff.SQL on a diff computed without Options.SQL.
var ErrNoSQL = errors.New("rowdiff: the diff was computed without Options.SQL")

// DefaultMaxRows is Options.MaxRows's default.
const DefaultMaxRows = 1_000_000

// Diff is the change from one version of a database to another.
type Diff struct {
	PageSize     int   `json:"pageSize"`
	OldPages     int64 `json:"oldPages"`
	NewPages     int64 `json:"newPages"`
	ChangedPages int64 `json:"changedPages"`
	// Whole says why every table was compared whole, when it was.
	Whole  string         `json:"whole,omitempty"`
	Schema []SchemaChange `json:"schema"`
	Tables []Table        `json:"tables"`

	hidden   []Table // shadow tables' changes, and tables SQL rewrites whole, for SQL
	rowsRead int     // rows read through SQLite, both versions
	forSQL   bool
	cache    map[objects.CID]*page // parsed b-tree pages by chunk CID
	old      []object
	new      []object
}

// SchemaChange is one schema object (table, index, view, trigger) added,
// removed or whose CREATE statement changed.
type SchemaChange struct {
	Change string `json:"change"` // "added", "removed", "changed"
	Type   string `json:"type"`
	Name   string `json:"name"`
	Table  string `json:"table"`
	OldSQL string `json:"oldSql,omitempty"`
	NewSQL string `json:"newSql,omitempty"`
}

// Table is one table's row changes.
type Table struct {
	Name string `json:"name"`
	// Kind: "table" (a rowid table), "without rowid", "fts5", "virtual".
	Kind string `json:"kind"`
	// Schema: "added", "removed" or "changed" when the table's CREATE
	// statement differs between the versions.
	Schema string `json:"schema,omitempty"`
	// Key names the columns a row is matched by: ["rowid"], or the primary
	// key's columns of a WITHOUT ROWID table.
	Key []string `json:"key"`
	// Columns are the new version's columns (the old one's for a removed
	// table); OldColumns the old version's when they differ.
	Columns    []string    `json:"columns"`
	OldColumns []string    `json:"oldColumns,omitempty"`
	Whole      bool        `json:"whole,omitempty"` // compared whole, not by changed pages
	Inserted   int         `json:"inserted"`
	Deleted    int         `json:"deleted"`
	Updated    int         `json:"updated"`
	Rows       []RowChange `json:"rows"`

	ipk      bool // a rowid table whose INTEGER PRIMARY KEY is the rowid
	shadowOf string
	all      []row // every row of the new version, when SQL writes the table whole
}

// RowChange is one row inserted, deleted or updated. Old is aligned with
// the table's OldColumns (or Columns), New with Columns.
type RowChange struct {
	Change  string   `json:"change"` // "insert", "delete", "update"
	Key     []Cell   `json:"key"`
	Old     []Cell   `json:"old,omitempty"`
	New     []Cell   `json:"new,omitempty"`
	Changed []string `json:"changed,omitempty"` // an update's changed columns
}

// object is a sqlite_schema row.
type object struct {
	Type, Name, Table, SQL string
	Root                   int64
}

// side is one version of the database.
type side struct {
	db     *sqlitedb.DB
	pages  *sqlitedb.Pages
	conn   *sqlite.Conn
	usable int
	chunks bool
	objs   map[string]object
	kinds  map[string]string    // table_list type: table, virtual, shadow, view
	wr     map[string]bool      // WITHOUT ROWID
	owner  map[int64]string     // interior and changed b-tree pages -> the table or index they belong to
	leaves map[string][]leafRef // each b-tree's leaves, in b-tree order
	tree   []int32              // by page number - 1: the page's b-tree (pageTree), 0 for none (leafOf)
	names  []string             // the b-trees, as pageTree numbers them
	over   map[int64]string     // overflow page -> b-tree
	free   map[int64]bool
	ptrmap map[int64]bool

	rowsRead int // rows read through SQLite
}

// Compute returns the change from old to new. Either may be nil: a
// database that does not exist, so every table of the other is added or
// removed. A corrupt database is an error wrapping sqlitedb.ErrCorrupt.
func Compute(ctx context.Context, old, new *sqlitedb.DB, o Options) (*Diff, error) {
	if o.MaxRows <= 0 {
		o.MaxRows = DefaultMaxRows
	}
	d := &Diff{Schema: []SchemaChange{}, Tables: []Table{}, forSQL: o.SQL}
	cache := map[objects.CID]*page{}
	d.cache = cache
	var sides [2]*side
	for i, db := range []*sqlitedb.DB{old, new} {
		if db == nil {
			sides[i] = &side{objs: map[string]object{}, kinds: map[string]string{}, wr: map[string]bool{}}
			continue
		}
		s, err := openSide(ctx, db)
		if err != nil {
			return nil, err
		}
		defer db.ReleaseConn(s.conn)
		sides[i] = s
	}
	a, b := sides[0], sides[1]
	if a.pages != nil {
		d.PageSize, d.OldPages = a.pages.PageSize(), a.pages.PageCount()
	}
	if b.pages != nil {
		d.PageSize, d.NewPages = b.pages.PageSize(), b.pages.PageCount()
	}
	for _, s := range sides {
		for _, ob := range s.objs {
			if s == a {
				d.old = append(d.old, ob)
			} else {
				d.new = append(d.new, ob)
			}
		}
	}
	sortObjs(d.old)
	sortObjs(d.new)

	// Which pages changed, and which b-trees own them.
	var changed []int64
	changedSet := map[int64]bool{}
	touched := map[string]bool{}
	if a.pages != nil && b.pages != nil {
		if a.pages.PageSize() != b.pages.PageSize() {
			d.Whole = fmt.Sprintf("the page size changed from %d to %d bytes", a.pages.PageSize(), b.pages.PageSize())
		} else {
			var err error
			if changed, err = sqlitedb.ChangedPages(ctx, a.pages, b.pages); err != nil {
				return nil, err
			}
			d.ChangedPages = int64(len(changed))
			for _, n := range changed {
				changedSet[n] = true
			}
			// The changed pages are read next (their b-trees', their cells'
			// overflow chains): fetched while the b-trees are walked.
			for _, s := range sides {
				s.pages.Prefetch(ctx, changed)
			}
			for i, s := range sides {
				if err := s.mapPages(ctx, cache, changedSet, sides[1-i]); err != nil {
					return nil, err
				}
			}
			for _, s := range sides {
				if err := s.mapOverflow(ctx, cache, changed); err != nil {
					return nil, err
				}
			}
			var lost []int64
			for _, n := range changed {
				known := false
				for _, s := range sides {
					if t, ok := s.owner[n]; ok {
						touched[t], known = true, true
					}
					if t, ok := s.over[n]; ok {
						touched[t], known = true, true
					}
					if s.free[n] || s.ptrmap[n] || n > s.pages.PageCount() {
						known = true
					}
				}
				if !known {
					lost = append(lost, n)
				}
			}
			if len(lost) > 0 {
				d.Whole = fmt.Sprintf("%d changed page(s) (page %d first) belong to no changed b-tree page", len(lost), lost[0])
			}
		}
	}

	// Schema changes.
	names := map[string]bool{}
	for _, s := range sides {
		for n := range s.objs {
			names[n] = true
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		oa, ina := a.objs[n]
		ob, inb := b.objs[n]
		if (ina && oa.SQL == "") || (inb && ob.SQL == "") {
			continue // automatic indexes follow their table
		}
		switch {
		case ina && !inb:
			d.Schema = append(d.Schema, SchemaChange{Change: "removed", Type: oa.Type, Name: n, Table: oa.Table, OldSQL: oa.SQL})
		case !ina && inb:
			d.Schema = append(d.Schema, SchemaChange{Change: "added", Type: ob.Type, Name: n, Table: ob.Table, NewSQL: ob.SQL})
		case oa.SQL != ob.SQL || oa.Type != ob.Type:
			d.Schema = append(d.Schema, SchemaChange{Change: "changed", Type: ob.Type, Name: n, Table: ob.Table, OldSQL: oa.SQL, NewSQL: ob.SQL})
		}
	}

	// Row changes, table by table.
	rows := 0
	if a.pages != nil && b.pages != nil && d.Whole == "" && len(changed) == 0 {
		sorted = nil // the same pages: nothing changed
	}
	for _, n := range sorted {
		oa, ina := a.objs[n]
		ob, inb := b.objs[n]
		if (ina && oa.Type != "table") || (inb && ob.Type != "table") || n == "sqlite_schema" || n == "sqlite_master" {
			continue
		}
		if !o.SQL && (a.kinds[n] == "shadow" || b.kinds[n] == "shadow") {
			continue // only SQL writes shadow tables
		}
		t, err := diffTable(ctx, d, a, b, n, ina, inb, touched, changedSet, o.SQL && rewritten(d, a, b, n), o.Counts && !o.SQL)
		if err != nil {
			return nil, err
		}
		if t == nil {
			continue
		}
		rows += len(t.Rows) + len(t.all)
		if rows > o.MaxRows {
			return nil, fmt.Errorf("%w: more than %d", ErrTooManyRows, o.MaxRows)
		}
		if t.shadowOf == "" && (len(t.Rows) > 0 || t.Inserted+t.Updated+t.Deleted > 0 || t.Schema != "") {
			d.Tables = append(d.Tables, *t)
		} else {
			d.hidden = append(d.hidden, *t)
		}
	}
	d.cache = nil
	d.rowsRead = a.rowsRead + b.rowsRead
	return d, nil
}

func sortObjs(o []object) {
	slices.SortFunc(o, func(x, y object) int { return strings.Compare(x.Name, y.Name) })
}

func openSide(ctx context.Context, db *sqlitedb.DB) (*side, error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	c.SetInterrupt(ctx.Done())
	p := db.Pages()
	h := p.Header()
	s := &side{db: db, pages: p, conn: c, usable: p.PageSize() - int(h[20]),
		objs: map[string]object{}, kinds: map[string]string{}, wr: map[string]bool{}}
	fail := func(err error) (*side, error) {
		db.ReleaseConn(c)
		return nil, fmt.Errorf("%w: reading the schema: %v", sqlitedb.ErrCorrupt, err)
	}
	err = query(c, `SELECT type, name, tbl_name, rootpage, coalesce(sql, '') FROM sqlite_schema`, nil, func(st *sqlite.Stmt) error {
		o := object{Type: st.ColumnText(0), Name: st.ColumnText(1), Table: st.ColumnText(2), Root: st.ColumnInt64(3), SQL: st.ColumnText(4)}
		s.objs[o.Name] = o
		return nil
	})
	if err != nil {
		return fail(err)
	}
	err = query(c, `PRAGMA table_list`, nil, func(st *sqlite.Stmt) error {
		if st.ColumnText(0) == "main" {
			s.kinds[st.ColumnText(1)] = st.ColumnText(2)
			s.wr[st.ColumnText(1)] = st.ColumnInt(4) != 0
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	if _, err := p.PageCID(ctx, 1); err == nil {
		s.chunks = true
	}
	return s, nil
}

// query runs q with args bound, calling row for each result row. The
// statement is prepared once per connection (a diff runs the same range
// query many times) and reset after use.
func query(c *sqlite.Conn, q string, args []Cell, row func(*sqlite.Stmt) error) error {
	st, err := c.Prepare(q)
	if err != nil {
		return err
	}
	defer func() {
		st.Reset()
		st.ClearBindings()
	}()
	for i, a := range args {
		bind(st, i+1, a)
	}
	for {
		ok, err := st.Step()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		if err := row(st); err != nil {
			return err
		}
	}
}

func bind(st *sqlite.Stmt, i int, c Cell) {
	switch c.Kind {
	case sqlitedb.Integer:
		st.BindInt64(i, c.Int)
	case sqlitedb.Real:
		st.BindFloat(i, c.Real)
	case sqlitedb.Text:
		st.BindText(i, c.Text)
	case sqlitedb.Blob:
		st.BindBytes(i, c.Blob)
	default:
		st.BindNull(i)
	}
}

func cellAt(st *sqlite.Stmt, i int) Cell {
	switch st.ColumnType(i) {
	case sqlite.TypeInteger:
		return Cell{Kind: sqlitedb.Integer, Int: st.ColumnInt64(i)}
	case sqlite.TypeFloat:
		return Cell{Kind: sqlitedb.Real, Real: st.ColumnFloat(i)}
	case sqlite.TypeText:
		return Cell{Kind: sqlitedb.Text, Text: st.ColumnText(i)}
	case sqlite.TypeBlob:
		b := make([]byte, st.ColumnLen(i))
		st.ColumnBytes(i, b)
		return Cell{Kind: sqlitedb.Blob, Blob: b}
	}
	return Cell{Kind: sqlitedb.Null}
}

func cellEqual(x, y Cell) bool {
	if x.Kind != y.Kind {
		return false
	}
	switch x.Kind {
	case sqlitedb.Integer:
		return x.Int == y.Int
	case sqlitedb.Real:
		return math.Float64bits(x.Real) == math.Float64bits(y.Real)
	case sqlitedb.Text:
		return x.Text == y.Text
	case sqlitedb.Blob:
		return bytes.Equal(x.Blob, y.Blob)
	}
	return true
}

// parse reads page n as a b-tree page, through cache by chunk CID.
func (s *side) parse(ctx context.Context, cache map[objects.CID]*page, n int64) (*page, error) {
	if n < 1 || n > s.pages.PageCount() {
		return nil, corruptf("page %d is outside the %d-page database", n, s.pages.PageCount())
	}
	var cid objects.CID
	if s.chunks && n > 1 { // page 1 holds the header, whose counters change every write
		c, err := s.pages.PageCID(ctx, n)
		if err != nil {
			return nil, err
		}
		if p, ok := cache[c]; ok {
			return p, nil
		}
		cid = c
	}
	data, err := s.pages.Page(ctx, n)
	if err != nil {
		return nil, err
	}
	p, err := parsePage(data, n, s.usable)
	if err != nil {
		return nil, err
	}
	if !cid.IsZero() {
		cache[cid] = p
	}
	return p, nil
}

// leafRef is a b-tree leaf: its page, and whether its path from the root
// is the same in the other version (the same root page number and the
// same interior pages on the way): then, unless the leaf itself changed,
// it is the same leaf of the same b-tree in both versions.
type leafRef struct {
	n     int64
	clean bool
}

// pageTree is what side.tree holds for a page of b-tree t (an index into
// side.names), a leaf or not.
func pageTree(t int, leaf bool) int32 {
	v := int32(t+1) << 1
	if leaf {
		v |= 1
	}
	return v
}

// leafOf reports whether page n is a leaf of b-tree tree.
func (s *side) leafOf(tree string, n int64) bool {
	if n < 1 || n > int64(len(s.tree)) {
		return false
	}
	v := s.tree[n-1]
	return v&1 == 1 && s.names[v>>1-1] == tree
}

// mapPages walks the interior pages of every b-tree, recording the b-tree
// of each interior and leaf page (leaves are not read: every leaf of a
// b-tree is at one depth, so the first child read at a level says whether
// the whole level is leaves), and reads the freelist and pointer-map
// pages. A page reached twice (in two b-trees, or twice in one) is
// refused as corrupt.
func (s *side) mapPages(ctx context.Context, cache map[objects.CID]*page, changed map[int64]bool, other *side) error {
	s.owner, s.leaves = map[int64]string{}, map[string][]leafRef{}
	s.over, s.free, s.ptrmap = map[int64]string{}, map[int64]bool{}, map[int64]bool{}
	roots := []object{{Name: "sqlite_schema", Root: 1}}
	for _, o := range s.objs {
		if o.Root > 0 {
			roots = append(roots, o)
		}
	}
	sortObjs(roots)
	s.names = make([]string, len(roots))
	total := s.pages.PageCount()
	s.tree = make([]int32, total)
	// Each b-tree's root, and then each level of interior pages, is read
	// on every core before it is walked.
	rootPages := make([]int64, len(roots))
	for i, o := range roots {
		rootPages[i] = o.Root
	}
	s.pages.Prefetch(ctx, rootPages)
	type at struct {
		n     int64
		clean bool
	}
	for ti, o := range roots {
		s.names[ti] = o.Name
		same := other.objs[o.Name].Root == o.Root || o.Name == "sqlite_schema"
		level := []at{{o.Root, same}}
		var leaves []leafRef
		isLeaf := false
		for depth := 0; len(level) > 0; depth++ {
			if depth > 64 {
				return corruptf("b-tree %q is deeper than 64 levels", o.Name)
			}
			if depth == 0 || !isLeaf {
				if level[0].n < 1 || level[0].n > total {
					return corruptf("b-tree %q names page %d of a %d-page database", o.Name, level[0].n, total)
				}
				p, err := s.parse(ctx, cache, level[0].n)
				if err != nil {
					return err
				}
				isLeaf = p.typ == leafTable || p.typ == leafIndex
			}
			var parsed []*page // the level's interior pages
			if isLeaf {
				leaves = make([]leafRef, 0, len(level))
			} else {
				parsed = make([]*page, 0, len(level))
				if len(level) > 1 {
					ns := make([]int64, len(level))
					for i, l := range level {
						ns[i] = l.n
					}
					s.pages.Prefetch(ctx, ns)
				}
			}
			for _, l := range level {
				n := l.n
				if n < 1 || n > total {
					return corruptf("b-tree %q names page %d of a %d-page database", o.Name, n, total)
				}
				if prev := s.tree[n-1]; prev != 0 {
					return corruptf("page %d is in b-tree %q and %q", n, s.names[prev>>1-1], o.Name)
				}
				s.tree[n-1] = pageTree(ti, isLeaf)
				if isLeaf {
					leaves = append(leaves, leafRef{n, l.clean})
					if changed[n] {
						s.owner[n] = o.Name
					}
					continue
				}
				if prev, ok := s.owner[n]; ok { // an interior page twice: the walk would not end
					return corruptf("page %d is in b-tree %q and %q", n, prev, o.Name)
				}
				s.owner[n] = o.Name
				p, err := s.parse(ctx, cache, n)
				if err != nil {
					return err
				}
				if p.typ == leafTable || p.typ == leafIndex {
					return corruptf("b-tree %q has leaves at two depths (page %d)", o.Name, n)
				}
				parsed = append(parsed, p)
			}
			if isLeaf {
				break
			}
			kids := 0
			for _, p := range parsed {
				kids += len(p.children)
			}
			next := make([]at, 0, kids)
			for i, p := range parsed {
				clean := level[i].clean && !changed[level[i].n]
				for _, c := range p.children {
					next = append(next, at{int64(c), clean})
				}
			}
			level = next
		}
		if leaves != nil {
			s.leaves[o.Name] = leaves
		}
	}
	h := s.pages.Header()
	trunk := int64(binary.BigEndian.Uint32(h[32:]))
	for steps := int64(0); trunk != 0; steps++ {
		if steps > total || trunk > total {
			return corruptf("the freelist runs past the database's %d pages", total)
		}
		s.free[trunk] = true
		data, err := s.pages.Page(ctx, trunk)
		if err != nil {
			return err
		}
		cnt := int64(binary.BigEndian.Uint32(data[4:]))
		if 8+4*cnt > int64(len(data)) {
			return corruptf("freelist trunk page %d lists %d pages", trunk, cnt)
		}
		for i := int64(0); i < cnt; i++ {
			s.free[int64(binary.BigEndian.Uint32(data[8+4*i:]))] = true
		}
		trunk = int64(binary.BigEndian.Uint32(data))
	}
	if binary.BigEndian.Uint32(h[52:]) != 0 { // auto-vacuum: pointer-map pages
		step := int64(s.usable/5) + 1
		for n := int64(2); n <= total; n += step {
			s.ptrmap[n] = true
		}
	}
	return nil
}

// mapOverflow follows the overflow chains of the cells on the changed
// b-tree pages, recording which b-tree each overflow page serves.
func (s *side) mapOverflow(ctx context.Context, cache map[objects.CID]*page, changed []int64) error {
	total := s.pages.PageCount()
	for _, n := range changed {
		t, ok := s.owner[n]
		if !ok || n > total {
			continue
		}
		p, err := s.parse(ctx, cache, n)
		if err != nil {
			return err
		}
		for _, first := range p.overflow {
			next := int64(first)
			for steps := int64(0); next != 0; steps++ {
				if steps > total || next > total || next < 1 {
					return corruptf("an overflow chain from page %d runs outside the database", n)
				}
				s.over[next] = t
				data, err := s.pages.Page(ctx, next)
				if err != nil {
					return err
				}
				next = int64(binary.BigEndian.Uint32(data))
			}
		}
	}
	return nil
}

// rewritten reports whether SQL writes table n of the new version whole
// (every row, rather than the rows that changed): a table whose schema
// changed, the shadow tables of a virtual table created or changed, and
// SQLite's own sqlite_sequence and sqlite_stat tables, which SQLite itself
// changes as the other statements run.
func rewritten(d *Diff, a, b *side, n string) bool {
	ob, inb := b.objs[n]
	if !inb {
		return false
	}
	oa, ina := a.objs[n]
	if !ina || oa.SQL != ob.SQL || strings.HasPrefix(n, "sqlite_") {
		return true
	}
	if b.kinds[n] == "shadow" {
		for v, vo := range b.objs {
			if vo.Root == 0 && vo.Type == "table" && strings.HasPrefix(n, v+"_") {
				if va, ok := a.objs[v]; !ok || va.SQL != vo.SQL {
					return true
				}
			}
		}
	}
	return false
}
