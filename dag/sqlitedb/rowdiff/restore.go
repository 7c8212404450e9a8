package rowdiff

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/dag/sqlitedb"
)

// RestoreSQL returns the one statement that puts the row of table keyed by
// key (as Lookup takes it) in db back to want: re-inserted (with its rowid,
// when key is the rowid) when db does not hold it, updated to want's values
// when it does, deleted when want is nil; it is "" when want is nil and db
// holds no such row. A column the table gained since want was read keeps
// its default (insert) or its value (update). Its values are SQL
// literals, so the statement binds nothing. A table db lacks, a key that
// does not fit it, and a column of want the table no longer has are
// ErrBadKey.
func RestoreSQL(ctx context.Context, db *sqlitedb.DB, table string, key []Cell, want *Row) (string, error) {
	s, err := openSide(ctx, db)
	if err != nil {
		return "", err
	}
	defer db.ReleaseConn(s.conn)
	o, ok := s.objs[table]
	if !ok || o.Type != "table" {
		return "", fmt.Errorf("%w: no table %q", ErrBadKey, table)
	}
	t, err := s.info(table)
	if err != nil {
		return "", err
	}
	where, err := keyWhere(t, table, key)
	if err != nil {
		return "", err
	}
	conds := make([]string, len(where))
	for i, w := range where {
		conds[i] = strings.TrimSuffix(w, "?") + Literal(key[i])
	}
	cond := strings.Join(conds, " AND ")
	out := map[string]row{}
	if err := s.read(ctx, table, t, strings.Join(where, " AND "), key, nil, out); err != nil {
		return "", err
	}
	have := len(out) > 0
	if want == nil {
		if !have {
			return "", nil
		}
		return "DELETE FROM " + quoteID(table) + " WHERE " + cond, nil
	}
	vals := map[string]Cell{}
	for i, c := range want.Columns {
		if !slices.Contains(t.cols, c) {
			return "", fmt.Errorf("%w: %q no longer has the row's column %q", ErrBadKey, table, c)
		}
		vals[c] = want.Values[i]
	}
	if have {
		var set []string
		for _, c := range t.cols {
			if v, ok := vals[c]; ok {
				set = append(set, quoteID(c)+"="+Literal(v))
			}
		}
		return "UPDATE " + quoteID(table) + " SET " + strings.Join(set, ",") + " WHERE " + cond, nil
	}
	var cols, lits []string
	if where[0] == "rowid=?" && !t.ipk {
		cols, lits = append(cols, "rowid"), append(lits, Literal(key[0]))
	}
	for _, c := range t.cols {
		if v, ok := vals[c]; ok {
			cols = append(cols, quoteID(c))
			lits = append(lits, Literal(v))
		}
	}
	return "INSERT INTO " + quoteID(table) + "(" + strings.Join(cols, ",") + ") VALUES(" + strings.Join(lits, ",") + ")", nil
}
