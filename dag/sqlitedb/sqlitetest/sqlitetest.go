// Package sqlitetest has what tests of SQLite values share: random edit
// scripts for a brain's memory.db, and SQLite itself (the sqlite3 command)
// as the oracle of what changed between two files.
package sqlitetest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// BaseSQL makes a brain's memory.db with rows messages: rowid tables (with
// and without an INTEGER PRIMARY KEY), a WITHOUT ROWID table with a
// composite key, one with a BLOB key, an AUTOINCREMENT table, an FTS5
// table, an index and a trigger. Editor's scripts are written for it.
func BaseSQL(rows int) string {
	return `PRAGMA page_size=4096;
CREATE TABLE messages(id INTEGER PRIMARY KEY, role TEXT NOT NULL, body TEXT, score REAL, raw BLOB);
CREATE TABLE log(at TEXT, what TEXT);
CREATE TABLE facts(subject TEXT, predicate TEXT, object TEXT, PRIMARY KEY(subject, predicate)) WITHOUT ROWID;
CREATE TABLE blobs(k BLOB PRIMARY KEY, v) WITHOUT ROWID;
CREATE TABLE counter(id INTEGER PRIMARY KEY AUTOINCREMENT, n);
CREATE VIRTUAL TABLE notes USING fts5(title, body);
CREATE INDEX messages_role ON messages(role);
CREATE TRIGGER log_msg AFTER INSERT ON messages BEGIN INSERT INTO log VALUES('t', 'insert ' || new.id); END;
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<` + strconv.Itoa(rows) + `)
INSERT INTO messages SELECT x, CASE x%3 WHEN 0 THEN 'user' WHEN 1 THEN 'assistant' ELSE 'tool' END,
  'message ' || x || ' ' || hex(randomblob(40)), x/7.0, CASE WHEN x%5=0 THEN randomblob(8) END FROM c;
INSERT INTO messages VALUES(-5, 'user', NULL, 1e300, x'00ff10');
INSERT INTO facts VALUES('lumen','is','an agent'),('lumen','likes','reentrancy checks'),('sky','is','blue');
INSERT INTO blobs VALUES(x'0001', 1), (x'ff', 'two');
INSERT INTO counter(n) VALUES(1),(2),(3);
INSERT INTO notes VALUES('reentrancy','check external calls'),('access control','owner checks'),('gas','loops over storage');`
}

// Seeds is how many random histories a test runs: short under -short,
// else full, or what ROWDIFF_RANDOM_SEEDS says (for a longer hunt).
func Seeds(short, full int) int {
	if s := os.Getenv("ROWDIFF_RANDOM_SEEDS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			return n
		}
	}
	if testing.Short() {
		return short
	}
	return full
}

// NewEditor returns an Editor whose scripts follow from seed.
func NewEditor(seed uint64) *Editor {
	return &Editor{rng: rand.New(rand.NewPCG(seed, 24)), nextID: 3001, tables: map[string]bool{}}
}

// Editor writes random edit scripts for a brain's memory.db as the tests
// build it (messages with a trigger writing log, facts WITHOUT ROWID,
// blobs with a BLOB key, counter with AUTOINCREMENT, notes in FTS5, and
// messages ids up to 3000), remembering what the scripts before made (the
// next message id, the tables that exist).
type Editor struct {
	rng    *rand.Rand
	nextID int
	tables map[string]bool // "extra" while it exists, "blobs" once dropped
	added  bool            // counter has the column "note"
}

// Script returns one version's edits, and the tables whose schema it
// changes (their counts are not compared).
func (e *Editor) Script() (string, map[string]bool) {
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

// Query runs sqlite3 on file and returns its output, trimmed.
func Query(t testing.TB, file, sql string) string {
	t.Helper()
	out, err := exec.Command("sqlite3", file, sql).CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3 %s: %v\n%s", file, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Changes lists with sqlite3 the rows of table name inserted, deleted and
// updated from oldFile to newFile, matching rows by rowid (by the primary
// key in a WITHOUT ROWID table) and comparing every column by value and
// type. Each row is named by its key's values as SQL literals (quote()),
// joined by commas. A table in neither file changes nothing; a table in
// one only had every row inserted (or deleted).
func Changes(t testing.TB, oldFile, newFile, name string) (inserted, deleted, updated []string) {
	t.Helper()
	exists := func(file string) bool {
		return Query(t, file, fmt.Sprintf("SELECT count(*) FROM sqlite_schema WHERE name = '%s'", name)) == "1"
	}
	inOld, inNew := exists(oldFile), exists(newFile)
	if !inOld && !inNew {
		return nil, nil, nil
	}
	file := newFile
	if !inNew {
		file = oldFile
	}
	// Each side as a subquery whose key columns are named k0, k1, ...
	var keys []string
	if strings.Contains(Query(t, file, fmt.Sprintf("SELECT sql FROM sqlite_schema WHERE name = '%s'", name)), "WITHOUT ROWID") {
		keys = strings.Split(Query(t, file, fmt.Sprintf("SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('%s') WHERE pk > 0 ORDER BY pk)", name)), ",")
	} else {
		keys = []string{"rowid"}
	}
	rows := func(schema string) string {
		var ks []string
		for i, k := range keys {
			ks = append(ks, fmt.Sprintf("%s AS k%d", k, i))
		}
		return fmt.Sprintf("(SELECT %s, * FROM %s.%s)", strings.Join(ks, ", "), schema, name)
	}
	var on, named []string
	for i := range keys {
		on = append(on, fmt.Sprintf("a.k%d IS b.k%d", i, i))
		named = append(named, fmt.Sprintf("quote(a.k%d)", i))
	}
	list := func(q string) []string {
		out := Query(t, newFile, "ATTACH '"+oldFile+"' AS o; "+q)
		if out == "" {
			return nil
		}
		return strings.Split(out, "\n")
	}
	key := strings.Join(named, " || ',' || ")
	join := strings.Join(on, " AND ")
	switch {
	case !inOld:
		return list(fmt.Sprintf("SELECT %s FROM %s a", key, rows("main"))), nil, nil
	case !inNew:
		return nil, list(fmt.Sprintf("SELECT %s FROM %s a", key, rows("o"))), nil
	}
	var same []string
	for _, c := range strings.Split(Query(t, file, fmt.Sprintf("SELECT name FROM pragma_table_info('%s')", name)), "\n") {
		same = append(same, fmt.Sprintf("a.%s IS b.%s AND typeof(a.%s) = typeof(b.%s)", c, c, c, c))
	}
	inserted = list(fmt.Sprintf("SELECT %s FROM %s a WHERE NOT EXISTS (SELECT 1 FROM %s b WHERE %s)", key, rows("main"), rows("o"), join))
	deleted = list(fmt.Sprintf("SELECT %s FROM %s a WHERE NOT EXISTS (SELECT 1 FROM %s b WHERE %s)", key, rows("o"), rows("main"), join))
	updated = list(fmt.Sprintf("SELECT %s FROM %s a JOIN %s b ON %s WHERE NOT (%s)", key, rows("main"), rows("o"), join, strings.Join(same, " AND ")))
	return inserted, deleted, updated
}

// Counts is Changes counted: rows inserted, deleted and updated.
func Counts(t testing.TB, oldFile, newFile, name string) [3]int {
	t.Helper()
	i, d, u := Changes(t, oldFile, newFile, name)
	return [3]int{len(i), len(d), len(u)}
}
