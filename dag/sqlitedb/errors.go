package sqlitedb

import "errors"

// Errors. Every error the package returns wraps one of these (or a block
// store's error, for a value the store cannot read).
var (
	// ErrNotDatabase: the value is not a SQLite database file (no header,
	// a page size SQLite never writes, or a length that is not a whole
	// number of pages).
	ErrNotDatabase = errors.New("sqlitedb: not a SQLite database")
	// ErrCorrupt: the value starts like a database but its chunks or its
	// contents are not those of a well-formed one.
	ErrCorrupt = errors.New("sqlitedb: corrupt database")
	// ErrPageRange: a page number outside the database.
	ErrPageRange = errors.New("sqlitedb: page out of range")
	// ErrUnchunked: the value is one raw block, so its pages have no CIDs of
	// their own.
	ErrUnchunked = errors.New("sqlitedb: value is not chunked")
	// ErrRefused: the statement would write, attach a database, load an
	// extension or run a PRAGMA that is not a plain read.
	ErrRefused = errors.New("sqlitedb: statement refused")
	// ErrTimeout: the query ran past its time limit and was interrupted.
	ErrTimeout = errors.New("sqlitedb: query time limit reached")
	// ErrTooLarge: the result would hold more bytes than the limit, or
	// SQLite ran out of the memory a query may use.
	ErrTooLarge = errors.New("sqlitedb: result too large")
	// ErrQuery: SQLite refused or failed the query (a syntax error, no such
	// table, a value over the length limit, ...).
	ErrQuery = errors.New("sqlitedb: query failed")
)
