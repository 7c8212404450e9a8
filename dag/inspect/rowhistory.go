package inspect

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/dag/sqlitedb/rowdiff"
	"github.com/agentstate/agentstate/objects"
)

// RowVersion is one commit that inserted, changed or deleted a row, and
// the row's values after it.
type RowVersion struct {
	Commit  objects.CID `json:"commit"`
	Task    string      `json:"task"` // the commit's task, "" for none
	Time    int64       `json:"time"`
	Message string      `json:"message"`
	Change  string      `json:"change"` // "insert", "update", "delete"
	// Columns and Values are the row after the commit (Values empty for a
	// delete); Old and OldColumns before it (empty for an insert); Changed
	// names an update's changed columns.
	Columns    []string  `json:"columns"`
	Values     []SQLCell `json:"values,omitempty"`
	OldColumns []string  `json:"oldColumns,omitempty"`
	Old        []SQLCell `json:"old,omitempty"`
	Changed    []string  `json:"changed,omitempty"`
	// Boundary says a forget cut the history below this commit: its
	// change is against nothing, and the row may be older.
	Boundary bool `json:"boundary,omitempty"`
}

// RowHistory is the history of one row of a SQLite value, newest first.
type RowHistory struct {
	Key      string       `json:"key"`
	Table    string       `json:"table"`
	PK       []SQLCell    `json:"pk"`
	Versions []RowVersion `json:"versions"`
}

// ParseRowRef parses TABLE:PK: PK is the row's primary key value (JSON: a
// number, a string, {"base64": ...} for a blob; a bare word is text), a
// JSON array of them for a composite key, or the rowid.
func ParseRowRef(ref string) (string, []SQLCell, error) {
	table, pk, ok := strings.Cut(ref, ":")
	if !ok || table == "" || pk == "" {
		return "", nil, badf("row %q is not TABLE:PK", ref)
	}
	if strings.HasPrefix(pk, "[") {
		var vals []json.RawMessage
		if err := json.Unmarshal([]byte(pk), &vals); err != nil || len(vals) == 0 {
			return "", nil, badf("row %q: the key %s is not a JSON array of values", ref, pk)
		}
		cells := make([]SQLCell, len(vals))
		for i, v := range vals {
			c, err := jsonCell(v)
			if err != nil {
				return "", nil, badf("row %q: %v", ref, err)
			}
			cells[i] = c
		}
		return table, cells, nil
	}
	if n, err := strconv.ParseInt(pk, 10, 64); err == nil {
		return table, []SQLCell{{Kind: sqlitedb.Integer, Int: n}}, nil
	}
	if c, err := jsonCell(json.RawMessage(pk)); err == nil {
		return table, []SQLCell{c}, nil
	}
	return table, []SQLCell{{Kind: sqlitedb.Text, Text: pk}}, nil
}

func jsonCell(v json.RawMessage) (SQLCell, error) {
	var x any
	d := json.NewDecoder(strings.NewReader(string(v)))
	d.UseNumber()
	if err := d.Decode(&x); err != nil {
		return SQLCell{}, err
	}
	switch t := x.(type) {
	case json.Number:
		if n, err := t.Int64(); err == nil {
			return SQLCell{Kind: sqlitedb.Integer, Int: n}, nil
		}
		f, err := t.Float64()
		if err != nil || math.IsInf(f, 0) {
			return SQLCell{}, fmt.Errorf("%s is not a number SQLite holds", t)
		}
		return SQLCell{Kind: sqlitedb.Real, Real: f}, nil
	case string:
		return SQLCell{Kind: sqlitedb.Text, Text: t}, nil
	case nil:
		return SQLCell{}, fmt.Errorf("a key value cannot be null")
	case map[string]any:
		if s, ok := t["base64"].(string); ok && len(t) == 1 {
			b, err := base64.StdEncoding.DecodeString(s)
			if err == nil {
				return SQLCell{Kind: sqlitedb.Blob, Blob: b}, nil
			}
		}
	}
	return SQLCell{}, fmt.Errorf("%s is not a key value (a number, a string or {\"base64\": ...})", v)
}

// RowHistory lists every commit from rev (default HEAD) back that
// inserted, changed or deleted one row of key's SQLite value, newest
// first, each with the row's values after it (and before, for an update),
// at most limit of them (<= 0: all). Only commits that changed the key's
// value are read, and of each version only the row (a lookup by key
// through SQLite, reading the pages on its path). A commit is compared
// with its first parent. A table that does not exist at a version, or a
// value that is not a database there, holds no row.
func (v *View) RowHistory(ctx context.Context, agent, rev, key, ref string, limit int) (RowHistory, error) {
	if err := objects.ValidateKey(key); err != nil {
		return RowHistory{}, classify(err)
	}
	table, pk, err := ParseRowRef(ref)
	if err != nil {
		return RowHistory{}, err
	}
	start, _, err := v.resolve(ctx, agent, rev)
	if err != nil {
		return RowHistory{}, err
	}
	lo, _, err := v.R.LogOptions(ctx, agent)
	if err != nil {
		return RowHistory{}, classify(err)
	}
	w := v.newBlameWalk(key)
	type state struct {
		row   rowdiff.Row
		found bool
	}
	rows := map[objects.CID]state{}
	rowAt := func(val, at objects.CID) (state, error) {
		if val.IsZero() {
			return state{}, nil
		}
		if s, ok := rows[val]; ok {
			return s, nil
		}
		db, err := sqlitedb.Open(ctx, v.R.Blocks, val)
		if errors.Is(err, sqlitedb.ErrNotDatabase) {
			rows[val] = state{}
			return state{}, nil
		}
		if err != nil {
			return state{}, sqlError(key, at, err)
		}
		defer db.Close()
		r, found, err := rowdiff.Lookup(ctx, db, table, pk)
		if errors.Is(err, rowdiff.ErrBadKey) {
			return state{}, badf("%v", err)
		}
		if err != nil {
			return state{}, sqlError(key, at, err)
		}
		s := state{row: r, found: found}
		rows[val] = s
		return s, nil
	}
	// A row found by rowid is read only where its path (the schema pages
	// and the table's pages from root to its leaf, by chunk CID) changed:
	// a version whose path equals its parent's holds the same row.
	var root, rowid int64
	type pathSig struct {
		path []objects.CID
		sum  string
		ok   bool
	}
	paths := map[[2]objects.CID]pathSig{} // (value, root) -> its path to the row
	pathOf := func(val objects.CID) (pathSig, error) {
		k := [2]objects.CID{val}
		if ps, ok := paths[k]; ok {
			return ps, nil
		}
		if val.IsZero() {
			return pathSig{}, nil
		}
		p, err := sqlitedb.OpenPages(ctx, v.R.Blocks, val)
		if err != nil {
			return pathSig{}, nil // not a database: read it through SQLite
		}
		path, sum, ok, err := rowdiff.RowPath(ctx, p, root, rowid)
		p.Close()
		if err != nil {
			return pathSig{}, nil // let SQLite say what is wrong
		}
		ps := pathSig{path, sum, ok}
		paths[k] = ps
		return ps, nil
	}
	samePath := func(a, b objects.CID) (bool, error) {
		if root == 0 {
			return false, nil
		}
		pa, err := pathOf(a)
		if err != nil {
			return false, err
		}
		pb, err := pathOf(b)
		if err != nil {
			return false, err
		}
		return pa.ok && pb.ok && pa.sum == pb.sum && slices.Equal(pa.path, pb.path), nil
	}
	out := RowHistory{Key: key, Table: table, PK: pk, Versions: []RowVersion{}}
	for le, err := range dag.LogWith(ctx, v.R.Blocks, start, lo) {
		if err != nil {
			return RowHistory{}, classify(err)
		}
		if limit > 0 && len(out.Versions) >= limit {
			break
		}
		val, err := w.valueAt(ctx, le.Commit.Tree)
		if err != nil {
			return RowHistory{}, err
		}
		var pval objects.CID
		boundary := false
		if ps := le.Commit.Parents; len(ps) > 0 {
			if slices.Contains(le.Cut, ps[0]) {
				boundary = true
			} else if pc, err := v.R.Commit(ctx, ps[0]); err != nil {
				if !isMissing(err) {
					return RowHistory{}, classify(err)
				}
				boundary = true
			} else if pval, err = w.valueAt(ctx, pc.Tree); err != nil {
				return RowHistory{}, err
			}
		}
		if val == pval {
			continue
		}
		if same, err := samePath(val, pval); err != nil {
			return RowHistory{}, err
		} else if same {
			continue
		}
		now, err := rowAt(val, le.CID)
		if err != nil {
			return RowHistory{}, err
		}
		was, err := rowAt(pval, le.CID)
		if err != nil {
			return RowHistory{}, err
		}
		for _, st := range []state{now, was} {
			if st.row.Root != 0 && (st.row.Root != root || st.row.Rowid != rowid) {
				root, rowid = st.row.Root, st.row.Rowid
				clear(paths) // paths were to another root
			}
		}
		rv := RowVersion{Commit: le.CID, Task: le.Commit.Metadata["task"], Time: le.Commit.Time, Message: le.Commit.Message, Boundary: boundary,
			Columns: now.row.Columns}
		switch {
		case now.found && !was.found:
			rv.Change, rv.Values = "insert", now.row.Values
		case !now.found && was.found:
			rv.Change, rv.Columns, rv.Old = "delete", was.row.Columns, was.row.Values
		case now.found && was.found:
			rv.Changed = changedColumns(was.row, now.row)
			if len(rv.Changed) == 0 {
				continue
			}
			rv.Change, rv.Values, rv.Old = "update", now.row.Values, was.row.Values
			if !slices.Equal(was.row.Columns, now.row.Columns) {
				rv.OldColumns = was.row.Columns
			}
		default:
			continue
		}
		if rv.Columns == nil {
			rv.Columns = []string{}
		}
		out.Versions = append(out.Versions, rv)
	}
	return out, nil
}

// changedColumns names the columns whose values differ between two
// versions of a row (a column only one has reads as NULL in the other).
func changedColumns(a, b rowdiff.Row) []string {
	get := func(r rowdiff.Row, c string) SQLCell {
		if i := slices.Index(r.Columns, c); i >= 0 {
			return r.Values[i]
		}
		return SQLCell{}
	}
	var out []string
	seen := map[string]bool{}
	for _, c := range slices.Concat(b.Columns, a.Columns) {
		if seen[c] {
			continue
		}
		seen[c] = true
		x, y := get(a, c), get(b, c)
		if rowdiff.Literal(x) != rowdiff.Literal(y) || x.Kind != y.Kind {
			out = append(out, c)
		}
	}
	return out
}
