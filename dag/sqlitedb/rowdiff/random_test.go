package rowdiff_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/dag/sqlitedb/rowdiff"
	"github.com/agentstate/agentstate/dag/sqlitedb/sqlitetest"
)

// TestRandomEditsAgainstSQLite: chains of versions of a brain's memory.db,
// each made from the one before by a random script of edits (inserts,
// updates and deletes in rowid, WITHOUT ROWID, BLOB-keyed and FTS5
// tables, values long enough to overflow, a trigger's rows, and now and
// then a VACUUM, a column added, a table created or dropped), are diffed
// page by page and checked against SQLite itself: the per-table counts
// against what sqlite3 counts by joining the two files on each table's
// key; the rows' values (-p, --json) against sqlite3's reading of the same
// rows, by value and type; and the SQL against sqldiff after sqlite3
// applies it.
func TestRandomEditsAgainstSQLite(t *testing.T) {
	const steps = 4
	for seed := range sqlitetest.Seeds(2, 6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ed := sqlitetest.NewEditor(uint64(seed))
			old := baseDB(t, 3000)
			for step := range steps {
				script, schema := ed.Script()
				file := filepath.Join(t.TempDir(), "edits.sql")
				if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
					t.Fatal(err)
				}
				nw := changed(t, old, ".read "+file)
				d, _ := diff(t, old, nw)
				for _, name := range []string{"messages", "log", "facts", "blobs", "counter", "notes", "extra"} {
					if schema[name] {
						continue // its rows are matched against another schema
					}
					want := sqlitetest.Counts(t, old, nw, name)
					var got [3]int
					if tb := table(d, name); tb != nil {
						got = [3]int{tb.Inserted, tb.Deleted, tb.Updated}
					}
					if os.Getenv("ROWDIFF_RANDOM_SHOW") != "" {
						t.Logf("step %d %s: %v (whole %q)", step, name, got, d.Whole)
					}
					if got != want {
						t.Fatalf("step %d, table %s: the diff counts %v inserted/deleted/updated, sqlite3 %v\nscript:\n%s", step, name, got, want, clip(script))
					}
					if tb := table(d, name); tb != nil && tb.Schema == "" {
						checkRowValues(t, tb, old, nw)
					}
				}
				checkSQL(t, d, old, nw)
				old = nw
			}
		})
	}
}

// checkRowValues compares up to 12 of a table's reported rows with the
// same rows as sqlite3 reads them: an insert's and an update's new values
// in the new file, a delete's and an update's old values in the old one.
func checkRowValues(t *testing.T, tb *rowdiff.Table, oldFile, newFile string) {
	t.Helper()
	oldCols := tb.OldColumns
	if len(oldCols) == 0 {
		oldCols = tb.Columns
	}
	for i, r := range tb.Rows {
		if i == 12 {
			break
		}
		var where []string
		for k, col := range tb.Key {
			where = append(where, fmt.Sprintf("%s IS %s", col, sqlLiteral(r.Key[k])))
		}
		w := strings.Join(where, " AND ")
		if r.Change != "delete" {
			if got, want := cellsText(r.New), rowText(t, newFile, tb.Name, tb.Columns, w); !sameRows(got, want) {
				t.Fatalf("%s %s row %s: new values %s, sqlite3 %s", tb.Name, r.Change, w, got, want)
			}
		}
		if r.Change != "insert" {
			if got, want := cellsText(r.Old), rowText(t, oldFile, tb.Name, oldCols, w); !sameRows(got, want) {
				t.Fatalf("%s %s row %s: old values %s, sqlite3 %s", tb.Name, r.Change, w, got, want)
			}
		}
	}
}

// sqlLiteral writes a cell as a SQL literal of its type.
func sqlLiteral(c sqlitedb.Cell) string {
	switch c.Kind {
	case sqlitedb.Integer:
		return strconv.FormatInt(c.Int, 10)
	case sqlitedb.Real:
		return strconv.FormatFloat(c.Real, 'g', -1, 64)
	case sqlitedb.Text:
		return fmt.Sprintf("CAST(X'%X' AS TEXT)", c.Text)
	case sqlitedb.Blob:
		return fmt.Sprintf("X'%X'", c.Blob)
	}
	return "NULL"
}

// cellsText writes cells as rowText writes a row: each as its type and
// its value (reals to 17 digits, texts and blobs in hex), one a line.
func cellsText(cells []sqlitedb.Cell) string {
	var b strings.Builder
	for _, c := range cells {
		switch c.Kind {
		case sqlitedb.Integer:
			fmt.Fprintf(&b, "integer:%d\n", c.Int)
		case sqlitedb.Real:
			fmt.Fprintf(&b, "real:%s\n", strconv.FormatFloat(c.Real, 'e', 16, 64))
		case sqlitedb.Text:
			fmt.Fprintf(&b, "text:%X\n", c.Text)
		case sqlitedb.Blob:
			fmt.Fprintf(&b, "blob:%X\n", c.Blob)
		default:
			b.WriteString("null:\n")
		}
	}
	return b.String()
}

// rowText is the row of table where w holds, read by sqlite3 (one query),
// column by column as cellsText writes cells.
func rowText(t *testing.T, file, table string, cols []string, w string) string {
	t.Helper()
	var sel []string
	for _, col := range cols {
		sel = append(sel, fmt.Sprintf("typeof(%[1]s) || ':' || CASE typeof(%[1]s) WHEN 'real' THEN printf('%%.17g', %[1]s) WHEN 'integer' THEN %[1]s WHEN 'null' THEN '' ELSE hex(%[1]s) END", col))
	}
	out := sqlitetest.Query(t, file, fmt.Sprintf("SELECT %s FROM %s WHERE %s", strings.Join(sel, ", "), table, w))
	var b strings.Builder
	for _, v := range strings.Split(out, "|") {
		if rv, ok := strings.CutPrefix(v, "real:"); ok {
			f, err := strconv.ParseFloat(rv, 64)
			if err != nil {
				t.Fatalf("sqlite3 printed %q for a real", rv)
			}
			v = "real:" + strconv.FormatFloat(f, 'e', 16, 64)
		}
		b.WriteString(v + "\n")
	}
	return b.String()
}

// sameRows compares cellsText and rowText lines: exactly, but for reals,
// which sqlite3's printf writes to about 15 exact digits (its own
// formatting, not a shortest round trip), within a relative 1e-14.
func sameRows(got, want string) bool {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	if len(g) != len(w) {
		return false
	}
	for i := range g {
		if g[i] == w[i] {
			continue
		}
		gv, ok1 := strings.CutPrefix(g[i], "real:")
		wv, ok2 := strings.CutPrefix(w[i], "real:")
		if !ok1 || !ok2 {
			return false
		}
		a, err1 := strconv.ParseFloat(gv, 64)
		b, err2 := strconv.ParseFloat(wv, 64)
		if err1 != nil || err2 != nil || math.Abs(a-b) > 1e-14*math.Max(math.Abs(a), math.Abs(b)) {
			return false
		}
	}
	return true
}
