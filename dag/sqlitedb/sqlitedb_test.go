package sqlitedb_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"zombiezen.com/go/sqlite"

	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// sqlite3 runs the sqlite3 shell (the oracle) on file.
func sqlite3(t testing.TB, file string, args ...string) string {
	t.Helper()
	out, err := exec.Command("sqlite3", append([]string{file}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3 %s %q: %v\n%s", file, args, err, out)
	}
	return string(out)
}

// memoryDB builds a brain's memory.db with the sqlite3 shell: a rowid table,
// a WITHOUT ROWID table, an FTS5 table and every storage class, padded to
// rows rows of messages; it returns the file's path.
func memoryDB(t testing.TB, rows int) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "memory.db")
	sqlite3(t, file, `PRAGMA page_size=4096;
CREATE TABLE messages(id INTEGER PRIMARY KEY, role TEXT NOT NULL, body TEXT, score REAL, raw BLOB, at DATETIME);
CREATE TABLE facts(subject TEXT, predicate TEXT, object TEXT, PRIMARY KEY(subject, predicate)) WITHOUT ROWID;
CREATE VIRTUAL TABLE notes USING fts5(title, body);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<`+strconv.Itoa(rows)+`)
INSERT INTO messages SELECT x, CASE x%3 WHEN 0 THEN 'user' WHEN 1 THEN 'assistant' ELSE 'tool' END,
  'message ' || x || ' ' || hex(randomblob(40)), x/7.0, CASE WHEN x%5=0 THEN randomblob(8) END, '2026-01-0' || (x%9+1) || ' 10:00:00' FROM c;
INSERT INTO messages VALUES(-5, 'user', NULL, 1e300, x'00ff10', NULL);
INSERT INTO facts VALUES('lumen','is','an agent'),('lumen','likes','reentrancy checks'),('sky','is','blue');
INSERT INTO notes VALUES('reentrancy','check external calls'),('access control','owner checks'),('gas','loops over storage');`)
	return file
}

// store puts content in a memory block store as NewFileValue makes it.
func store(t testing.TB, content []byte) (*memstore.Store, objects.CID) {
	t.Helper()
	bs := memstore.New()
	v, blocks := objects.NewFileValue(content)
	if err := bs.Put(context.Background(), blocks...); err != nil {
		t.Fatal(err)
	}
	return bs, v
}

func open(t testing.TB, content []byte) *sqlitedb.DB {
	t.Helper()
	bs, v := store(t, content)
	db, err := sqlitedb.Open(context.Background(), bs, v)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// listMode renders a result as sqlite3's default list mode does.
func listMode(r *sqlitedb.Result) string {
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

var oracleQueries = []string{
	"SELECT count(*) FROM messages",
	"SELECT id, role, body, score, at FROM messages WHERE id IN (1, 2, 3, 77, 1999, -5) ORDER BY id",
	"SELECT id, score FROM messages WHERE id % 97 = 0 ORDER BY id",
	"SELECT * FROM facts ORDER BY subject, predicate",
	"SELECT title FROM notes WHERE notes MATCH 'checks' ORDER BY rowid",
	"SELECT role, count(*), sum(length(body)) FROM messages GROUP BY role ORDER BY role",
	"SELECT name, type FROM sqlite_schema ORDER BY name",
	"PRAGMA table_info(messages)",
	"SELECT 1.5, 0.1, 100.0, 1e300, -2.5e-7, 1/3.0, 2.0/7",
	// The shell prints text and blobs as C strings: up to the first NUL.
	"SELECT x'410042', 'a' || char(0) || 'b', x'00ff10', raw FROM messages WHERE id = -5",
	"SELECT id, raw FROM messages WHERE id % 50 = 0 ORDER BY id LIMIT 60",
}

// TestQueryEqualsSQLite3 runs queries on a chunked memory.db read from the
// block store and on the file itself with the sqlite3 shell: the outputs are
// equal.
func TestQueryEqualsSQLite3(t *testing.T) {
	file := memoryDB(t, 20000)
	content, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(content) <= objects.ChunkThreshold {
		t.Fatalf("memory.db is %d bytes: want a chunked value", len(content))
	}
	db := open(t, content)
	for _, q := range oracleQueries {
		res, err := db.Query(context.Background(), q, sqlitedb.Limits{})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if got, want := listMode(res), sqlite3(t, file, q); got != want {
			t.Errorf("%s:\ngot  %q\nwant %q", q, clip(got), clip(want))
		}
	}
}

func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}

// TestSmallValue: a database of at most ChunkThreshold bytes is one raw
// block, read whole.
func TestSmallValue(t *testing.T) {
	file := memoryDB(t, 10)
	content, _ := os.ReadFile(file)
	if len(content) > objects.ChunkThreshold {
		t.Fatalf("%d bytes: want a raw value", len(content))
	}
	db := open(t, content)
	res, err := db.Query(context.Background(), "SELECT id, role FROM messages ORDER BY id", sqlitedb.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := listMode(res), sqlite3(t, file, "SELECT id, role FROM messages ORDER BY id"); got != want {
		t.Fatalf("got %q want %q", got, want)
	}
	if _, err := db.Pages().PageCID(context.Background(), 1); !errors.Is(err, sqlitedb.ErrUnchunked) {
		t.Fatalf("PageCID of a raw value: %v, want ErrUnchunked", err)
	}
}

// TestPages: every page, and reads across page boundaries, equal the file's
// bytes; two versions share the CIDs of the pages they share.
func TestPages(t *testing.T) {
	ctx := context.Background()
	file := memoryDB(t, 8000)
	a, _ := os.ReadFile(file)
	sqlite3(t, file, "UPDATE messages SET body='changed' WHERE id=4000")
	b, _ := os.ReadFile(file)
	bs := memstore.New()
	va, ba := objects.NewFileValue(a)
	vb, bb := objects.NewFileValue(b)
	if err := bs.Put(ctx, append(ba, bb...)...); err != nil {
		t.Fatal(err)
	}
	pa, err := sqlitedb.OpenPages(ctx, bs, va)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := sqlitedb.OpenPages(ctx, bs, vb)
	if err != nil {
		t.Fatal(err)
	}
	ps := pa.PageSize()
	if ps != 4096 || pa.PageCount() != int64(len(a)/ps) {
		t.Fatalf("page size %d, %d pages; want 4096, %d", ps, pa.PageCount(), len(a)/ps)
	}
	for n := int64(1); n <= pa.PageCount(); n++ {
		p, err := pa.Page(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(p, a[(n-1)*int64(ps):n*int64(ps)]) {
			t.Fatalf("page %d differs from the file", n)
		}
	}
	// Reads at odd offsets and lengths, across pages, backwards.
	for _, r := range [][2]int{{0, 100}, {4000, 300}, {len(a) - 10, 10}, {12345, 3 * 4096}, {len(a) / 2, 1}} {
		buf := make([]byte, r[1])
		n, err := pa.ReadAt(buf, int64(r[0]))
		if err != nil || n != r[1] || !bytes.Equal(buf, a[r[0]:r[0]+r[1]]) {
			t.Fatalf("ReadAt(%d, %d) = %d, %v", r[0], r[1], n, err)
		}
	}
	if _, err := pa.Page(ctx, 0); !errors.Is(err, sqlitedb.ErrPageRange) {
		t.Fatalf("page 0: %v", err)
	}
	if _, err := pa.Page(ctx, pa.PageCount()+1); !errors.Is(err, sqlitedb.ErrPageRange) {
		t.Fatalf("page past the end: %v", err)
	}
	same, differ := 0, 0
	for n := int64(1); n <= min(pa.PageCount(), pb.PageCount()); n++ {
		ca, err := pa.PageCID(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		cb, err := pb.PageCID(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		eq := bytes.Equal(a[(n-1)*int64(ps):n*int64(ps)], b[(n-1)*int64(ps):n*int64(ps)])
		if (ca == cb) != eq {
			t.Fatalf("page %d: CIDs equal %v, bytes equal %v", n, ca == cb, eq)
		}
		if eq {
			same++
		} else {
			differ++
		}
	}
	if differ == 0 || differ > 3 {
		t.Fatalf("one update changed %d pages (same %d)", differ, same)
	}
}

// TestRefusals: a statement that would write, attach, load an extension,
// change a setting, or run after another is refused, and the value is
// unchanged.
func TestRefusals(t *testing.T) {
	ctx := context.Background()
	file := memoryDB(t, 3000)
	content, _ := os.ReadFile(file)
	bs, v := store(t, content)
	db, err := sqlitedb.Open(ctx, bs, v)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := t.TempDir()
	for _, q := range []string{
		"INSERT INTO messages(role) VALUES('x')",
		"UPDATE messages SET role='x'",
		"DELETE FROM messages",
		"DELETE FROM facts",
		"INSERT INTO notes VALUES('a','b')",
		"CREATE TABLE t(x)",
		"CREATE TEMP TABLE t(x)",
		"CREATE TEMP VIEW v AS SELECT 1",
		"CREATE INDEX i ON messages(role)",
		"DROP TABLE messages",
		"ALTER TABLE messages ADD COLUMN y",
		"ATTACH DATABASE '" + filepath.Join(dir, "other.db") + "' AS other",
		"ATTACH ':memory:' AS m",
		"DETACH main",
		"PRAGMA user_version=5",
		"PRAGMA journal_mode=DELETE",
		"PRAGMA query_only=0",
		"PRAGMA writable_schema=1",
		"PRAGMA trusted_schema=1",
		"PRAGMA cache_size=1000000",
		"VACUUM",
		"VACUUM INTO '" + filepath.Join(dir, "copy.db") + "'",
		"REINDEX",
		"ANALYZE",
		"SAVEPOINT s",
		"BEGIN",
		"BEGIN IMMEDIATE",
		"COMMIT",
		"SELECT load_extension('/nonexistent/ext')",
		"CREATE VIRTUAL TABLE x USING fts5(a)",
		"SELECT 1; DELETE FROM messages",
		"SELECT 1; SELECT 2",
	} {
		_, err := db.Query(ctx, q, sqlitedb.Limits{})
		if err == nil {
			t.Errorf("%s: not refused", q)
			continue
		}
		if !errors.Is(err, sqlitedb.ErrRefused) && !strings.Contains(q, "load_extension") {
			t.Errorf("%s: %v, want ErrRefused", q, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a refused statement made files: %v", entries)
	}
	res, err := db.Query(ctx, "SELECT count(*) FROM messages", sqlitedb.Limits{})
	if err != nil || res.Rows[0][0].Int != 3001 {
		t.Fatalf("after the refusals: %v %v", res, err)
	}
	// Trailing semicolons and comments are one statement.
	if _, err := db.Query(ctx, "SELECT 1; -- done\n ;", sqlitedb.Limits{}); err != nil {
		t.Fatalf("trailing comment: %v", err)
	}
	got, err := objects.ReadValue(ctx, bs, v)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("the value changed: %v", err)
	}
}

// TestLimits: a query that runs for ever is interrupted at its time limit;
// one with more rows than the limit returns the first rows and says so.
func TestLimits(t *testing.T) {
	ctx := context.Background()
	db := open(t, mustRead(t, memoryDB(t, 100)))
	_, err := db.Query(ctx, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c",
		sqlitedb.Limits{Timeout: 200 * time.Millisecond})
	if !errors.Is(err, sqlitedb.ErrTimeout) {
		t.Fatalf("endless query: %v, want ErrTimeout", err)
	}
	// The connection is usable after the interrupt.
	res, err := db.Query(ctx, "SELECT id FROM messages ORDER BY id", sqlitedb.Limits{MaxRows: 7})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 7 || !res.Truncated || res.Rows[6][0].Int != 6 {
		t.Fatalf("row limit: %d rows, truncated %v", len(res.Rows), res.Truncated)
	}
	res, err = db.Query(ctx, "SELECT id FROM messages WHERE id < 3 ORDER BY id", sqlitedb.Limits{MaxRows: 3})
	if err != nil || len(res.Rows) != 3 || res.Truncated {
		t.Fatalf("exactly the limit: %v rows, truncated %v, %v", len(res.Rows), res.Truncated, err)
	}
	if _, err := db.Query(ctx, "SELECT zeroblob(100000000)", sqlitedb.Limits{}); !errors.Is(err, sqlitedb.ErrTooLarge) {
		t.Fatalf("a blob over the length limit: %v", err)
	}
}

func mustRead(t testing.TB, file string) []byte {
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestBadValues: values that are not databases, that merely start with the
// header, truncated or corrupt databases: each a clear error, no crash.
func TestBadValues(t *testing.T) {
	ctx := context.Background()
	good := mustRead(t, memoryDB(t, 20000))
	ps := 4096
	headerOnly := append([]byte(sqlitedb.Magic), make([]byte, 2*ps-16)...)
	binary.BigEndian.PutUint16(headerOnly[16:], uint16(ps))
	garbage := append([]byte(nil), headerOnly...)
	for i := 100; i < len(garbage); i++ {
		garbage[i] = byte(i * 7)
	}
	bigGarbage := append([]byte(nil), good[:ps]...)
	for i := 0; i < 600; i++ {
		page := make([]byte, ps)
		for j := range page {
			page[j] = byte(i + j*13)
		}
		bigGarbage = append(bigGarbage, page...)
	}
	badPageSize := append([]byte(nil), good[:3*ps]...)
	binary.BigEndian.PutUint16(badPageSize[16:], 1000)
	corrupt := append([]byte(nil), good...)
	for p := 2; p < len(corrupt)/ps; p += 3 { // scribble over b-tree pages
		copy(corrupt[p*ps:], bytes.Repeat([]byte{0xd, 0xff}, 20))
	}
	for _, c := range []struct {
		name    string
		content []byte
		want    []error // Open's error, else the scan's
	}{
		{"text", []byte("not a database\n"), []error{sqlitedb.ErrNotDatabase}},
		{"empty", nil, []error{sqlitedb.ErrNotDatabase}},
		{"header alone", []byte(sqlitedb.Magic), []error{sqlitedb.ErrNotDatabase}},
		{"not whole pages", good[:len(good)-100], []error{sqlitedb.ErrNotDatabase}},
		{"bad page size", badPageSize, []error{sqlitedb.ErrNotDatabase}},
		{"header then zeros", headerOnly, []error{sqlitedb.ErrNotDatabase, sqlitedb.ErrCorrupt}},
		{"header then garbage", garbage, []error{sqlitedb.ErrNotDatabase, sqlitedb.ErrCorrupt}},
		{"first page then garbage", bigGarbage, []error{sqlitedb.ErrCorrupt}},
		{"truncated", good[:len(good)/2/ps*ps], []error{sqlitedb.ErrCorrupt}},
		{"corrupt pages", corrupt, []error{sqlitedb.ErrCorrupt}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := scanAll(ctx, c.content)
			for _, w := range c.want {
				if errors.Is(err, w) {
					return
				}
			}
			t.Fatalf("got %v, want one of %v", err, c.want)
		})
	}
}

// scanAll opens content and reads every row of every table.
func scanAll(ctx context.Context, content []byte) error {
	bs := memstore.New()
	v, blocks := objects.NewFileValue(content)
	if err := bs.Put(ctx, blocks...); err != nil {
		return err
	}
	db, err := sqlitedb.Open(ctx, bs, v)
	if err != nil {
		return err
	}
	defer db.Close()
	res, err := db.Query(ctx, "SELECT name FROM sqlite_schema WHERE type='table'", sqlitedb.Limits{})
	if err != nil {
		return err
	}
	for _, r := range res.Rows {
		q := "SELECT * FROM \"" + strings.ReplaceAll(r[0].String(), "\"", "\"\"") + "\""
		if _, err := db.Query(ctx, q, sqlitedb.Limits{MaxRows: 1 << 20, Timeout: 5 * time.Second}); err != nil {
			return err
		}
	}
	_, err = db.Query(ctx, "PRAGMA integrity_check", sqlitedb.Limits{})
	return err
}

// TestWALModeWithoutWAL: a database in WAL mode is read as its main file, as
// sqlite3 reads a copy with no -wal beside it.
func TestWALModeWithoutWAL(t *testing.T) {
	file := memoryDB(t, 5000)
	sqlite3(t, file, "PRAGMA journal_mode=WAL; INSERT INTO facts VALUES('wal','mode','on'); PRAGMA wal_checkpoint(TRUNCATE);")
	content := mustRead(t, file)
	if content[18] != 2 || content[19] != 2 {
		t.Fatalf("header bytes 18-19 are %d %d: not WAL mode", content[18], content[19])
	}
	copyFile := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(copyFile, content, 0o600); err != nil {
		t.Fatal(err)
	}
	db := open(t, content)
	if !db.Pages().WALMode() {
		t.Fatal("WALMode false")
	}
	q := "SELECT * FROM facts ORDER BY subject"
	res, err := db.Query(context.Background(), q, sqlitedb.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := listMode(res), sqlite3(t, copyFile, "-readonly", q); got != want {
		t.Fatalf("got %q want %q", got, want)
	}
}

// TestMisChunked: a chunked value whose chunks are not single pages (a store
// crafted so) is refused as corrupt, never read at the wrong offsets.
func TestMisChunked(t *testing.T) {
	ctx := context.Background()
	content := mustRead(t, memoryDB(t, 20000))
	bs := memstore.New()
	// Two-page chunks under one file node.
	var links []objects.CID
	for off := 0; off < len(content) && len(links) < 64; off += 8192 {
		b := objects.NewValue(content[off:min(off+8192, len(content))])
		if err := bs.Put(ctx, b); err != nil {
			t.Fatal(err)
		}
		links = append(links, b.CID)
	}
	size := min(64*8192, len(content))
	node := encodeFileNode(links, uint64(size), make([]byte, 32))
	root := objects.Block{CID: objects.Sum(objects.CodecDagCBOR, node), Data: node}
	if err := bs.Put(ctx, root); err != nil {
		t.Fatal(err)
	}
	_, err := sqlitedb.Open(ctx, bs, root.CID)
	if !errors.Is(err, sqlitedb.ErrCorrupt) {
		t.Fatalf("mis-chunked value: %v, want ErrCorrupt", err)
	}
}

// encodeFileNode writes a chunked file node's canonical DAG-CBOR.
func encodeFileNode(links []objects.CID, size uint64, sum []byte) []byte {
	head := func(b []byte, maj byte, n uint64) []byte {
		switch {
		case n < 24:
			return append(b, maj<<5|byte(n))
		case n < 1<<8:
			return append(b, maj<<5|24, byte(n))
		case n < 1<<16:
			return binary.BigEndian.AppendUint16(append(b, maj<<5|25), uint16(n))
		case n < 1<<32:
			return binary.BigEndian.AppendUint32(append(b, maj<<5|26), uint32(n))
		}
		return binary.BigEndian.AppendUint64(append(b, maj<<5|27), n)
	}
	text := func(b []byte, s string) []byte { return append(head(b, 3, uint64(len(s))), s...) }
	b := head(nil, 5, 3)
	b = text(b, "size")
	b = head(b, 0, size)
	b = text(b, "chunks")
	b = head(b, 4, uint64(len(links)))
	for _, c := range links {
		cb := append([]byte{0}, c.Bytes()...)
		b = append(b, 0xd8, 42)
		b = append(head(b, 2, uint64(len(cb))), cb...)
	}
	b = text(b, "sha256")
	return append(head(b, 2, uint64(len(sum))), sum...)
}

// TestCellJSON pins the JSON of each storage class.
func TestCellJSON(t *testing.T) {
	db := open(t, mustRead(t, memoryDB(t, 1)))
	res, err := db.Query(context.Background(), "SELECT NULL, 42, -9223372036854775808, 2.5, 1.0, 1e300, 1e999, 'hi \"x\"', x'00ff'", sqlitedb.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res)
	want := `{"columns":["NULL","42","-9223372036854775808","2.5","1.0","1e300","1e999","'hi \"x\"'","x'00ff'"],"rows":[[null,42,-9223372036854775808,2.5,1.0,1e+300,"Inf","hi \"x\"",{"base64":"AP8="}]]}`
	if string(got) != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	var back sqlitedb.Result
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if string(again) != want {
		t.Fatalf("round trip: %s", again)
	}
}

// failing is a block store that cannot read one block.
type failing struct {
	*memstore.Store
	bad objects.CID
}

func (f failing) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	if c == f.bad {
		return nil, &objects.NotFoundError{CID: c}
	}
	return f.Store.Get(ctx, c)
}

// TestPagesScans: scans from several goroutines at once (the reads ahead of
// them racing their own reads) return the file's bytes; a page the store
// cannot read is that read's error, the pages around it still read; Close
// waits for the reads ahead.
func TestPagesScans(t *testing.T) {
	ctx := context.Background()
	content := mustRead(t, memoryDB(t, 8000))
	bs, v := store(t, content)
	p, err := sqlitedb.OpenPages(ctx, bs, v)
	if err != nil {
		t.Fatal(err)
	}
	ps := int64(p.PageSize())
	badPage := p.PageCount() / 2
	badCID, err := p.PageCID(ctx, badPage)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := sqlitedb.OpenPages(ctx, failing{bs, badCID}, v)
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 4)
	for g := range 4 {
		go func() {
			for n := int64(1); n <= p.PageCount(); n++ {
				if g%2 == 1 { // two goroutines read backwards
					n = p.PageCount() + 1 - n
				}
				page, err := p.Page(ctx, n)
				if err != nil || !bytes.Equal(page, content[(n-1)*ps:n*ps]) {
					errs <- fmt.Errorf("page %d: %v", n, err)
					return
				}
				if g%2 == 1 {
					n = p.PageCount() + 1 - n
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	p.Close()
	for n := int64(1); n <= fp.PageCount(); n++ {
		_, err := fp.Page(ctx, n)
		if (n == badPage) != (err != nil) {
			t.Fatalf("page %d of %d (the bad one %d): %v", n, fp.PageCount(), badPage, err)
		}
		if n == badPage && !errors.Is(err, objects.ErrNotFound) {
			t.Fatalf("the bad page: %v", err)
		}
	}
	fp.Close()
}

// TestResultBytes: a result is bounded in bytes as in rows: rows of big
// blobs stop the query with ErrTooLarge before memory goes.
func TestResultBytes(t *testing.T) {
	ctx := context.Background()
	db := open(t, mustRead(t, memoryDB(t, 100)))
	_, err := db.Query(ctx, "SELECT zeroblob(30000000) FROM messages", sqlitedb.Limits{})
	if !errors.Is(err, sqlitedb.ErrTooLarge) || !strings.Contains(err.Error(), "at row 3") {
		t.Fatalf("rows of 30 MB blobs: %v", err)
	}
	res, err := db.Query(ctx, "SELECT zeroblob(30000000) FROM messages LIMIT 1", sqlitedb.Limits{})
	if err != nil || len(res.Rows[0][0].Blob) != 30000000 {
		t.Fatalf("one 30 MB blob: %v", err)
	}
	if _, err := db.Query(ctx, "SELECT body FROM messages", sqlitedb.Limits{MaxBytes: 1000}); !errors.Is(err, sqlitedb.ErrTooLarge) {
		t.Fatalf("MaxBytes 1000: %v", err)
	}
}

// Conn lends the connection Open made (its schema read already) while no
// one else holds it, and opens another when it is held; a Query runs while
// it is lent, on a connection of its own. A diff of two versions so opens
// one connection a version, not two.
func TestConnLendsOpenConnection(t *testing.T) {
	ctx := context.Background()
	db := open(t, mustRead(t, memoryDB(t, 50)))
	c1, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c1 == c2 {
		t.Fatal("two callers hold one connection")
	}
	res, err := db.Query(ctx, "SELECT count(*) FROM messages", sqlitedb.Limits{})
	if err != nil || len(res.Rows) != 1 || res.Rows[0][0].Int != 51 {
		t.Fatalf("a query while connections are held: %v %v", res, err)
	}
	if err := db.Close(); err == nil {
		t.Fatal("Close with connections held succeeded")
	}
	for _, c := range []*sqlite.Conn{c2, c1} {
		if err := db.ReleaseConn(c); err != nil {
			t.Fatal(err)
		}
	}
	c3, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c3 != c1 {
		t.Fatal("the connection Open made was not lent again")
	}
	st, _, err := c3.PrepareTransient("SELECT count(*) FROM messages")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := st.Step(); !ok || err != nil || st.ColumnInt(0) != 51 {
		t.Fatalf("the lent connection reads: %v %v", ok, err)
	}
	st.Finalize()
	if err := db.ReleaseConn(c3); err != nil {
		t.Fatal(err)
	}
	if res, err := db.Query(ctx, "SELECT count(*) FROM messages", sqlitedb.Limits{}); err != nil || res.Rows[0][0].Int != 51 {
		t.Fatalf("a query on the connection given back: %v %v", res, err)
	}
}
