// Package sqlitedb opens a SQLite value in the store as a read-only database,
// straight from its blocks: no checkout, no temporary copy of the file.
//
// A SQLite value (a value that starts with the 16-byte header "SQLite format
// 3\0") larger than objects.ChunkThreshold is stored cut at every page
// boundary, one raw chunk per page, under list nodes (docs/format.md §8).
// Pages reads any offset of such a value through that chunk index, decoding
// only the list nodes on the path to the page asked for and caching the last
// chunks read; DB serves Pages to SQLite (modernc.org/sqlite, pure Go) as a
// read-only file system, so SQLite reads only the pages a query touches.
//
// Every connection a DB opens is read-only and guarded: the file is opened
// immutable (no locks, no journal, no WAL), PRAGMA query_only is on,
// trusted_schema off, defensive mode on, an authorizer allows reads alone
// (SELECT, reading tables, functions other than load_extension, and PRAGMAs
// that only report), and ATTACH is refused by the authorizer and by
// SQLITE_LIMIT_ATTACHED 0. Query adds a time limit (SQLite is interrupted
// when it passes) and a row limit.
//
// A database in WAL mode is read as its main file alone: what a checkpoint
// has put there, which is what sqlite3 reads from a copy of the file with no
// -wal beside it.
package sqlitedb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite/vfs"
	"zombiezen.com/go/sqlite"

	"github.com/agentstate/agentstate/objects"
)

// MaxLength is the largest string or blob a query may make (SQLITE_LIMIT_LENGTH).
const MaxLength = 64 << 20

// fileName is the name the database has in its one-file file system.
const fileName = "db"

// DB is a SQLite value opened as a read-only database. Its methods are safe
// for concurrent use; a Conn it returns is not (one goroutine at a time).
type DB struct {
	pages *Pages
	fsys  *vfs.FS
	uri   string

	qmu     sync.Mutex // one Query at a time on conn
	mu      sync.Mutex
	conn    *sqlite.Conn // Query's connection, opened by Open
	lent    bool         // conn is a Conn's until ReleaseConn
	readErr error        // the last error a VFS read met, for SQLite's bare I/O error
	conns   int          // Conns handed out and not closed
}

// Open opens the SQLite value at value from bs as a read-only database and
// reads its schema, so a value that is not a database, or whose header or
// schema is corrupt, is refused here (ErrNotDatabase, ErrCorrupt).
func Open(ctx context.Context, bs objects.BlockStore, value objects.CID) (*DB, error) {
	p, err := OpenPages(ctx, bs, value)
	if err != nil {
		return nil, err
	}
	return OpenPagesDB(ctx, p)
}

// OpenPagesDB opens a database over p (see Open).
func OpenPagesDB(ctx context.Context, p *Pages) (*DB, error) {
	d := &DB{pages: p}
	name, fsys, err := vfs.New(pageFS{d})
	if err != nil {
		return nil, fmt.Errorf("sqlitedb: registering the value's file system: %w", err)
	}
	d.fsys = fsys
	d.uri = "file:" + fileName + "?vfs=" + name + "&mode=ro&immutable=1"
	c, err := d.open(ctx)
	if err == nil {
		// One probe reads the header and the whole schema.
		err = probe(c)
		if err != nil {
			err = d.classify(ctx, err)
			c.Close()
		}
	}
	if err != nil {
		fsys.Close()
		p.Close()
		return nil, err
	}
	d.conn = c
	return d, nil
}

func probe(c *sqlite.Conn) error {
	st, _, err := c.PrepareTransient("SELECT count(*) FROM sqlite_schema")
	if err != nil {
		return err
	}
	defer st.Finalize()
	_, err = st.Step()
	return err
}

// Pages is the value's pages, for reading raw pages (Pages.Page, Pages.PageCID).
func (d *DB) Pages() *Pages { return d.pages }

// URI is a SQLite URI under which another connection of modernc.org/sqlite
// or a library on it (zombiezen.com/go/sqlite) in this process can open the
// same database while d is open: read-only and immutable, but without the
// guards Conn sets, which a caller opening it so must set itself.
func (d *DB) URI() string { return d.uri }

// Conn returns a guarded connection to the database (the package doc says
// how it is guarded) for the caller's own use until ReleaseConn; the
// caller releases it before closing d. It is zombiezen.com/go/sqlite's, so
// a caller has SQLite's whole read API, sessions (changesets between two
// databases) among it. The connection Open made (which has read the
// schema already) is lent when no Query is using it and no other caller
// holds it; otherwise a new one is opened. A caller may set the
// connection's interrupt; nothing else of its settings.
func (d *DB) Conn(ctx context.Context) (*sqlite.Conn, error) {
	if d.qmu.TryLock() { // no Query is running on d.conn
		d.mu.Lock()
		c := d.conn
		if c != nil && !d.lent {
			d.lent = true
			d.conns++
		} else {
			c = nil
		}
		d.mu.Unlock()
		d.qmu.Unlock()
		if c != nil {
			return c, nil
		}
	}
	c, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.conns++
	d.mu.Unlock()
	return c, nil
}

// ReleaseConn gives back a connection Conn returned: the one Open made is
// kept for the next Query or Conn, any other is closed.
func (d *DB) ReleaseConn(c *sqlite.Conn) error {
	d.mu.Lock()
	d.conns--
	lent := c == d.conn
	if lent {
		d.lent = false
	}
	d.mu.Unlock()
	if lent {
		c.SetInterrupt(nil)
		return nil
	}
	return c.Close()
}

func (d *DB) open(ctx context.Context) (*sqlite.Conn, error) {
	c, err := sqlite.OpenConn(d.uri, sqlite.OpenReadOnly|sqlite.OpenURI)
	if err != nil {
		return nil, d.classify(ctx, err)
	}
	if err := guard(c); err != nil {
		c.Close()
		return nil, fmt.Errorf("sqlitedb: guarding a connection: %w", err)
	}
	return c, nil
}

// guard makes c read-only and refusing: defensive mode, no attached
// databases, bounded lengths, query_only, trusted_schema off, the authorizer.
func guard(c *sqlite.Conn) error {
	if err := c.SetDefensive(true); err != nil {
		return err
	}
	c.Limit(sqlite.LimitAttached, 0)
	c.Limit(sqlite.LimitLength, MaxLength)
	c.Limit(sqlite.LimitSQLLength, 1<<20)
	// Temporary b-trees (sorting, GROUP BY, DISTINCT) are kept in memory:
	// the value's file system has no files but the database.
	for _, q := range []string{"PRAGMA query_only=1", "PRAGMA trusted_schema=0", "PRAGMA temp_store=MEMORY"} {
		st, _, err := c.PrepareTransient(q)
		if err != nil {
			return err
		}
		_, err = st.Step()
		st.Finalize()
		if err != nil {
			return err
		}
	}
	return c.SetAuthorizer(sqlite.AuthorizeFunc(authorize))
}

// Close closes the database and unregisters the value's file system. Every
// Conn must have been released first.
func (d *DB) Close() error {
	d.qmu.Lock() // a Query in progress finishes first
	defer d.qmu.Unlock()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.conns > 0 {
		return fmt.Errorf("sqlitedb: closing a database with %d connection(s) still open", d.conns)
	}
	var err error
	if d.conn != nil {
		err = d.conn.Close()
		d.conn = nil
	}
	if ferr := d.fsys.Close(); err == nil {
		err = ferr
	}
	d.pages.Close()
	return err
}

// classify turns a SQLite error into one of the package's errors.
func (d *DB) classify(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	for _, e := range []error{ErrRefused, ErrTimeout, ErrCorrupt, ErrNotDatabase, ErrQuery, ErrTooLarge} {
		if errors.Is(err, e) {
			return err
		}
	}
	msg := strings.TrimPrefix(err.Error(), "sqlite: ")
	switch sqlite.ErrCode(err).ToPrimary() {
	case sqlite.ResultNotADB:
		return fmt.Errorf("%w: %s", ErrNotDatabase, msg)
	case sqlite.ResultCorrupt, sqlite.ResultFormat:
		return fmt.Errorf("%w: %s", ErrCorrupt, msg)
	case sqlite.ResultIOErr:
		d.mu.Lock()
		rerr := d.readErr
		d.mu.Unlock()
		if rerr != nil {
			return fmt.Errorf("sqlitedb: reading the database: %w", rerr)
		}
		return fmt.Errorf("%w: %s", ErrCorrupt, msg)
	case sqlite.ResultAuth, sqlite.ResultReadOnly, sqlite.ResultPerm:
		return fmt.Errorf("%w: %s", ErrRefused, msg)
	case sqlite.ResultNoMem, sqlite.ResultTooBig:
		return fmt.Errorf("%w: %s", ErrTooLarge, msg)
	case sqlite.ResultInterrupt:
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return ctx.Err()
		}
		return fmt.Errorf("%w", ErrTimeout)
	}
	return fmt.Errorf("%w: %s", ErrQuery, msg)
}

func (d *DB) noteReadErr(err error) {
	d.mu.Lock()
	d.readErr = err
	d.mu.Unlock()
}

// readPragmas are the PRAGMAs a query may run: true for those that may take
// an argument (a table, index or schema name: they only report), false for
// those allowed only without one (with one they would change a setting).
var readPragmas = map[string]bool{
	"application_id": false, "auto_vacuum": false, "cache_size": false, "collation_list": false,
	"compile_options": false, "database_list": false, "encoding": false, "foreign_key_check": true,
	"foreign_key_list": true, "freelist_count": false, "function_list": false, "index_info": true,
	"index_list": true, "index_xinfo": true, "integrity_check": true, "journal_mode": false,
	"module_list": false, "page_count": false, "page_size": false, "pragma_list": false,
	"quick_check": true, "schema_version": false, "table_info": true, "table_list": true,
	"table_xinfo": true, "user_version": false, "data_version": false, "max_page_count": false,
	"query_only": false, "trusted_schema": false, "temp_store": false,
}

// authorize allows reading alone: SELECT, reading columns, recursive CTEs,
// functions (load_extension is off in the library itself) and the PRAGMAs
// above. Everything else (writes, schema changes, ATTACH and DETACH,
// ANALYZE, REINDEX, virtual table creation, transactions and savepoints: an
// immutable database needs none, and a transaction left open would outlive
// its statement on a shared connection) is denied.
func authorize(a sqlite.Action) sqlite.AuthResult {
	switch a.Type() {
	case sqlite.OpSelect, sqlite.OpRead, sqlite.OpRecursive, sqlite.OpFunction:
		return sqlite.AuthResultOK
	case sqlite.OpPragma:
		takesArg, ok := readPragmas[strings.ToLower(a.Pragma())]
		if ok && (a.PragmaArg() == "" || takesArg) {
			return sqlite.AuthResultOK
		}
	}
	return sqlite.AuthResultDeny
}

// pageFS is the one-file file system SQLite reads the value through.
type pageFS struct{ d *DB }

func (f pageFS) Open(name string) (fs.File, error) {
	if name != fileName {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &pageFile{d: f.d}, nil
}

type pageFile struct {
	d   *DB
	off int64
}

func (f *pageFile) Stat() (fs.FileInfo, error) { return fileInfo{size: f.d.pages.Size()}, nil }
func (f *pageFile) Close() error               { return nil }

func (f *pageFile) Read(b []byte) (int, error) {
	n, err := f.d.pages.ReadAt(b, f.off)
	f.off += int64(n)
	if err != nil && err != io.EOF {
		f.d.noteReadErr(err)
	}
	return n, err
}

func (f *pageFile) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += f.off
	case io.SeekEnd:
		off += f.d.pages.Size()
	default:
		return f.off, fmt.Errorf("sqlitedb: seek whence %d", whence)
	}
	if off < 0 {
		return f.off, fmt.Errorf("sqlitedb: seek to %d", off)
	}
	f.off = off
	return off, nil
}

type fileInfo struct{ size int64 }

func (i fileInfo) Name() string       { return fileName }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return 0o444 }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return nil }
