package rowdiff_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/sqlitedb/rowdiff"
	"github.com/agentstate/agentstate/objects/memstore"
)

// countsDB is a database whose rowid tables hold every storage class, REAL
// and NUMERIC affinity, values that spill to overflow pages, a column
// added by ALTER TABLE after rows were written (so old records have fewer
// fields), a non-integer primary key and a generated column.
func countsDB(t *testing.T, rng *rand.Rand) string {
	t.Helper()
	var sql strings.Builder
	sql.WriteString(`PRAGMA page_size=4096;
CREATE TABLE t1(id INTEGER PRIMARY KEY, a TEXT, b REAL, c INTEGER, d BLOB, e NUMERIC, f);
CREATE TABLE t2(x TEXT, y REAL);
CREATE TABLE t3(k TEXT PRIMARY KEY, v);
CREATE TABLE t4(id INTEGER PRIMARY KEY, a, g AS (a || 'x') VIRTUAL);
BEGIN;
`)
	for i := 1; i <= 1500; i++ {
		fmt.Fprintf(&sql, "INSERT INTO t1 VALUES(%d, %s, %s, %s, %s, %s, %s);\n", i, value(rng), real(rng), value(rng), value(rng), value(rng), value(rng))
	}
	for i := 1; i <= 400; i++ {
		fmt.Fprintf(&sql, "INSERT INTO t2 VALUES(%s, %s);\n", value(rng), real(rng))
		fmt.Fprintf(&sql, "INSERT INTO t3 VALUES('k%d', %s);\n", i, value(rng))
		fmt.Fprintf(&sql, "INSERT INTO t4(id, a) VALUES(%d, %s);\n", i, value(rng))
	}
	sql.WriteString("COMMIT;\nALTER TABLE t2 ADD COLUMN z DEFAULT 7;\n")
	dir := t.TempDir()
	file, script := filepath.Join(dir, "memory.db"), filepath.Join(dir, "make.sql")
	if err := os.WriteFile(script, []byte(sql.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "sqlite3", file, ".read "+script)
	return file
}

// value is a random SQL literal of any storage class, now and then one
// that spills to overflow pages.
func value(rng *rand.Rand) string {
	switch rng.Intn(9) {
	case 0:
		return "NULL"
	case 1:
		return fmt.Sprint(rng.Intn(3) - 1) // 0 and 1 are stored as serial types 8 and 9
	case 2:
		return fmt.Sprint(rng.Int63() >> uint(rng.Intn(63)))
	case 3:
		return fmt.Sprintf("%d.%d", rng.Intn(100), rng.Intn(3)) // .0: integral
	case 4:
		return fmt.Sprintf("x'%016x'", rng.Int63())
	case 5:
		if rng.Intn(20) == 0 {
			return fmt.Sprintf("printf('%%.*c', %d, 'x')", 3000+rng.Intn(3000))
		}
		return fmt.Sprintf("'%d'", rng.Intn(50)) // text that NUMERIC affinity turns into a number
	default:
		return fmt.Sprintf("'text %d'", rng.Intn(1000))
	}
}

// real is a random value for a REAL column, often integral.
func real(rng *rand.Rand) string {
	switch rng.Intn(4) {
	case 0:
		return fmt.Sprint(rng.Intn(20))
	case 1:
		return fmt.Sprintf("%d.0", rng.Intn(20))
	case 2:
		return fmt.Sprintf("%d.5", rng.Intn(20))
	}
	return value(rng)
}

// countsEdit is a random task's writes: updates to new values, to the same
// values, and to the same values written another way; deletes, inserts and
// replaces.
func countsEdit(rng *rand.Rand) string {
	var sql strings.Builder
	sql.WriteString("BEGIN;\n")
	for range 40 + rng.Intn(40) {
		id := 1 + rng.Intn(1500)
		switch rng.Intn(12) {
		case 0:
			fmt.Fprintf(&sql, "DELETE FROM t1 WHERE id = %d;\n", id)
		case 1:
			fmt.Fprintf(&sql, "INSERT OR REPLACE INTO t1 VALUES(%d, %s, %s, %s, %s, %s, %s);\n", id, value(rng), real(rng), value(rng), value(rng), value(rng), value(rng))
		case 2:
			fmt.Fprintf(&sql, "INSERT INTO t1(a) VALUES(%s);\n", value(rng))
		case 3:
			fmt.Fprintf(&sql, "UPDATE t1 SET a = a, b = b WHERE id = %d;\n", id)
		case 4:
			fmt.Fprintf(&sql, "UPDATE t1 SET b = CAST(b AS INTEGER) WHERE id = %d AND b = CAST(b AS INTEGER);\n", id)
		case 5:
			fmt.Fprintf(&sql, "UPDATE t1 SET b = %s WHERE id = %d;\n", real(rng), id)
		case 6:
			fmt.Fprintf(&sql, "UPDATE t1 SET e = %s, f = %s WHERE id = %d;\n", value(rng), value(rng), id)
		case 7:
			fmt.Fprintf(&sql, "UPDATE t2 SET y = y WHERE rowid = %d;\n", 1+rng.Intn(400))
		case 8:
			fmt.Fprintf(&sql, "UPDATE t2 SET x = %s WHERE rowid = %d;\n", value(rng), 1+rng.Intn(400))
		case 9:
			k := 1 + rng.Intn(400)
			fmt.Fprintf(&sql, "DELETE FROM t3 WHERE k = 'k%d'; INSERT INTO t3 VALUES('k%d', %s);\n", k, k, value(rng))
		case 10:
			fmt.Fprintf(&sql, "UPDATE t4 SET a = %s WHERE id = %d;\n", value(rng), 1+rng.Intn(400))
		default:
			fmt.Fprintf(&sql, "UPDATE t1 SET c = %s, d = %s WHERE id = %d;\n", value(rng), value(rng), id)
		}
	}
	sql.WriteString("COMMIT;\n")
	return sql.String()
}

// TestCountsAsRows: a diff computed for its counts only (Options.Counts)
// gives every table the counts the row-by-row diff does, over random
// databases and random tasks; and it settles the plain rowid tables from
// their cells, without SQLite's reads.
func TestCountsAsRows(t *testing.T) {
	readRows, readCounts := 0, 0
	for seed := range int64(8) {
		rng := rand.New(rand.NewSource(seed))
		old := countsDB(t, rng)
		nw := changed(t, old, countsEdit(rng))
		bs := &countingStore{Store: memstore.New()}
		a, b := openFile(t, bs, old), openFile(t, bs, nw)
		rows, err := rowdiff.Compute(context.Background(), a, b, rowdiff.Options{})
		if err != nil {
			t.Fatal(err)
		}
		counts, err := rowdiff.Compute(context.Background(), a, b, rowdiff.Options{Counts: true})
		if err != nil {
			t.Fatal(err)
		}
		got, want := map[string][3]int{}, map[string][3]int{}
		for _, tb := range rows.Tables {
			want[tb.Name] = [3]int{tb.Inserted, tb.Updated, tb.Deleted}
		}
		for _, tb := range counts.Tables {
			got[tb.Name] = [3]int{tb.Inserted, tb.Updated, tb.Deleted}
			if tb.Kind == "table" && len(tb.Rows) != 0 {
				t.Fatalf("seed %d: table %s has %d rows in a diff for its counts", seed, tb.Name, len(tb.Rows))
			}
		}
		readRows += rowdiff.RowsRead(rows)
		readCounts += rowdiff.RowsRead(counts)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("seed %d: counts %v, rows %v", seed, got, want)
		}
		if len(want) == 0 {
			t.Fatalf("seed %d: nothing changed", seed)
		}
	}
	// t1's rows are settled from their cells but for the few that spill;
	// t2's old records lack the column ALTER TABLE added, t3's and t4's
	// rows are read (t4 has a generated column).
	if readCounts >= readRows {
		t.Fatalf("the diffs for counts read %d rows through SQLite, the row-by-row diffs %d", readCounts, readRows)
	}
	t.Logf("rows read through SQLite: %d for counts, %d row by row", readCounts, readRows)

	// A brain's memory.db whose changed rows all fit their pages: its
	// counts are read from the cells alone.
	old := baseDB(t, 3000)
	nw := changed(t, old, `UPDATE messages SET body = 'edited' WHERE id IN (5, 700, 2900);
UPDATE messages SET score = score, role = role WHERE id = 10;
DELETE FROM messages WHERE id = 1500;
INSERT INTO messages(id, role, score) VALUES(9000, 'user', 3);`)
	bs := &countingStore{Store: memstore.New()}
	a, b := openFile(t, bs, old), openFile(t, bs, nw)
	d, err := rowdiff.Compute(context.Background(), a, b, rowdiff.Options{Counts: true})
	if err != nil {
		t.Fatal(err)
	}
	if r := rowdiff.RowsRead(d); r != 0 {
		t.Errorf("%d rows read through SQLite", r)
	}
	got := map[string][3]int{}
	for _, tb := range d.Tables {
		got[tb.Name] = [3]int{tb.Inserted, tb.Updated, tb.Deleted}
	}
	// The trigger logs the insert.
	if want := map[string][3]int{"messages": {1, 3, 1}, "log": {1, 0, 0}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("counts %v, want %v", got, want)
	}
}
