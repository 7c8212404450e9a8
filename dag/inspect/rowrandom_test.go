package inspect_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
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
// deleted it, newest first.
func TestRowHistoryAndBlameAgainstSQLite(t *testing.T) {
	seeds, tasks := 3, 6
	if testing.Short() {
		seeds = 1
	}
	if s := os.Getenv("ROWDIFF_RANDOM_SEEDS"); s != "" {
		seeds, _ = strconv.Atoi(s)
	}
	for seed := range seeds {
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
			r, err := repo.Open(dir, repo.Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			v := inspect.New(r)

			for _, table := range []string{"messages", "facts", "notes"} {
				// The oracle: each task's inserted, deleted and updated rows.
				type change struct{ ins, del, upd map[string]bool }
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
		})
	}
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
