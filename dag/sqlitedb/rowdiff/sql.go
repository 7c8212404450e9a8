package rowdiff

import (
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/agentstate/agentstate/dag/sqlitedb"
)

// Literal writes c as a SQL literal that reads back as the same value and
// storage class.
func Literal(c Cell) string {
	switch c.Kind {
	case sqlitedb.Integer:
		return strconv.FormatInt(c.Int, 10)
	case sqlitedb.Real:
		switch {
		case math.IsInf(c.Real, 1):
			return "1e999"
		case math.IsInf(c.Real, -1):
			return "-1e999"
		case math.IsNaN(c.Real):
			return "NULL"
		}
		s := strconv.FormatFloat(c.Real, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return s
	case sqlitedb.Text:
		if strings.IndexByte(c.Text, 0) >= 0 {
			return "CAST(X'" + hex.EncodeToString([]byte(c.Text)) + "' AS TEXT)"
		}
		return "'" + strings.ReplaceAll(c.Text, "'", "''") + "'"
	case sqlitedb.Blob:
		return "X'" + hex.EncodeToString(c.Blob) + "'"
	}
	return "NULL"
}

// SQL returns statements that turn the old database into the new one, the
// contract of SQLite's sqldiff: run by sqlite3 on the old file they give a
// database sqldiff finds identical to the new one. It is empty when nothing
// changed. A virtual table's data is written through its shadow tables, as
// sqldiff writes it; triggers are dropped first and created again last, so
// the statements do not fire them; a table whose schema changed is dropped
// and created again with all its rows; sqlite_sequence is written whole.
func (d *Diff) SQL() (string, error) {
	if !d.forSQL {
		return "", ErrNoSQL
	}
	var b strings.Builder
	line := func(s string) { b.WriteString(s); b.WriteString(";\n") }
	oldObj := map[string]object{}
	for _, o := range d.old {
		oldObj[o.Name] = o
	}
	newObj := map[string]object{}
	for _, o := range d.new {
		newObj[o.Name] = o
	}
	tables := slices.Concat(d.Tables, d.hidden)
	slices.SortFunc(tables, func(x, y Table) int { return strings.Compare(x.Name, y.Name) })
	internal := func(n string) bool { return strings.HasPrefix(strings.ToLower(n), "sqlite_") }
	virtual := func(o object) bool { return o.Type == "table" && o.Root == 0 }

	recreated := map[string]bool{} // tables dropped and created again (or created)
	var drops, creates, rows, after []string

	// Schema: drops and creates of tables.
	for _, sc := range d.Schema {
		if sc.Type != "table" || internal(sc.Name) {
			continue
		}
		o, inOld := oldObj[sc.Name]
		n, inNew := newObj[sc.Name]
		shadow := false
		for _, t := range tables {
			if t.Name == sc.Name && t.shadowOf != "" {
				shadow = true
			}
		}
		if shadow {
			continue // a virtual table creates and drops its shadow tables
		}
		if inOld && (!inNew || o.SQL != n.SQL) {
			drops = append(drops, "DROP TABLE "+quoteID(sc.Name))
		}
		if inNew && (!inOld || o.SQL != n.SQL) {
			creates = append(creates, n.SQL)
			recreated[sc.Name] = true
		}
		_ = virtual
	}
	if _, ok := newObj["sqlite_stat1"]; ok {
		if _, ok := oldObj["sqlite_stat1"]; !ok {
			creates = append(creates, "ANALYZE sqlite_schema")
		}
	} else if _, ok := oldObj["sqlite_stat1"]; ok {
		drops = append(drops, "DROP TABLE sqlite_stat1")
	}

	// Rows.
	var seq *Table
	for i := range tables {
		t := &tables[i]
		if t.Kind == "fts5" || t.Kind == "virtual" {
			continue // written through its shadow tables
		}
		if _, ok := newObj[t.Name]; !ok {
			continue
		}
		if t.Name == "sqlite_sequence" {
			seq = t
			continue
		}
		if t.all != nil || recreated[t.Name] {
			if _, existed := oldObj[t.Name]; existed || t.shadowOf != "" || internal(t.Name) {
				rows = append(rows, "DELETE FROM "+quoteID(t.Name))
			}
			for _, r := range t.all {
				rows = append(rows, insertSQL(t, r.key, r.vals))
			}
			continue
		}
		for _, r := range t.Rows {
			if r.Change == "delete" {
				rows = append(rows, "DELETE FROM "+quoteID(t.Name)+" WHERE "+where(t, r.Key))
			}
		}
		for _, r := range t.Rows {
			if r.Change == "update" {
				idx := map[string]int{}
				for i, c := range t.Columns {
					idx[c] = i
				}
				var set []string
				for _, c := range r.Changed {
					set = append(set, quoteID(c)+"="+Literal(r.New[idx[c]]))
				}
				rows = append(rows, "UPDATE "+quoteID(t.Name)+" SET "+strings.Join(set, ", ")+" WHERE "+where(t, r.Key))
			}
		}
		for _, r := range t.Rows {
			if r.Change == "insert" {
				rows = append(rows, insertSQL(t, r.Key, r.New))
			}
		}
	}

	// Indexes, views, triggers: those removed or changed are dropped, those
	// added or changed are created; a recreated table's indexes are created
	// again; every trigger is dropped first and created again last.
	var preDrops []string
	for _, o := range d.old {
		if o.SQL == "" || o.Type == "table" || internal(o.Name) {
			continue
		}
		n, ok := newObj[o.Name]
		if o.Type == "trigger" || !ok || n.SQL != o.SQL || n.Type != o.Type {
			preDrops = append(preDrops, "DROP "+strings.ToUpper(o.Type)+" IF EXISTS "+quoteID(o.Name))
		}
	}
	for _, o := range d.new {
		if o.SQL == "" || o.Type == "table" || internal(o.Name) {
			continue
		}
		p, ok := oldObj[o.Name]
		if o.Type == "trigger" || !ok || p.SQL != o.SQL || p.Type != o.Type || recreated[o.Table] {
			after = append(after, o.SQL)
		}
	}
	if seq != nil && (len(drops)+len(creates)+len(rows)+len(d.Schema) > 0 || len(seq.Rows) > 0) {
		rows = append(rows, "DELETE FROM sqlite_sequence")
		for _, r := range seq.all {
			rows = append(rows, insertSQL(seq, r.key, r.vals))
		}
	}
	stmts := slices.Concat(drops, creates, rows)
	if len(stmts) == 0 && len(d.Schema) == 0 {
		return "", nil
	}
	// Only the triggers: without another change, dropping and creating them
	// again is no change.
	if len(stmts) == 0 {
		var only []string
		for _, s := range preDrops {
			if !strings.HasPrefix(s, "DROP TRIGGER") {
				only = append(only, s)
			}
		}
		preDrops = only
		after = slices.DeleteFunc(after, func(s string) bool {
			return strings.HasPrefix(strings.ToUpper(strings.TrimSpace(s)), "CREATE TRIGGER") && !triggerChanged(d, s)
		})
	}
	line("PRAGMA foreign_keys=OFF")
	line("BEGIN TRANSACTION")
	for _, s := range slices.Concat(preDrops, stmts, after) {
		line(s)
	}
	line("COMMIT")
	return b.String(), nil
}

func triggerChanged(d *Diff, sql string) bool {
	for _, sc := range d.Schema {
		if sc.Type == "trigger" && sc.NewSQL == sql {
			return true
		}
	}
	return false
}

func where(t *Table, key []Cell) string {
	var w []string
	for i, k := range t.Key {
		w = append(w, quoteID(k)+"="+Literal(key[i]))
	}
	if len(t.Key) == 1 && t.Key[0] == "rowid" {
		return "rowid=" + Literal(key[0])
	}
	return strings.Join(w, " AND ")
}

func insertSQL(t *Table, key, vals []Cell) string {
	var cols, lits []string
	if t.Kind == "table" && !t.ipk {
		cols, lits = append(cols, "rowid"), append(lits, Literal(key[0]))
	}
	for i, c := range t.Columns {
		cols = append(cols, quoteID(c))
		lits = append(lits, Literal(vals[i]))
	}
	return "INSERT INTO " + quoteID(t.Name) + "(" + strings.Join(cols, ",") + ") VALUES(" + strings.Join(lits, ",") + ")"
}
