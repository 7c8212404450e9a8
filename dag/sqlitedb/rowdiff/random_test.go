package rowdiff_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/dag/sqlitedb/sqlitetest"
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
				}
				checkSQL(t, d, old, nw)
				old = nw
			}
		})
	}
}
