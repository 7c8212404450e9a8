package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/objects"
)

// SQLLimits bound one query (sqlitedb.Limits: rows, time).
type SQLLimits = sqlitedb.Limits

// SQLCell is one value of a result row, typed as SQLite returned it. In JSON:
// null; an integer as a JSON number; a real as a JSON number ("Inf" or "-Inf"
// as a string); text as a JSON string; a blob as {"base64": "..."}.
type SQLCell = sqlitedb.Cell

// SQLResult is a read-only query's result against a SQLite value at a commit.
type SQLResult struct {
	Key     string      `json:"key"`
	Commit  objects.CID `json:"commit"`
	CID     objects.CID `json:"cid"` // the value
	Columns []string    `json:"columns"`
	Rows    [][]SQLCell `json:"rows"`
	// Truncated: the query had more rows than the limit; Rows are the
	// first of them.
	Truncated bool `json:"truncated,omitempty"`
}

// SQLTable is a table or view of a SQLite value, as its schema names it.
type SQLTable struct {
	Name string `json:"name"`
	Type string `json:"type"` // "table" or "view"
	SQL  string `json:"sql"`  // its CREATE statement
	// Shadow: a table an FTS5 (or other virtual) table keeps its data in.
	Shadow bool `json:"shadow,omitempty"`
}

// SQL runs one read-only statement against key's SQLite value at rev,
// straight from the store (no checkout, no copy of the file): see
// sqlitedb for what is refused and how. A value that is not a SQLite
// database, a corrupt one, a refused statement, a query that fails or runs
// past its time limit: ErrBadRequest, with sqlitedb's error inside. A
// database in WAL mode whose commit also holds KEY-wal with content is
// refused: the changes in that log are not in the value.
func (v *View) SQL(ctx context.Context, agent, rev, key, query string, lim SQLLimits) (SQLResult, error) {
	db, out, err := v.openSQL(ctx, agent, rev, key)
	if err != nil {
		return SQLResult{}, err
	}
	defer db.Close()
	res, err := db.Query(ctx, query, lim)
	if err != nil {
		return SQLResult{}, sqlError(key, out.Commit, err)
	}
	out.Columns, out.Rows, out.Truncated = res.Columns, res.Rows, res.Truncated
	return out, nil
}

// SQLTables lists the tables and views of key's SQLite value at rev, in
// schema order by name.
func (v *View) SQLTables(ctx context.Context, agent, rev, key string) ([]SQLTable, error) {
	db, out, err := v.openSQL(ctx, agent, rev, key)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	res, err := db.Query(ctx, `SELECT name, type, coalesce(sql, '') FROM sqlite_schema WHERE type IN ('table', 'view') ORDER BY name`, SQLLimits{MaxRows: 100000})
	if err != nil {
		return nil, sqlError(key, out.Commit, err)
	}
	tables := make([]SQLTable, 0, len(res.Rows))
	virtual := map[string]bool{}
	for _, r := range res.Rows {
		t := SQLTable{Name: r[0].String(), Type: r[1].String(), SQL: r[2].String()}
		if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(t.SQL)), "CREATE VIRTUAL TABLE") {
			virtual[t.Name] = true
		}
		tables = append(tables, t)
	}
	for i, t := range tables {
		if base, _, ok := strings.Cut(t.Name, "_"); ok && virtual[base] && !virtual[t.Name] {
			for _, suf := range []string{"_data", "_idx", "_content", "_docsize", "_config", "_segments", "_segdir", "_stat", "_node", "_parent", "_rowid"} {
				if t.Name == base+suf {
					tables[i].Shadow = true
				}
			}
		}
	}
	return tables, nil
}

// SQLRows pages through one table or view of key's SQLite value at rev:
// at most limit rows (1 to 1000) from offset, in the table's own order
// (rowid, or primary key for a WITHOUT ROWID table). Truncated says more
// rows follow.
func (v *View) SQLRows(ctx context.Context, agent, rev, key, table string, offset, limit int) (SQLResult, error) {
	if table == "" {
		return SQLResult{}, badf("no table named")
	}
	if offset < 0 {
		return SQLResult{}, badf("offset %d is negative", offset)
	}
	if limit < 1 || limit > 1000 {
		return SQLResult{}, badf("limit %d is not from 1 to 1000", limit)
	}
	q := fmt.Sprintf(`SELECT * FROM "%s" LIMIT %d OFFSET %d`, strings.ReplaceAll(table, `"`, `""`), limit+1, offset)
	res, err := v.SQL(ctx, agent, rev, key, q, SQLLimits{MaxRows: limit})
	return res, err
}

// openSQL opens key's value at rev as a database.
func (v *View) openSQL(ctx context.Context, agent, rev, key string) (*sqlitedb.DB, SQLResult, error) {
	if err := objects.ValidateKey(key); err != nil {
		return nil, SQLResult{}, classify(err)
	}
	id, cm, err := v.resolve(ctx, agent, rev)
	if err != nil {
		return nil, SQLResult{}, err
	}
	t, err := objects.LoadTree(ctx, v.R.Blocks, cm.Tree)
	if err != nil {
		return nil, SQLResult{}, classify(err)
	}
	val, ok, err := t.Get(ctx, key)
	if err != nil {
		return nil, SQLResult{}, classify(err)
	}
	if !ok {
		return nil, SQLResult{}, &KeyNotFoundError{Key: key, At: id}
	}
	out := SQLResult{Key: key, Commit: id, CID: val}
	// A redacted version (whole, or the pages a row's redaction took) is
	// shown as redacted, never as the missing pages' error.
	if red, err := v.RedactionOf(ctx, val); err != nil {
		return nil, out, err
	} else if red != nil {
		return nil, out, &RedactedError{Key: key, Commit: id, Value: val, Redacted: red}
	}
	p, err := sqlitedb.OpenPages(ctx, v.R.Blocks, val)
	if err != nil {
		return nil, out, sqlError(key, id, err)
	}
	if p.WALMode() {
		if wal, ok, err := t.Get(ctx, key+"-wal"); err != nil {
			return nil, out, classify(err)
		} else if ok {
			n, err := objects.ContentSize(ctx, v.R.Blocks, wal)
			if err != nil {
				return nil, out, classify(err)
			}
			if n > 0 {
				return nil, out, badf("%s at %s is a database in WAL mode and %s-wal holds %d bytes of changes not in it: checkpoint the database (PRAGMA wal_checkpoint(TRUNCATE)) before it is committed", key, id.Short(), key, n)
			}
		}
	}
	db, err := sqlitedb.OpenPagesDB(ctx, p)
	if err != nil {
		return nil, out, sqlError(key, id, err)
	}
	return db, out, nil
}

// sqlError words a sqlitedb error for key at a commit and gives it its kind.
func sqlError(key string, at objects.CID, err error) error {
	switch {
	case errors.Is(err, sqlitedb.ErrNotDatabase):
		return &kindError{ErrBadRequest, fmt.Errorf("%s at %s is not a SQLite database: %w", key, at.Short(), err)}
	case errors.Is(err, sqlitedb.ErrCorrupt), errors.Is(err, sqlitedb.ErrRefused),
		errors.Is(err, sqlitedb.ErrTimeout), errors.Is(err, sqlitedb.ErrQuery), errors.Is(err, sqlitedb.ErrTooLarge):
		return &kindError{ErrBadRequest, fmt.Errorf("%s at %s: %w", key, at.Short(), err)}
	}
	return classify(err)
}
