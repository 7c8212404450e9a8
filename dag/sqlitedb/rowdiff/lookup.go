package rowdiff

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/dag/sqlitedb"
)

// ErrBadKey: a row's key does not fit its table (a composite key with the
// wrong number of values, a non-integer rowid).
var ErrBadKey = errors.New("rowdiff: key does not fit the table")

// Row is one row of a table as Lookup found it.
type Row struct {
	Columns []string `json:"columns"`
	Values  []Cell   `json:"values"`
	// Root and Rowid: when the row was looked up by rowid in a rowid table,
	// the table's root page and the rowid (for RowPath); Root is 0
	// otherwise.
	Root, Rowid int64 `json:"-"`
}

// Lookup reads the row of table whose key is key in db: its primary key's
// values (one value, or one per column of a composite key), or its rowid
// in a table with no declared primary key, an INTEGER PRIMARY KEY, or a
// virtual (FTS5) table. found is false when the table or the row is not
// there.
func Lookup(ctx context.Context, db *sqlitedb.DB, table string, key []Cell) (Row, bool, error) {
	s, err := openSide(ctx, db)
	if err != nil {
		return Row{}, false, err
	}
	defer db.ReleaseConn(s.conn)
	o, ok := s.objs[table]
	if !ok || o.Type != "table" {
		return Row{}, false, nil
	}
	t, err := s.info(table)
	if err != nil {
		return Row{}, false, err
	}
	where, err := keyWhere(t, table, key)
	if err != nil {
		return Row{}, false, err
	}
	out := map[string]row{}
	if err := s.read(ctx, table, t, strings.Join(where, " AND "), key, nil, out); err != nil {
		return Row{}, false, err
	}
	res := Row{Columns: t.cols}
	if t.kind == "table" && where[0] == "rowid=?" && key[0].Kind == sqlitedb.Integer {
		res.Root, res.Rowid = o.Root, key[0].Int
	}
	for _, r := range out {
		res.Values = r.vals
		return res, true, nil
	}
	return res, false, nil
}

// keyWhere is the condition, one "COLUMN=?" per value of key, that finds
// the row key names in table t (see Lookup).
func keyWhere(t tinfo, table string, key []Cell) ([]string, error) {
	var where []string
	switch {
	case len(key) == 1 && key[0].Kind == sqlitedb.Integer && t.kind != "without rowid" && (t.ipk || len(t.decl) == 0 || len(t.decl) > 1):
		where = []string{"rowid=?"}
	case len(t.decl) > 0 && len(key) == len(t.decl):
		for _, i := range t.decl {
			where = append(where, quoteID(t.cols[i])+"=?")
		}
	case len(key) == 1 && t.kind != "without rowid":
		where = []string{"rowid=?"}
	default:
		if len(t.decl) > 0 {
			return nil, fmt.Errorf("%w: %q's primary key has %d column(s), the key gives %d value(s)", ErrBadKey, table, len(t.decl), len(key))
		}
		return nil, fmt.Errorf("%w: %q has no primary key: give its rowid", ErrBadKey, table)
	}
	return where, nil
}

// Keys reads the key of every row of table in db (see Table.Key for what a
// key is), in key order, and the key's column names.
func Keys(ctx context.Context, db *sqlitedb.DB, table string) ([]string, [][]Cell, error) {
	s, err := openSide(ctx, db)
	if err != nil {
		return nil, nil, err
	}
	defer db.ReleaseConn(s.conn)
	if o, ok := s.objs[table]; !ok || o.Type != "table" {
		return nil, nil, fmt.Errorf("%w: no table %q", ErrBadKey, table)
	}
	t, err := s.info(table)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]row{}
	if err := s.read(ctx, table, t, "", nil, nil, out); err != nil {
		return nil, nil, err
	}
	keys := make([][]Cell, 0, len(out))
	for _, r := range out {
		keys = append(keys, r.key)
	}
	slices.SortFunc(keys, compareKeys)
	return t.key(), keys, nil
}

// KeyString is a key's identity, for maps.
func KeyString(k []Cell) string { return keyString(k) }
