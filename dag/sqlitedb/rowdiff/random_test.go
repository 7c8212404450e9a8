package rowdiff_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestRandomEditsAgainstSQLite: chains of versions of a brain's memory.db,
// each made from the one before by a random script of edits (inserts,
// updates and deletes in rowid, WITHOUT ROWID, BLOB-keyed and FTS5
// tables, values long enough to overflow, a trigger's rows, and now and
// then a VACUUM, a column added, a table created or dropped), are diffed
// page by page and checked against SQLite itself: the per-table counts
// against what sqlite3 counts by joining the two files on each table's
// key, and the SQL against sqldiff after sqlite3 applies it.
func TestRandomEditsAgainstSQLite(t *testing.T) {
	seeds, steps := 6, 4
	if testing.Short() {
		seeds = 2
	}
	if s := os.Getenv("ROWDIFF_RANDOM_SEEDS"); s != "" {
		seeds, _ = strconv.Atoi(s)
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 24))
			ed := &editor{rng: rng, nextID: 3001, tables: map[string]bool{}}
			old := baseDB(t, 3000)
			for step := range steps {
				script, schema := ed.script()
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
					want := sqliteCounts(t, old, nw, name)
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
				}
				checkSQL(t, d, old, nw)
				old = nw
			}
		})
	}
}

// editor writes random edit scripts for baseDB's schema, remembering what
// the scripts before made (the next message id, the tables that exist).
type editor struct {
	rng    *rand.Rand
	nextID int
	tables map[string]bool // "extra" while it exists, "blobs" once dropped
	added  bool            // counter has the column "note"
}

// script returns one version's edits, and the tables whose schema it
// changes (their counts are not compared).
func (e *editor) script() (string, map[string]bool) {
	var b strings.Builder
	schema := map[string]bool{}
	r := e.rng
	text := func(n int) string {
		const letters = "abcdefghijklmnopqrstuvwxyz "
		var s strings.Builder
		for range n {
			s.WriteByte(letters[r.IntN(len(letters))])
		}
		return s.String()
	}
	length := func() int {
		if r.IntN(6) == 0 {
			return 3000 + r.IntN(9000) // overflows a 4 KiB page
		}
		return 1 + r.IntN(200)
	}
	for range 3 + r.IntN(12) {
		switch r.IntN(14) {
		case 0, 1:
			for range 1 + r.IntN(20) {
				fmt.Fprintf(&b, "INSERT INTO messages(id, role, body, score) VALUES(%d, 'user', '%s', %d.5);\n", e.nextID, text(length()), r.IntN(100))
				e.nextID++
			}
		case 2, 3:
			for range 1 + r.IntN(10) {
				fmt.Fprintf(&b, "UPDATE messages SET body = '%s', score = %d.25 WHERE id = %d;\n", text(length()), r.IntN(100), 1+r.IntN(e.nextID))
			}
		case 4:
			lo := 1 + r.IntN(e.nextID)
			fmt.Fprintf(&b, "DELETE FROM messages WHERE id BETWEEN %d AND %d;\n", lo, lo+r.IntN(40))
		case 5:
			fmt.Fprintf(&b, "UPDATE messages SET role = 'tool' WHERE id %% %d = %d;\n", 7+r.IntN(30), r.IntN(7))
		case 6:
			s, p := fmt.Sprintf("s%d", r.IntN(10)), fmt.Sprintf("p%d", r.IntN(4))
			fmt.Fprintf(&b, "INSERT OR REPLACE INTO facts VALUES('%s', '%s', '%s');\n", s, p, text(length()))
		case 7:
			fmt.Fprintf(&b, "DELETE FROM facts WHERE subject = 's%d';\n", r.IntN(10))
			if e.tables["extra"] {
				k := r.IntN(40)
				fmt.Fprintf(&b, "INSERT OR REPLACE INTO extra VALUES('k%d', '%s');\nDELETE FROM extra WHERE k = 'k%d';\n", k, text(length()), r.IntN(40))
			}
		case 8:
			if !e.tables["blobs"] {
				fmt.Fprintf(&b, "INSERT OR REPLACE INTO blobs VALUES(x'%02x%02x', '%s');\n", r.IntN(256), r.IntN(256), text(length()))
				fmt.Fprintf(&b, "DELETE FROM blobs WHERE k = x'%02x%02x';\n", r.IntN(256), r.IntN(256))
			}
		case 9:
			fmt.Fprintf(&b, "INSERT INTO notes VALUES('%s', '%s');\n", text(10), text(length()))
			fmt.Fprintf(&b, "UPDATE notes SET body = '%s' WHERE rowid = %d;\n", text(30), 1+r.IntN(10))
			fmt.Fprintf(&b, "DELETE FROM notes WHERE rowid = %d;\n", 1+r.IntN(10))
		case 10:
			fmt.Fprintf(&b, "INSERT INTO counter(n) VALUES(%d);\nINSERT INTO log(at, what) VALUES('by hand', '%s');\n", r.IntN(1000), text(length()))
		case 11:
			if r.IntN(3) == 0 {
				b.WriteString("VACUUM;\n") // every page may move
			}
		case 12:
			switch {
			case !e.tables["extra"] && r.IntN(2) == 0:
				b.WriteString("CREATE TABLE extra(k TEXT PRIMARY KEY, v) WITHOUT ROWID;\n")
				for i := range 1 + r.IntN(30) {
					fmt.Fprintf(&b, "INSERT INTO extra VALUES('k%d', '%s');\n", i, text(length()))
				}
				e.tables["extra"], schema["extra"] = true, true
			case e.tables["extra"] && r.IntN(2) == 0:
				b.WriteString("DROP TABLE extra;\n")
				e.tables["extra"], schema["extra"] = false, true
			case !e.added:
				b.WriteString("ALTER TABLE counter ADD COLUMN note TEXT DEFAULT 'none';\n")
				e.added, schema["counter"] = true, true
			}
		case 13:
			if !e.tables["blobs"] && r.IntN(4) == 0 {
				b.WriteString("DROP TABLE blobs;\n")
				e.tables["blobs"], schema["blobs"] = true, true
			}
		}
	}
	return b.String(), schema
}

// sqliteCounts counts with sqlite3 the rows of table name inserted,
// deleted and updated from oldFile to newFile, matching rows by rowid (by
// the primary key in a WITHOUT ROWID table) and comparing every column by
// value and type. A table in neither file counts nothing.
func sqliteCounts(t *testing.T, oldFile, newFile, name string) [3]int {
	t.Helper()
	query := func(file, q string) string { return strings.TrimSpace(run(t, "sqlite3", file, q)) }
	exists := func(file string) bool {
		return query(file, fmt.Sprintf("SELECT count(*) FROM sqlite_schema WHERE name = '%s'", name)) == "1"
	}
	inOld, inNew := exists(oldFile), exists(newFile)
	if !inOld && !inNew {
		return [3]int{}
	}
	file := newFile
	if !inNew {
		file = oldFile
	}
	count := func(q string) int {
		n, err := strconv.Atoi(query(newFile, "ATTACH '"+oldFile+"' AS o; "+q))
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	switch {
	case !inOld:
		return [3]int{count(fmt.Sprintf("SELECT count(*) FROM main.%s", name)), 0, 0}
	case !inNew:
		return [3]int{0, count(fmt.Sprintf("SELECT count(*) FROM o.%s", name)), 0}
	}
	cols := strings.Split(query(file, fmt.Sprintf("SELECT name FROM pragma_table_info('%s')", name)), "\n")
	// Each side as a subquery whose key columns are named k0, k1, ...
	rows := func(schema string) string {
		if strings.Contains(query(file, fmt.Sprintf("SELECT sql FROM sqlite_schema WHERE name = '%s'", name)), "WITHOUT ROWID") {
			pk := strings.Split(query(file, fmt.Sprintf("SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('%s') WHERE pk > 0 ORDER BY pk)", name)), ",")
			var ks []string
			for i, k := range pk {
				ks = append(ks, fmt.Sprintf("%s AS k%d", k, i))
			}
			return fmt.Sprintf("(SELECT %s, * FROM %s.%s)", strings.Join(ks, ", "), schema, name)
		}
		return fmt.Sprintf("(SELECT rowid AS k0, * FROM %s.%s)", schema, name)
	}
	nk := strings.Count(rows("main"), " AS k")
	var on, same []string
	for i := range nk {
		on = append(on, fmt.Sprintf("a.k%d IS b.k%d", i, i))
	}
	for _, c := range cols {
		same = append(same, fmt.Sprintf("a.%s IS b.%s AND typeof(a.%s) = typeof(b.%s)", c, c, c, c))
	}
	join := strings.Join(on, " AND ")
	return [3]int{
		count(fmt.Sprintf("SELECT count(*) FROM %s a WHERE NOT EXISTS (SELECT 1 FROM %s b WHERE %s)", rows("main"), rows("o"), join)),
		count(fmt.Sprintf("SELECT count(*) FROM %s a WHERE NOT EXISTS (SELECT 1 FROM %s b WHERE %s)", rows("o"), rows("main"), join)),
		count(fmt.Sprintf("SELECT count(*) FROM %s a JOIN %s b ON %s WHERE NOT (%s)", rows("main"), rows("o"), join, strings.Join(same, " AND "))),
	}
}
