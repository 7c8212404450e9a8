package inspect

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/dag/sqlitedb/rowdiff"
	"github.com/agentstate/agentstate/objects"
)

// RowDiff is a SQLite value's change by table (package rowdiff): schema
// changes, and per table the rows inserted, deleted and updated with the
// changed columns' old and new values. Its SQL method gives statements in
// the contract of SQLite's sqldiff.
type RowDiff = rowdiff.Diff

// DiffRows fills Rows for each change in changes whose old or new value is
// a SQLite database, reading only the pages that differ (see rowdiff). A
// value that is not a database is left alone; a corrupt database, or one in
// WAL mode whose -wal in the same change holds changes not in the value,
// gets RowsError instead, and the other changes are still filled.
func (v *View) DiffRows(ctx context.Context, changes []Change) error {
	return v.diffRows(ctx, changes, rowdiff.Options{})
}

// DiffSQL is DiffRows computing also what each Rows' SQL method needs
// (the shadow tables of virtual tables, the tables SQL writes whole).
func (v *View) DiffSQL(ctx context.Context, changes []Change) error {
	return v.diffRows(ctx, changes, rowdiff.Options{SQL: true})
}

// DiffCounts is DiffRows for each table's counts only (diff --stat): the
// counts are DiffRows's, and a rowid table's Rows are left empty
// (rowdiff.Options.Counts).
func (v *View) DiffCounts(ctx context.Context, changes []Change) error {
	return v.diffRows(ctx, changes, rowdiff.Options{Counts: true})
}

func (v *View) diffRows(ctx context.Context, changes []Change, o rowdiff.Options) error {
	walSize := map[string]uint64{}
	for _, c := range changes {
		if strings.HasSuffix(c.Path, "-wal") {
			walSize[strings.TrimSuffix(c.Path, "-wal")] = c.NewSize
		}
	}
	for i := range changes {
		c := &changes[i]
		if c.OldRedacted != nil || c.NewRedacted != nil {
			continue // a side's content is gone: no rows to compare
		}
		d, err := v.rowDiff(ctx, c.Old, c.New, walSize[c.Path], o)
		switch {
		case err == nil:
			c.Rows = d
		case errors.Is(err, sqlitedb.ErrNotDatabase) && !isDB(ctx, v, c.Old) && !isDB(ctx, v, c.New):
			// not a database: nothing to add
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, objects.ErrNotFound):
			return classify(err)
		default:
			c.RowsError = strings.TrimPrefix(err.Error(), "sqlitedb: ")
		}
	}
	return nil
}

// isDB reports whether value c starts with the SQLite header.
func isDB(ctx context.Context, v *View, c objects.CID) bool {
	if c.IsZero() {
		return false
	}
	p, err := sqlitedb.OpenPages(ctx, v.R.Blocks, c)
	if err == nil {
		p.Close()
	}
	return err == nil || !errors.Is(err, sqlitedb.ErrNotDatabase)
}

// rowDiff computes the change from value a to value b (either may be zero).
// Both values' pages are opened first and what the comparison will read is
// read ahead (sqlitedb.ReadAheadDiff) while SQLite opens each database and
// reads its schema.
func (v *View) rowDiff(ctx context.Context, a, b objects.CID, wal uint64, o rowdiff.Options) (*RowDiff, error) {
	var pages [2]*sqlitedb.Pages
	defer func() {
		for _, p := range pages {
			if p != nil {
				p.Close() // again after its DB's Close: a no-op
			}
		}
	}()
	for i, c := range []objects.CID{a, b} {
		if c.IsZero() {
			continue
		}
		p, err := sqlitedb.OpenPages(ctx, v.R.Blocks, c)
		if err != nil {
			return nil, err
		}
		pages[i] = p
		if i == 1 && p.WALMode() && wal > 0 {
			return nil, fmt.Errorf("a database in WAL mode whose -wal holds %d bytes of changes not in it: checkpoint the database (PRAGMA wal_checkpoint(TRUNCATE)) before it is committed", wal)
		}
	}
	sqlitedb.ReadAheadDiff(ctx, pages[0], pages[1])
	var dbs [2]*sqlitedb.DB
	for i, p := range pages {
		if p == nil {
			continue
		}
		db, err := sqlitedb.OpenPagesDB(ctx, p)
		if err != nil {
			return nil, err
		}
		defer db.Close()
		dbs[i] = db
	}
	if dbs[0] == nil && dbs[1] == nil {
		return nil, sqlitedb.ErrNotDatabase
	}
	return rowdiff.Compute(ctx, dbs[0], dbs[1], o)
}
