package inspecttest

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/runtime"
)

// SQLite is a store whose agent A's memory.db (a SQLite database the
// sqlite3 shell made: a rowid table, a WITHOUT ROWID table and an FTS5 table,
// chunked, over 1 MiB) changed in three runtime tasks: "seed" made it,
// "learn" inserted, updated and deleted rows, "reshape" added a column and a
// table. Files[i] is a copy of the database as task i left it, for the
// sqlite3 shell to read as the oracle.
type SQLite struct {
	R       *repo.Repo
	Commits []objects.CID // seed, learn, reshape
	Files   []string
}

// SQLiteSteps are the statements each task of NewSQLite runs.
var SQLiteSteps = []string{
	`PRAGMA page_size=4096;
CREATE TABLE messages(id INTEGER PRIMARY KEY, role TEXT NOT NULL, body TEXT, score REAL, raw BLOB, at DATETIME);
CREATE TABLE facts(subject TEXT, predicate TEXT, object TEXT, PRIMARY KEY(subject, predicate)) WITHOUT ROWID;
CREATE VIRTUAL TABLE notes USING fts5(title, body);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<12000)
INSERT INTO messages SELECT x, CASE x%3 WHEN 0 THEN 'user' WHEN 1 THEN 'assistant' ELSE 'tool' END,
  'message ' || x || ' ' || hex(randomblob(40)), x/7.0, CASE WHEN x%5=0 THEN randomblob(8) END, '2026-01-0' || (x%9+1) || ' 10:00:00' FROM c;
INSERT INTO facts VALUES('lumen','is','an agent'),('lumen','likes','reentrancy checks'),('sky','is','blue');
INSERT INTO notes VALUES('reentrancy','check external calls'),('access control','owner checks');`,
	`INSERT INTO messages(id, role, body) VALUES(12001, 'user', 'what is reentrancy?');
UPDATE messages SET body = 'edited' WHERE id = 7;
DELETE FROM messages WHERE id = 8;
UPDATE facts SET object = 'a careful agent' WHERE subject = 'lumen' AND predicate = 'is';
INSERT INTO notes VALUES('gas', 'loops over storage');`,
	`ALTER TABLE messages ADD COLUMN task TEXT;
UPDATE messages SET task = 'reshape' WHERE id > 11990;
CREATE TABLE tasks(id TEXT PRIMARY KEY, done INTEGER) WITHOUT ROWID;
INSERT INTO tasks VALUES('seed', 1), ('learn', 1), ('reshape', 0);`,
}

// NewSQLite builds a SQLite store (it needs the sqlite3 shell); it is closed
// when the test ends.
func NewSQLite(t testing.TB) *SQLite {
	t.Helper()
	ctx := context.Background()
	dir, work := t.TempDir(), t.TempDir()
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		t.Fatal(err)
	}
	s := &SQLite{}
	db := filepath.Join(work, "memory.db")
	for i, name := range []string{"seed", "learn", "reshape"} {
		if out, err := exec.Command("sqlite3", db, SQLiteSteps[i]).CombinedOutput(); err != nil {
			t.Fatalf("sqlite3: %v\n%s", err, out)
		}
		content, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(work, fmt.Sprintf("memory-%d.db", i))
		if err := os.WriteFile(file, content, 0o600); err != nil {
			t.Fatal(err)
		}
		s.Files = append(s.Files, file)
		t.Setenv("SOURCE_DATE_EPOCH", fmt.Sprint(1_700_000_000+3600*(i+1)))
		rc, err := rt.RunTask(ctx, A, runtime.Task{ID: name}, func(ctx context.Context, tx *runtime.Tx) error {
			if err := tx.Put(ctx, "memory.db", content); err != nil {
				return err
			}
			return tx.Put(ctx, "notes.md", fmt.Appendf(nil, "after %s\n", name))
		})
		if err != nil {
			t.Fatal(err)
		}
		s.Commits = append(s.Commits, rc.Commit)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	s.R = r
	return s
}
