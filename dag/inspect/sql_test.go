package inspect_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/runtime"
)

func sqlite3Out(t *testing.T, file, q string) string {
	t.Helper()
	out, err := exec.Command("sqlite3", "-readonly", file, q).CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3 %q: %v\n%s", q, err, out)
	}
	return string(out)
}

func listMode(r inspect.SQLResult) string {
	var b strings.Builder
	for _, row := range r.Rows {
		for i, c := range row {
			if i > 0 {
				b.WriteByte('|')
			}
			b.WriteString(c.String())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestSQLAtEveryCommit: a query at each commit (by CID, HEAD~N, task:ID)
// equals sqlite3 on the database as that commit holds it.
func TestSQLAtEveryCommit(t *testing.T) {
	ctx := context.Background()
	s := inspecttest.NewSQLite(t)
	v := inspect.New(s.R)
	queries := []string{
		"SELECT count(*), max(id) FROM messages",
		"SELECT * FROM messages WHERE id IN (6, 7, 8, 12000, 12001) ORDER BY id",
		"SELECT * FROM facts",
		"SELECT title FROM notes WHERE notes MATCH 'storage OR owner' ORDER BY rowid",
		"SELECT name FROM sqlite_schema ORDER BY name",
	}
	for i, id := range s.Commits {
		for _, rev := range []string{id.String(), "HEAD~" + strconv.Itoa(2*(2-i)), "task:" + []string{"seed", "learn", "reshape"}[i]} {
			for _, q := range queries {
				res, err := v.SQL(ctx, inspecttest.A, rev, "memory.db", q, inspect.SQLLimits{})
				if err != nil {
					t.Fatalf("%s %s: %v", rev, q, err)
				}
				if res.Commit != id || res.Key != "memory.db" {
					t.Fatalf("%s: commit %s key %s", rev, res.Commit.Short(), res.Key)
				}
				if got, want := listMode(res), sqlite3Out(t, s.Files[i], q); got != want {
					t.Errorf("%s %s:\ngot  %q\nwant %q", rev, q, got, want)
				}
			}
		}
	}
}

func TestSQLTablesAndRows(t *testing.T) {
	ctx := context.Background()
	s := inspecttest.NewSQLite(t)
	v := inspect.New(s.R)
	tables, err := v.SQLTables(ctx, inspecttest.A, "task:seed", "memory.db")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range tables {
		n := tb.Name
		if tb.Shadow {
			n += "*"
		}
		names = append(names, n)
	}
	if got, want := strings.Join(names, " "), "facts messages notes notes_config* notes_content* notes_data* notes_docsize* notes_idx*"; got != want {
		t.Fatalf("tables %q, want %q", got, want)
	}
	res, err := v.SQLRows(ctx, inspecttest.A, "HEAD", "memory.db", "messages", 11995, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 5 || res.Truncated || res.Rows[0][0].Int != 11997 || len(res.Columns) != 7 {
		t.Fatalf("last page: %d rows, truncated %v, first %v, columns %v", len(res.Rows), res.Truncated, res.Rows[0][0], res.Columns)
	}
	res, err = v.SQLRows(ctx, inspecttest.A, "HEAD", "memory.db", "messages", 0, 3)
	if err != nil || len(res.Rows) != 3 || !res.Truncated {
		t.Fatalf("first page: %v rows, truncated %v, %v", len(res.Rows), res.Truncated, err)
	}
	for _, bad := range []struct {
		table         string
		offset, limit int
	}{{"", 0, 10}, {"messages", -1, 10}, {"messages", 0, 0}, {"messages", 0, 1001}, {`no"such`, 0, 10}} {
		if _, err := v.SQLRows(ctx, inspecttest.A, "HEAD", "memory.db", bad.table, bad.offset, bad.limit); !errors.Is(err, inspect.ErrBadRequest) {
			t.Errorf("SQLRows(%q, %d, %d): %v, want ErrBadRequest", bad.table, bad.offset, bad.limit, err)
		}
	}
}

// TestSQLRefusals: a write, a value that is not a database, a missing key:
// clear errors of their kind.
func TestSQLRefusals(t *testing.T) {
	ctx := context.Background()
	s := inspecttest.NewSQLite(t)
	v := inspect.New(s.R)
	_, err := v.SQL(ctx, inspecttest.A, "HEAD", "memory.db", "DELETE FROM messages", inspect.SQLLimits{})
	if !errors.Is(err, inspect.ErrBadRequest) || !errors.Is(err, sqlitedb.ErrRefused) {
		t.Fatalf("a write: %v", err)
	}
	_, err = v.SQL(ctx, inspecttest.A, "HEAD", "notes.md", "SELECT 1", inspect.SQLLimits{})
	if !errors.Is(err, inspect.ErrBadRequest) || !errors.Is(err, sqlitedb.ErrNotDatabase) || !strings.Contains(err.Error(), "notes.md at ") {
		t.Fatalf("a text value: %v", err)
	}
	_, err = v.SQL(ctx, inspecttest.A, "HEAD", "nope.db", "SELECT 1", inspect.SQLLimits{})
	if !errors.Is(err, inspect.ErrNotFound) {
		t.Fatalf("a missing key: %v", err)
	}
	_, err = v.SQL(ctx, inspecttest.A, "HEAD", "memory.db", "SELECT * FROM nosuch", inspect.SQLLimits{})
	if !errors.Is(err, inspect.ErrBadRequest) || !strings.Contains(err.Error(), "no such table") {
		t.Fatalf("no such table: %v", err)
	}
}

// TestSQLWALPending: a database in WAL mode committed beside a -wal holding
// changes is refused, naming the log; with an empty -wal it is read.
func TestSQLWALPending(t *testing.T) {
	ctx := context.Background()
	file := t.TempDir() + "/m.db"
	if out, err := exec.Command("sqlite3", file, "PRAGMA journal_mode=WAL; CREATE TABLE t(x); INSERT INTO t VALUES(1);").CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	content, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	seed := sha256.Sum256([]byte("operator"))
	dir := t.TempDir()
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: "a"}, put("m.db", string(content), "m.db-wal", "")); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: "b"}, put("m.db-wal", "frames not yet checkpointed")); err != nil {
		t.Fatal(err)
	}
	rt.Close()
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	v := inspect.New(r)
	res, err := v.SQL(ctx, "lumen", "task:a", "m.db", "SELECT x FROM t", inspect.SQLLimits{})
	if err != nil || listMode(res) != "1\n" {
		t.Fatalf("WAL mode, empty -wal: %q %v", listMode(res), err)
	}
	_, err = v.SQL(ctx, "lumen", "HEAD", "m.db", "SELECT x FROM t", inspect.SQLLimits{})
	if !errors.Is(err, inspect.ErrBadRequest) || !strings.Contains(err.Error(), "m.db-wal holds 27 bytes") {
		t.Fatalf("WAL mode, -wal with frames: %v", err)
	}
}
