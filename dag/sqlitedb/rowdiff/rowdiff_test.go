package rowdiff_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/dag/sqlitedb/rowdiff"
	"github.com/agentstate/agentstate/dag/sqlitedb/sqlitetest"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", name, args, err, out)
	}
	return string(out)
}

// baseDB is a brain's memory.db (sqlitetest.BaseSQL).
func baseDB(t testing.TB, rows int) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "memory.db")
	run(t, "sqlite3", file, sqlitetest.BaseSQL(rows))
	return file
}

// changed copies file and runs sql on the copy.
func changed(t testing.TB, file, sql string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "new.db")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if sql != "" {
		run(t, "sqlite3", out, sql)
	}
	return out
}

// countingStore counts the blocks read, and keeps which.
type countingStore struct {
	*memstore.Store
	gets atomic.Int64
	mu   sync.Mutex
	read map[objects.CID]bool
}

func (c *countingStore) Get(ctx context.Context, id objects.CID) ([]byte, error) {
	c.gets.Add(1)
	c.mu.Lock()
	if c.read == nil {
		c.read = map[objects.CID]bool{}
	}
	c.read[id] = true
	c.mu.Unlock()
	return c.Store.Get(ctx, id)
}

// reset forgets the blocks read so far.
func (c *countingStore) reset() {
	c.gets.Store(0)
	c.mu.Lock()
	c.read = nil
	c.mu.Unlock()
}

func openFile(t testing.TB, bs *countingStore, file string) *sqlitedb.DB {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	v, blocks := objects.NewFileValue(data)
	if err := bs.Store.Put(context.Background(), blocks...); err != nil {
		t.Fatal(err)
	}
	db, err := sqlitedb.Open(context.Background(), bs, v)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func diff(t testing.TB, oldFile, newFile string) (*rowdiff.Diff, *countingStore) {
	t.Helper()
	bs := &countingStore{Store: memstore.New()}
	var a *sqlitedb.DB
	if oldFile != "" {
		a = openFile(t, bs, oldFile)
	}
	b := openFile(t, bs, newFile)
	bs.reset()
	d, err := rowdiff.Compute(context.Background(), a, b, rowdiff.Options{SQL: true})
	if err != nil {
		t.Fatalf("Compute: %v", err)
	}
	return d, bs
}

// checkSQL applies d.SQL() to a copy of oldFile with sqlite3 and asks
// sqldiff whether the result is newFile.
func checkSQL(t *testing.T, d *rowdiff.Diff, oldFile, newFile string) {
	t.Helper()
	applied := filepath.Join(t.TempDir(), "empty.db")
	if oldFile != "" {
		applied = changed(t, oldFile, "")
	}
	script := filepath.Join(t.TempDir(), "diff.sql")
	sql, err := d.SQL()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte(sql), 0o644); err != nil {
		t.Fatal(err)
	}
	run(t, "sqlite3", applied, ".read "+script)
	if out := run(t, "sqldiff", applied, newFile); out != "" {
		t.Fatalf("sqldiff after applying the SQL:\n%s\nSQL:\n%s", clip(out), clip(sql))
	}
	if out := run(t, "sqlite3", applied, "PRAGMA integrity_check"); out != "ok\n" {
		t.Fatalf("integrity_check: %s", out)
	}
}

func clip(s string) string {
	if len(s) > 4000 {
		return s[:4000] + "..."
	}
	return s
}

func table(d *rowdiff.Diff, name string) *rowdiff.Table {
	for i := range d.Tables {
		if d.Tables[i].Name == name {
			return &d.Tables[i]
		}
	}
	return nil
}

func TestRowChanges(t *testing.T) {
	old := baseDB(t, 3000)
	nw := changed(t, old, `
INSERT INTO messages(id, role, body) VALUES(5001, 'user', 'a new message');
UPDATE messages SET body = 'edited', score = 2.5 WHERE id = 1500;
DELETE FROM messages WHERE id = 2999;
INSERT INTO log VALUES('x', 'by hand');
UPDATE facts SET object = 'a careful agent' WHERE subject = 'lumen' AND predicate = 'is';
INSERT INTO facts VALUES('sea', 'is', 'deep');
DELETE FROM facts WHERE subject = 'sky';
UPDATE blobs SET v = 3 WHERE k = x'ff';
INSERT INTO counter(n) VALUES(4);
INSERT INTO notes VALUES('storage', 'packed slots');
UPDATE notes SET body = 'check every external call' WHERE title = 'reentrancy';
DELETE FROM notes WHERE title = 'gas';`)
	d, bs := diff(t, old, nw)
	js, _ := json.MarshalIndent(d, "", " ")
	msgs := table(d, "messages")
	if msgs == nil || msgs.Inserted != 1 || msgs.Updated != 1 || msgs.Deleted != 1 || msgs.Whole {
		t.Fatalf("messages: %s", js)
	}
	for _, r := range msgs.Rows {
		if r.Change == "update" && (r.Key[0].Int != 1500 || strings.Join(r.Changed, ",") != "body,score") {
			t.Fatalf("messages update: %+v", r)
		}
	}
	if lg := table(d, "log"); lg == nil || lg.Inserted != 2 {
		t.Fatalf("log (the trigger's row and one by hand): %s", js)
	}
	if f := table(d, "facts"); f == nil || f.Inserted != 1 || f.Updated != 1 || f.Deleted != 1 || strings.Join(f.Key, ",") != "subject,predicate" {
		t.Fatalf("facts: %s", js)
	}
	if b := table(d, "blobs"); b == nil || b.Updated != 1 || b.Rows[0].Key[0].Kind != sqlitedb.Blob {
		t.Fatalf("blobs: %s", js)
	}
	if n := table(d, "notes"); n == nil || n.Kind != "fts5" || n.Inserted != 1 || n.Updated != 1 || n.Deleted != 1 {
		t.Fatalf("notes: %s", js)
	}
	for _, tb := range d.Tables {
		if strings.HasPrefix(tb.Name, "notes_") {
			t.Fatalf("a shadow table is reported: %s", tb.Name)
		}
	}
	if len(d.Schema) != 0 || d.Whole != "" {
		t.Fatalf("schema or whole: %s", js)
	}
	// Cost: a fraction of the two databases' pages.
	if total := d.OldPages + d.NewPages; bs.gets.Load() > total/3 {
		t.Fatalf("read %d blocks of two databases of %d pages in all", bs.gets.Load(), total)
	}
	checkSQL(t, d, old, nw)
}

// TestDiffReadsOnlyChangedLeaves: of a table's leaves, a diff reads those
// whose page changed and no other, not even the leaf after a changed one
// (where a range scan over a changed leaf's rows would step to end).
func TestDiffReadsOnlyChangedLeaves(t *testing.T) {
	old := baseDB(t, 12000) // over objects.ChunkThreshold: a page a chunk
	nw := changed(t, old, `UPDATE messages SET body = 'edited' WHERE id IN (700, 5500, 9200);`)
	d, bs := diff(t, old, nw)
	if m := table(d, "messages"); m == nil || m.Updated != 3 || len(m.Rows) != 3 || m.Whole {
		js, _ := json.Marshal(d)
		t.Fatalf("messages: %s", js)
	}
	a, b := mustRead(t, old), mustRead(t, nw)
	if len(a) != len(b) {
		t.Fatalf("the update changed the file's length")
	}
	// The table's leaves but its first (read to learn the b-tree's depth).
	var leaves []int
	for i, f := range strings.Fields(run(t, "sqlite3", old, `SELECT pageno FROM dbstat WHERE name = 'messages' AND pagetype = 'leaf' ORDER BY path`)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			leaves = append(leaves, n)
		}
	}
	const ps = 4096
	unchanged, changedLeaves := 0, 0
	for _, n := range leaves {
		pa, pb := a[(n-1)*ps:n*ps], b[(n-1)*ps:n*ps]
		if !bytes.Equal(pa, pb) {
			changedLeaves++
			continue
		}
		unchanged++
		if bs.read[objects.NewValue(pa).CID] {
			t.Errorf("the diff read page %d, a leaf of the table the same in both versions", n)
		}
	}
	if unchanged < 300 || changedLeaves != 3 {
		t.Fatalf("%d unchanged and %d changed leaves: the test needs more", unchanged, changedLeaves)
	}
}

func mustRead(t testing.TB, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestSchemaChanges(t *testing.T) {
	old := baseDB(t, 500)
	nw := changed(t, old, `
ALTER TABLE messages ADD COLUMN task TEXT;
UPDATE messages SET task = 't1' WHERE id < 10;
CREATE TABLE tasks(id TEXT PRIMARY KEY, state TEXT);
INSERT INTO tasks VALUES('t1', 'done'), ('t2', 'open');
DROP TABLE log;
DROP INDEX messages_role;
CREATE INDEX facts_object ON facts(object);
CREATE VIRTUAL TABLE docs USING fts5(body);
INSERT INTO docs VALUES('a document');
INSERT INTO counter(n) VALUES(9);`)
	d, _ := diff(t, old, nw)
	js, _ := json.MarshalIndent(d, "", " ")
	if tk := table(d, "tasks"); tk == nil || tk.Schema != "added" || tk.Inserted != 2 {
		t.Fatalf("tasks: %s", js)
	}
	if lg := table(d, "log"); lg == nil || lg.Schema != "removed" {
		t.Fatalf("log: %s", js)
	}
	if m := table(d, "messages"); m == nil || m.Schema != "changed" || m.Updated != 10 {
		t.Fatalf("messages: %s", js)
	}
	kinds := map[string]string{}
	for _, s := range d.Schema {
		kinds[s.Name] = s.Change
	}
	if kinds["messages_role"] != "removed" || kinds["facts_object"] != "added" || kinds["docs"] != "added" {
		t.Fatalf("schema: %s", js)
	}
	checkSQL(t, d, old, nw)
}

func TestAddedDatabase(t *testing.T) {
	nw := baseDB(t, 50)
	d, _ := diff(t, "", nw)
	if m := table(d, "messages"); m == nil || m.Inserted != 51 {
		t.Fatalf("messages: %+v", d.Tables)
	}
	checkSQL(t, d, "", nw)
}

func TestPageSizeChange(t *testing.T) {
	old := baseDB(t, 300)
	nw := changed(t, old, `PRAGMA page_size=8192; VACUUM; UPDATE messages SET body='x' WHERE id=7;`)
	d, _ := diff(t, old, nw)
	if d.Whole == "" {
		t.Fatal("a page size change did not compare whole")
	}
	if m := table(d, "messages"); m == nil || m.Updated != 1 || m.Inserted+m.Deleted != 0 {
		t.Fatalf("messages: %+v", m)
	}
	checkSQL(t, d, old, nw)
}

// An update of a long row to one of the same length rewrites its overflow
// pages in place, leaving its leaf page as it was: the change is still found.
func TestOverflowInPlace(t *testing.T) {
	old := baseDB(t, 200)
	old = changed(t, old, `INSERT INTO messages(id, role, body) VALUES(9000, 'tool', printf('%.20000c', 'a'));`)
	nw := changed(t, old, `UPDATE messages SET body = printf('%.20000c', 'b') WHERE id = 9000;`)
	d, _ := diff(t, old, nw)
	m := table(d, "messages")
	if m == nil || m.Updated != 1 || m.Rows[0].Key[0].Int != 9000 {
		js, _ := json.MarshalIndent(d, "", " ")
		t.Fatalf("messages: %s", js)
	}
	checkSQL(t, d, old, nw)
}

func TestNoChange(t *testing.T) {
	old := baseDB(t, 200)
	d, _ := diff(t, old, changed(t, old, ""))
	if sql, err := d.SQL(); len(d.Tables) != 0 || len(d.Schema) != 0 || sql != "" || err != nil {
		t.Fatalf("no change: %+v %q %v", d, sql, err)
	}
}

// A crafted new version (bytes of its changed pages overwritten) gets an
// error or a diff, never a panic.
func TestCorruptVersion(t *testing.T) {
	old := baseDB(t, 2000)
	nw := changed(t, old, `UPDATE messages SET body = 'x' WHERE id % 97 = 0; INSERT INTO facts VALUES('a','b','c');`)
	clean, err := os.ReadFile(nw)
	if err != nil {
		t.Fatal(err)
	}
	base, _ := os.ReadFile(old)
	var pages []int
	for p := 1; p*4096 < len(clean); p++ { // pages past the first
		if string(clean[p*4096:(p+1)*4096]) != string(base[p*4096:(p+1)*4096]) {
			pages = append(pages, p)
		}
	}
	if len(pages) == 0 {
		t.Fatal("no page changed")
	}
	for i := 0; i < 60; i++ {
		data := append([]byte(nil), clean...)
		p := pages[i%len(pages)]
		for j := 0; j < 8; j++ {
			off := p*4096 + (i*131+j*977)%4096
			data[off] ^= byte(0x5a + i + j)
		}
		file := filepath.Join(t.TempDir(), "bad.db")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		bs := &countingStore{Store: memstore.New()}
		a := openFile(t, bs, old)
		v, blocks := objects.NewFileValue(data)
		bs.Store.Put(context.Background(), blocks...)
		b, err := sqlitedb.Open(context.Background(), bs, v)
		if err != nil {
			continue
		}
		_, err = rowdiff.Compute(context.Background(), a, b, rowdiff.Options{})
		if err != nil && !errors.Is(err, sqlitedb.ErrCorrupt) {
			t.Errorf("flip %d: an error not wrapping ErrCorrupt: %v", i, err)
		}
		b.Close()
	}
}

// Without Options.SQL the shadow tables are not read, the tables shown are
// the same, and SQL says it cannot be given.
func TestWithoutSQL(t *testing.T) {
	old := baseDB(t, 500)
	nw := changed(t, old, `INSERT INTO notes VALUES('storage', 'packed slots'); UPDATE messages SET body='x' WHERE id=3;`)
	bs := &countingStore{Store: memstore.New()}
	a, b := openFile(t, bs, old), openFile(t, bs, nw)
	d, err := rowdiff.Compute(context.Background(), a, b, rowdiff.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := table(d, "notes"); n == nil || n.Inserted != 1 || table(d, "messages") == nil || len(d.Tables) != 2 {
		t.Fatalf("tables: %+v", d.Tables)
	}
	if _, err := d.SQL(); !errors.Is(err, rowdiff.ErrNoSQL) {
		t.Fatalf("SQL without Options.SQL: %v", err)
	}
}

// A row's path (schema pages, root to leaf, its overflow pages) is the same
// in two versions exactly when nothing SQLite reads for it changed: an
// unrelated row's change leaves it, the row's own change (even one that
// only rewrites its overflow pages in place) and a schema change do not.
func TestRowPath(t *testing.T) {
	old := changed(t, baseDB(t, 14000), `INSERT INTO messages(id, role, body) VALUES(90000, 'tool', printf('%.20000c', 'a'));`)
	steps := []struct {
		sql  string
		same bool
	}{
		{`UPDATE messages SET body = 'far away' WHERE id = 2900;`, true},
		{`UPDATE messages SET body = printf('%.20000c', 'b') WHERE id = 90000;`, false},
		{`CREATE TABLE more(x);`, false},
	}
	for _, st := range steps {
		nw := changed(t, old, st.sql)
		bs := &countingStore{Store: memstore.New()}
		a, b := openFile(t, bs, old), openFile(t, bs, nw)
		r, found, err := rowdiff.Lookup(context.Background(), a, "messages", []rowdiff.Cell{{Kind: sqlitedb.Integer, Int: 90000}})
		if err != nil || !found || r.Root == 0 {
			t.Fatalf("Lookup: %v %v %+v", err, found, r.Root)
		}
		pa, sa, oka, err := rowdiff.RowPath(context.Background(), a.Pages(), r.Root, 90000)
		if err != nil || !oka {
			t.Fatalf("RowPath old: %v %v", err, oka)
		}
		pb, sb, okb, err := rowdiff.RowPath(context.Background(), b.Pages(), r.Root, 90000)
		if err != nil || !okb {
			t.Fatalf("RowPath new: %v %v", err, okb)
		}
		same := sa == sb && len(pa) == len(pb)
		for i := range pa {
			same = same && i < len(pb) && pa[i] == pb[i]
		}
		if same != st.same {
			t.Errorf("%s: same path %v, want %v", st.sql, same, st.same)
		}
	}
}

// The rows of a changed leaf that both versions hold with the same bytes
// are not read through SQLite: a diff of three updated rows reads those
// rows in each version (by rowid), not the other rows on their leaves,
// and still finds every inserted, deleted and updated row.
func TestUnchangedCellsNotRead(t *testing.T) {
	old := baseDB(t, 12000)
	nw := changed(t, old, `UPDATE messages SET body = 'edited' WHERE id IN (700, 5500, 9200);`)
	d, _ := diff(t, old, nw)
	m := table(d, "messages")
	if m == nil || m.Updated != 3 || len(m.Rows) != 3 {
		js, _ := json.Marshal(d)
		t.Fatalf("messages: %s", js)
	}
	if r := rowdiff.RowsRead(d); r > 2*3+6 { // and a few rows of other tables
		t.Fatalf("the diff read %d rows through SQLite for 3 rows updated", r)
	}
	nw2 := changed(t, old, `UPDATE messages SET body = 'edited' WHERE id = 700;
DELETE FROM messages WHERE id = 701;
INSERT INTO messages(id, role, body) VALUES (702000, 'user', 'new');`)
	d2, _ := diff(t, old, nw2)
	m2 := table(d2, "messages")
	if m2 == nil || m2.Updated != 1 || m2.Deleted != 1 || m2.Inserted != 1 {
		js, _ := json.Marshal(d2)
		t.Fatalf("messages: %s", js)
	}
	t.Logf("3 updates: %d rows read; an update, a delete and an insert: %d", rowdiff.RowsRead(d), rowdiff.RowsRead(d2))
}
