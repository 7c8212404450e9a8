package sqlitedb_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/dag/sqlitedb"
)

// Apply edits a copy of a database in memory: the one statement's change
// is in the result (sqlite3 reads it), the store's bytes are untouched, a
// WAL-mode database keeps its mode, and a statement that fails, changes no
// row or more than one, or comes with a second statement is ErrEdit.
func TestApply(t *testing.T) {
	ctx := context.Background()
	file := memoryDB(t, 3000)
	sqlite3(t, file, "PRAGMA journal_mode=WAL; PRAGMA wal_checkpoint(TRUNCATE);")
	content := mustRead(t, file)
	keep := bytes.Clone(content)
	bs, v := store(t, content)
	out, err := sqlitedb.Apply(ctx, bs, v, "UPDATE facts SET object='a careful agent' WHERE subject='lumen' AND predicate='is'")
	if err != nil {
		t.Fatal(err)
	}
	if out[18] != 2 || out[19] != 2 {
		t.Fatalf("header bytes 18-19 are %d %d: WAL mode lost", out[18], out[19])
	}
	if !bytes.Equal(content, keep) {
		t.Fatal("Apply changed the bytes it read")
	}
	edited := filepath.Join(t.TempDir(), "edited.db")
	if err := os.WriteFile(edited, out, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := sqlite3(t, edited, "-readonly", "SELECT object FROM facts WHERE subject='lumen' AND predicate='is'; PRAGMA integrity_check; SELECT count(*) FROM messages"); got != "a careful agent\nok\n3001\n" {
		t.Fatalf("sqlite3 reads %q", got)
	}
	for _, stmt := range []string{
		"DELETE FROM messages WHERE id=99999",                              // no row
		"DELETE FROM messages WHERE id<10",                                 // more than one
		"DELETE FROM messages WHERE id=1; DELETE FROM messages WHERE id=2", // two statements
		"DELETE FROM nosuch WHERE id=1",                                    // fails
		"ATTACH 'other.db' AS o",                                           // no attached databases
	} {
		if _, err := sqlitedb.Apply(ctx, bs, v, stmt); !errors.Is(err, sqlitedb.ErrEdit) {
			t.Errorf("%s: %v, want ErrEdit", stmt, err)
		}
	}
	if _, err := sqlitedb.Apply(ctx, bs, v, "SELECT 1"); !errors.Is(err, sqlitedb.ErrEdit) {
		t.Errorf("a read: %v, want ErrEdit", err)
	}
}
