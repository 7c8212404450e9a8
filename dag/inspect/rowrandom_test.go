package inspect_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/dag/sqlitedb/sqlitetest"
	"github.com/agentstate/agentstate/runtime"
)

// TestRowHistoryAndBlameAgainstSQLite: a memory.db changed by runtime
// tasks running random edit scripts (sqlitetest.Editor: inserts, updates
// and deletes in a rowid table, a WITHOUT ROWID table and an FTS5 table,
// overflowing values, VACUUM, other tables created, dropped and altered).
// The blame of each of those tables at HEAD, and the history of rows
// that changed, must be what sqlite3 finds comparing each task's file with
// the one before: a row is blamed on the last task that inserted or
// changed it, and its history lists every task that inserted, changed or
// deleted it, newest first. Queries at each task's commit must print what
// sqlite3 prints on that task's file. Then rows are reverted one by one (revert
// --row of the task that last changed them): each commit's database must be
// what sqlite3 makes running the inverse statement on HEAD's file (the
// table's triggers run, as they do in the revert), and a row a later task
// changed to something else again must be refused, changing nothing.
func TestRowHistoryAndBlameAgainstSQLite(t *testing.T) {
	const tasks = 6
	for seed := range sqlitetest.Seeds(1, 3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			ctx := context.Background()
			dir, work := t.TempDir(), t.TempDir()
			key := sha256.Sum256([]byte("operator"))
			rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(key[:]), NoServe: true})
			if err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(work, "memory.db")
			sqlitetest.Query(t, db, sqlitetest.BaseSQL(3000))
			empty := filepath.Join(work, "empty.db")
			sqlitetest.Query(t, empty, "VACUUM")
			files := []string{empty}
			ed := sqlitetest.NewEditor(uint64(seed) + 100)
			for i := range tasks + 1 {
				if i > 0 {
					script, _ := ed.Script()
					edits := filepath.Join(work, fmt.Sprintf("edits-%d.sql", i))
					if err := os.WriteFile(edits, []byte(script), 0o644); err != nil {
						t.Fatal(err)
					}
					sqlitetest.Query(t, db, ".read "+edits)
				}
				content, err := os.ReadFile(db)
				if err != nil {
					t.Fatal(err)
				}
				file := filepath.Join(work, fmt.Sprintf("v%d.db", i))
				if err := os.WriteFile(file, content, 0o644); err != nil {
					t.Fatal(err)
				}
				files = append(files, file)
				if _, err := rt.RunTask(ctx, "a", runtime.Task{ID: fmt.Sprintf("t%d", i)}, func(ctx context.Context, tx *runtime.Tx) error {
					return tx.Put(ctx, "memory.db", content)
				}); err != nil {
					t.Fatal(err)
				}
			}
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			r, err := repo.Open(dir, repo.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			v := inspect.New(r)

			type change struct{ ins, del, upd map[string]bool }
			type rowChange struct {
				table, key string
				task       int
				later      bool // a later task changed the row too
			}
			var touched []rowChange
			// Queries at every task's commit, against sqlite3 on its file.
			for i := range tasks + 1 {
				for _, q := range []string{
					"SELECT id, role, length(body), substr(body, 1, 12), hex(substr(body, -8)), score, typeof(raw) FROM messages ORDER BY id",
					"SELECT count(*), sum(length(body)), max(id) FROM messages WHERE role = 'tool'",
					"SELECT * FROM facts ORDER BY subject DESC, predicate",
					"SELECT rowid, title, length(body) FROM notes WHERE notes MATCH 'a* OR e*' ORDER BY rowid",
					"SELECT type, name, tbl_name FROM sqlite_schema ORDER BY name",
				} {
					res, err := v.SQL(ctx, "a", fmt.Sprintf("task:t%d", i), "memory.db", q, inspect.SQLLimits{})
					if err != nil {
						t.Fatalf("sql at task:t%d %s: %v", i, q, err)
					}
					if got, want := listMode(res), sqlite3Out(t, files[i+1], q); got != want {
						t.Fatalf("sql at task:t%d %s:\ngot  %.300q\nwant %.300q", i, q, got, want)
					}
				}
			}

			for _, table := range []string{"messages", "facts", "notes"} {
				// The oracle: each task's inserted, deleted and updated rows.
				changes := make([]change, len(files)-1) // changes[i]: task t<i>
				for i := range changes {
					ins, del, upd := sqlitetest.Changes(t, files[i], files[i+1], table)
					changes[i] = change{set(ins), set(del), set(upd)}
				}
				last := map[string]int{}
				for i, c := range changes {
					for k := range c.del {
						delete(last, k)
					}
					for k := range c.ins {
						last[k] = i
					}
					for k := range c.upd {
						last[k] = i
					}
				}

				for i, c := range changes {
					for _, m := range []map[string]bool{c.ins, c.del, c.upd} {
						for k := range m {
							later := false
							for _, d := range changes[i+1:] {
								later = later || d.ins[k] || d.del[k] || d.upd[k]
							}
							touched = append(touched, rowChange{table, k, i, later})
						}
					}
				}

				b, err := v.BlameRows(ctx, "a", "", "memory.db", table)
				if err != nil {
					t.Fatalf("blame %s: %v", table, err)
				}
				got := map[string]string{}
				for _, row := range b.Rows {
					got[literal(row.Key)] = row.Task
				}
				if len(got) != len(last) {
					t.Fatalf("blame %s: %d rows, sqlite3 has %d", table, len(got), len(last))
				}
				for k, i := range last {
					if want := fmt.Sprintf("t%d", i); got[k] != want {
						t.Fatalf("blame %s row %s: %q, want %q", table, k, got[k], want)
					}
				}

				// The history of rows that changed after the first task,
				// and of one that did not.
				var keys []string
				for _, c := range changes[1:] {
					keys = slices.AppendSeq(keys, maps.Keys(c.ins))
					keys = slices.AppendSeq(keys, maps.Keys(c.del))
					keys = slices.AppendSeq(keys, maps.Keys(c.upd))
				}
				slices.Sort(keys)
				keys = slices.Compact(keys)
				rng := rand.New(rand.NewPCG(uint64(seed), 7))
				rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
				keys = keys[:min(len(keys), 12)]
				for k := range changes[0].ins {
					if last[k] == 0 {
						keys = append(keys, k)
						break
					}
				}
				for _, k := range keys {
					var want []string
					for i := len(changes) - 1; i >= 0; i-- {
						c := changes[i]
						switch {
						case c.ins[k]:
							want = append(want, fmt.Sprintf("t%d insert", i))
						case c.upd[k]:
							want = append(want, fmt.Sprintf("t%d update", i))
						case c.del[k]:
							want = append(want, fmt.Sprintf("t%d delete", i))
						}
					}
					h, err := v.RowHistory(ctx, "a", "", "memory.db", table+":"+rowRef(t, k), 0)
					if err != nil {
						t.Fatalf("history of %s %s: %v", table, k, err)
					}
					var hist []string
					for _, ver := range h.Versions {
						hist = append(hist, ver.Task+" "+ver.Change)
					}
					if os.Getenv("ROWDIFF_RANDOM_SHOW") != "" {
						t.Logf("%s %s: %v", table, k, hist)
					}
					if strings.Join(hist, ", ") != strings.Join(want, ", ") {
						t.Fatalf("history of %s %s: %v, sqlite3 %v", table, k, hist, want)
					}
				}
			}

			// Reverts, one row at a time, of tasks after the first.
			slices.SortFunc(touched, func(a, b rowChange) int {
				return strings.Compare(fmt.Sprint(a.table, a.key, a.task), fmt.Sprint(b.table, b.key, b.task))
			})
			rng := rand.New(rand.NewPCG(uint64(seed), 9))
			rng.Shuffle(len(touched), func(i, j int) { touched[i], touched[j] = touched[j], touched[i] })
			head := files[len(files)-1]
			done, refused := map[string]bool{}, 0
			for _, rc := range touched {
				if rc.task == 0 || done[rc.table+rc.key] || (rc.later && refused >= 3) || len(done) >= 8 {
					continue
				}
				before, after := files[rc.task], files[rc.task+1]
				rev, ref := fmt.Sprintf("task:t%d", rc.task), rc.table+":"+rowRef(t, rc.key)
				atHead := rowValues(t, head, rc.table, rc.key)
				if rc.later && atHead != rowValues(t, after, rc.table, rc.key) && atHead != rowValues(t, before, rc.table, rc.key) {
					_, err := v.RevertRow(ctx, "a", rev, "memory.db", ref, inspect.WriteOptions{})
					var ce *inspect.RowConflictError
					if !errors.As(err, &ce) || !strings.Contains(err.Error(), ref) {
						t.Fatalf("revert %s %s, changed later too: %v, want a conflict naming the row", rev, ref, err)
					}
					if got := checkoutDB(t, r, "a", "refused.db"); sqlitetest.Query(t, got, "SELECT 1") != "1" || sqldiff(t, head, got) != "" {
						t.Fatalf("a refused revert changed the database")
					}
					if os.Getenv("ROWDIFF_RANDOM_SHOW") != "" {
						t.Logf("refused %s %s", rev, ref)
					}
					refused++
					continue
				}
				if rc.later {
					continue // changed later, and back: not this test's case
				}
				want := filepath.Join(work, fmt.Sprintf("want-%d.db", len(done)))
				data, err := os.ReadFile(head)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(want, data, 0o644); err != nil {
					t.Fatal(err)
				}
				sqlitetest.Query(t, want, "ATTACH '"+before+"' AS o; "+inverse(t, before, head, rc.table, rc.key))
				if _, err := v.RevertRow(ctx, "a", rev, "memory.db", ref, inspect.WriteOptions{}); err != nil {
					t.Fatalf("revert %s %s: %v", rev, ref, err)
				}
				got := checkoutDB(t, r, "a", fmt.Sprintf("got-%d.db", len(done)))
				if out := sqldiff(t, want, got); out != "" {
					t.Fatalf("revert %s %s: sqldiff against sqlite3's revert:\n%s", rev, ref, out)
				}
				if os.Getenv("ROWDIFF_RANDOM_SHOW") != "" {
					t.Logf("reverted %s %s", rev, ref)
				}
				done[rc.table+rc.key] = true
				head = got
			}
			if len(done) == 0 {
				t.Fatal("no row was reverted")
			}
		})
	}
}

// rowValues is the row of table at key in file as sqlite3 quotes its
// columns, "" when there is none.
func rowValues(t *testing.T, file, table, key string) string {
	t.Helper()
	var cols []string
	for _, c := range strings.Split(sqlitetest.Query(t, file, fmt.Sprintf("SELECT name FROM pragma_table_info('%s')", table)), "\n") {
		cols = append(cols, "quote("+c+")")
	}
	return sqlitetest.Query(t, file, fmt.Sprintf("SELECT %s FROM %s WHERE %s", strings.Join(cols, " || ',' || "), table, where(table, key)))
}

// where selects the row of table at key (a rowid, or facts' two texts).
func where(table, key string) string {
	if table == "facts" {
		return "(subject, predicate) = (" + key + ")"
	}
	return "rowid = " + key
}

// inverse is the statement that puts back the row of table at key as the
// database attached as o (before, the file before the change) holds it,
// in head: deleted, inserted, or its columns updated (so that the table's
// triggers run as they would for that statement).
func inverse(t *testing.T, before, head, table, key string) string {
	t.Helper()
	cols := strings.Join(strings.Split(sqlitetest.Query(t, before, fmt.Sprintf("SELECT name FROM pragma_table_info('%s')", table)), "\n"), ", ")
	w := where(table, key)
	in := func(file string) bool {
		return sqlitetest.Query(t, file, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", table, w)) != "0"
	}
	switch {
	case !in(before):
		return fmt.Sprintf("DELETE FROM main.%s WHERE %s", table, w)
	case !in(head):
		if table != "facts" {
			cols = "rowid, " + cols
		}
		return fmt.Sprintf("INSERT INTO main.%s(%s) SELECT %s FROM o.%s WHERE %s", table, cols, cols, table, w)
	default:
		return fmt.Sprintf("UPDATE main.%s SET (%s) = (SELECT %s FROM o.%s WHERE %s) WHERE %s", table, cols, cols, table, w, w)
	}
}

// sqldiff is what sqldiff finds between two files ("" when none).
func sqldiff(t *testing.T, a, b string) string {
	t.Helper()
	out, err := exec.Command("sqldiff", a, b).CombinedOutput()
	if err != nil {
		t.Fatalf("sqldiff: %v\n%s", err, out)
	}
	return string(out)
}

func set(keys []string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}

// literal writes a key as sqlite3's quote() does, its columns joined by
// commas.
func literal(key []inspect.SQLCell) string {
	var parts []string
	for _, c := range key {
		switch c.Kind {
		case sqlitedb.Integer:
			parts = append(parts, strconv.FormatInt(c.Int, 10))
		case sqlitedb.Text:
			parts = append(parts, "'"+strings.ReplaceAll(c.Text, "'", "''")+"'")
		case sqlitedb.Blob:
			parts = append(parts, "X'"+strings.ToUpper(hex.EncodeToString(c.Blob))+"'")
		default:
			parts = append(parts, fmt.Sprintf("%v", c))
		}
	}
	return strings.Join(parts, ",")
}

// rowRef turns a key written by quote() (integers, or texts without commas
// or quotes) into log --row's PK: the rowid, or a JSON array of texts.
func rowRef(t *testing.T, k string) string {
	t.Helper()
	if _, err := strconv.ParseInt(k, 10, 64); err == nil {
		return k
	}
	var texts []string
	for _, p := range strings.Split(k, ",") {
		if len(p) < 2 || p[0] != '\'' || p[len(p)-1] != '\'' {
			t.Fatalf("key %s: not texts", k)
		}
		texts = append(texts, p[1:len(p)-1])
	}
	js, err := json.Marshal(texts)
	if err != nil {
		t.Fatal(err)
	}
	return string(js)
}
