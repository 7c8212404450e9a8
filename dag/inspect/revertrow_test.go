package inspect_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// checkoutDB writes agent's memory.db at HEAD to a file, as a checkout
// does, for the sqlite3 shell to read.
func checkoutDB(t *testing.T, r *repo.Repo, agent, name string) string {
	t.Helper()
	ctx := context.Background()
	_, hc, err := r.HeadCommit(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := objects.LoadTree(ctx, r.Blocks, hc.Tree)
	if err != nil {
		t.Fatal(err)
	}
	val, ok, err := tr.Get(ctx, "memory.db")
	if err != nil || !ok {
		t.Fatalf("memory.db at HEAD: %v %v", ok, err)
	}
	data, err := objects.ReadValue(ctx, r.Blocks, val)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func sqlite3Run(t *testing.T, file, sql string) string {
	t.Helper()
	out, err := exec.Command("sqlite3", file, sql).CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3 %s: %v\n%s", sql, err, out)
	}
	return string(out)
}

// Reverting one row of a SQLite value: an update, a delete and an insert
// (in a rowid table, a WITHOUT ROWID table and an FTS5 table) are put back
// as they were before the task that made them, each one commit, and the
// database sqlite3 reads from a checkout equals the later version with
// those rows put back by sqlite3 itself. A row a later task changed too is
// refused, naming it, and nothing is written; bad rows change nothing.
func TestRevertRow(t *testing.T) {
	s := inspecttest.NewSQLite(t)
	v := inspect.New(s.R)
	ctx := context.Background()
	head := func() objects.CID {
		h, _, err := s.R.HeadCommit(ctx, inspecttest.A)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	// A row a later task changed too (reshape set 12001's task column).
	h0 := head()
	p, err := v.PlanRevertRow(ctx, inspecttest.A, "task:learn", "memory.db", "messages:12001")
	var ce *inspect.RowConflictError
	if !errors.As(err, &ce) || !errors.Is(err, inspect.ErrRevertConflict) || p.Action != "conflict" || !strings.Contains(err.Error(), "messages:12001") {
		t.Fatalf("plan of a row changed later: %v %+v", err, p)
	}
	if _, err := v.RevertRow(ctx, inspecttest.A, "task:learn", "memory.db", "messages:12001", inspect.WriteOptions{}); !errors.As(err, &ce) {
		t.Fatalf("revert of a row changed later: %v", err)
	}
	if head() != h0 {
		t.Fatal("a refused revert moved HEAD")
	}

	// Bad rows: nothing written.
	for _, c := range []struct{ rev, key, ref string }{
		{"task:learn", "memory.db", "nosuch:1"},        // no such table
		{"task:learn", "memory.db", "messages:1"},      // a row learn did not change
		{"task:learn", "memory.db", `facts:["lumen"]`}, // a key that does not fit the table
		{"task:learn", "memory.db", "messages"},        // not TABLE:PK
		{"task:learn", "nosuch.db", "messages:7"},      // a key learn did not change
	} {
		if _, err := v.RevertRow(ctx, inspecttest.A, c.rev, c.key, c.ref, inspect.WriteOptions{}); !errors.Is(err, inspect.ErrBadRequest) {
			t.Errorf("%s %s %s: %v, want a bad request", c.rev, c.key, c.ref, err)
		}
	}
	if head() != h0 {
		t.Fatal("a bad revert moved HEAD")
	}

	for _, c := range []struct{ ref, action string }{
		{"messages:7", "update"},
		{"messages:8", "insert"},
		{`facts:["lumen","is"]`, "update"},
		{"notes:3", "delete"},
	} {
		before := head()
		p, err := v.PlanRevertRow(ctx, inspecttest.A, "task:learn", "memory.db", c.ref)
		if err != nil || p.Action != c.action {
			t.Fatalf("plan %s: %v %+v", c.ref, err, p)
		}
		p, err = v.RevertRow(ctx, inspecttest.A, "task:learn", "memory.db", c.ref, inspect.WriteOptions{})
		if err != nil || p.Action != c.action || p.New != head() || p.Head != before {
			t.Fatalf("revert %s: %v %+v", c.ref, err, p)
		}
		cm, err := s.R.Commit(ctx, p.New)
		if err != nil || cm.Metadata["op"] != "revert" || cm.Metadata["revertTask"] != "learn" || !strings.Contains(cm.Message, c.ref) {
			t.Fatalf("the revert's commit: %v %+v", err, cm)
		}
		// Once done, again is nothing to do.
		if _, err := v.RevertRow(ctx, inspecttest.A, "task:learn", "memory.db", c.ref, inspect.WriteOptions{}); !errors.Is(err, inspect.ErrNoChange) {
			t.Fatalf("revert %s again: %v", c.ref, err)
		}
	}

	// The oracle: reshape's database with the same rows put back by sqlite3.
	want := filepath.Join(t.TempDir(), "want.db")
	data, err := os.ReadFile(s.Files[2])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(want, data, 0o600); err != nil {
		t.Fatal(err)
	}
	sqlite3Run(t, want, `ATTACH '`+s.Files[0]+`' AS old;
UPDATE messages SET body=(SELECT body FROM old.messages WHERE id=7) WHERE id=7;
INSERT INTO messages(id, role, body, score, raw, at) SELECT id, role, body, score, raw, at FROM old.messages WHERE id=8;
UPDATE facts SET object='an agent' WHERE subject='lumen' AND predicate='is';
DELETE FROM notes WHERE rowid=3;`)
	got := checkoutDB(t, s.R, inspecttest.A, "memory.db")
	q := `PRAGMA integrity_check; SELECT * FROM messages ORDER BY id; SELECT * FROM facts; SELECT rowid, * FROM notes; SELECT rowid FROM notes WHERE notes MATCH 'gas OR reentrancy'; SELECT * FROM tasks;`
	if g, w := sqlite3Run(t, got, q), sqlite3Run(t, want, q); g != w {
		t.Fatalf("the reverted database differs from sqlite3's:\n%s\nwant\n%s", clipLines(g), clipLines(w))
	}
	// A change that removed the whole value: no database to put a row into.
	if _, err := v.Delete(ctx, inspecttest.A, "memory.db", inspect.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	h1 := head()
	if _, err := v.RevertRow(ctx, inspecttest.A, "HEAD", "memory.db", "messages:7", inspect.WriteOptions{}); !errors.Is(err, inspect.ErrBadRequest) || !strings.Contains(err.Error(), "not at HEAD") {
		t.Fatalf("a row of a removed value: %v", err)
	}
	if head() != h1 {
		t.Fatal("a refused revert moved HEAD")
	}
	if out := sqlite3Run(t, got, "PRAGMA integrity_check; INSERT INTO notes(notes) VALUES('integrity-check');"); strings.TrimSpace(out) != "ok" {
		t.Fatalf("integrity: %s", out)
	}
}

func clipLines(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}
