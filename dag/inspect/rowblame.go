package inspect

import (
	"context"
	"errors"

	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/dag/sqlitedb/rowdiff"
	"github.com/agentstate/agentstate/objects"
)

// RowOrigin is one row of a table and the commit that last changed it.
type RowOrigin struct {
	Key []SQLCell `json:"key"`
	Origin
}

// RowBlame is each row of one table of a SQLite value at a commit with the
// commit, task and time that last inserted or changed it.
type RowBlame struct {
	Key        string      `json:"key"`
	Table      string      `json:"table"`
	Commit     objects.CID `json:"commit"`
	KeyColumns []string    `json:"keyColumns"`
	Rows       []RowOrigin `json:"rows"`
}

// BlameRows attributes each row of table in key's SQLite value at rev to
// the commit that last inserted or changed it: walking first parents back
// from rev, each commit whose value differs from its parent's is diffed by
// rows (rowdiff, reading only the pages that differ), and the rows it
// inserted or updated that are still unattributed are its. The walk stops
// when every row is attributed; a row still unattributed where a forget cut
// the history is the cut commit's, marked Boundary. A merged line of work's
// changes are the merge commit's.
func (v *View) BlameRows(ctx context.Context, agent, rev, key, table string) (RowBlame, error) {
	if err := objects.ValidateKey(key); err != nil {
		return RowBlame{}, classify(err)
	}
	if table == "" {
		return RowBlame{}, badf("no table named")
	}
	id, cm, err := v.resolve(ctx, agent, rev)
	if err != nil {
		return RowBlame{}, err
	}
	w := v.newBlameWalk(key)
	val, err := w.valueAt(ctx, cm.Tree)
	if err != nil {
		return RowBlame{}, err
	}
	if val.IsZero() {
		return RowBlame{}, &KeyNotFoundError{Key: key, At: id}
	}
	open := func(c objects.CID, at objects.CID) (*sqlitedb.DB, error) {
		if c.IsZero() {
			return nil, nil
		}
		db, err := sqlitedb.Open(ctx, v.R.Blocks, c)
		if errors.Is(err, sqlitedb.ErrNotDatabase) && at != id {
			return nil, nil // not a database then: every row is newer
		}
		if err != nil {
			return nil, sqlError(key, at, err)
		}
		return db, nil
	}
	db, err := open(val, id)
	if err != nil {
		return RowBlame{}, err
	}
	cols, keys, err := rowdiff.Keys(ctx, db, table)
	db.Close()
	if errors.Is(err, rowdiff.ErrBadKey) {
		return RowBlame{}, badf("%s at %s: %v", key, id.Short(), err)
	}
	if err != nil {
		return RowBlame{}, sqlError(key, id, err)
	}
	out := RowBlame{Key: key, Table: table, Commit: id, KeyColumns: cols, Rows: make([]RowOrigin, len(keys))}
	pending := map[string]int{}
	for i, k := range keys {
		out.Rows[i].Key = k
		pending[rowdiff.KeyString(k)] = i
	}
	lo, _, err := v.R.LogOptions(ctx, agent)
	if err != nil {
		return RowBlame{}, classify(err)
	}
	at, c := id, cm
	for len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return RowBlame{}, err
		}
		o := Origin{Commit: at, Task: c.Metadata["task"], Time: c.Time}
		var parent *objects.Commit
		var pid objects.CID
		if len(c.Parents) > 0 {
			pid = c.Parents[0]
			if lo.Cut != nil && lo.Cut(at, pid) {
				o.Boundary = true
			} else if pc, err := v.R.Commit(ctx, pid); err != nil {
				if !isMissing(err) {
					return RowBlame{}, classify(err)
				}
				o.Boundary = true
			} else {
				parent = pc
			}
		}
		now, err := w.valueAt(ctx, c.Tree)
		if err != nil {
			return RowBlame{}, err
		}
		var was objects.CID
		if parent != nil {
			if was, err = w.valueAt(ctx, parent.Tree); err != nil {
				return RowBlame{}, err
			}
		}
		if parent == nil || o.Boundary {
			for _, i := range pending {
				out.Rows[i].Origin = o // the root, or the cut: all that is left
			}
			break
		}
		if now != was {
			a, err := open(was, at)
			if err != nil {
				return RowBlame{}, err
			}
			b, err := open(now, at)
			if err != nil {
				if a != nil {
					a.Close()
				}
				return RowBlame{}, err
			}
			var d *RowDiff
			if b != nil {
				d, err = rowdiff.Compute(ctx, a, b, rowdiff.Options{})
			}
			if a != nil {
				a.Close()
			}
			if b != nil {
				b.Close()
			}
			if err != nil {
				return RowBlame{}, sqlError(key, at, err)
			}
			if d != nil {
				for _, t := range d.Tables {
					if t.Name != table {
						continue
					}
					for _, r := range t.Rows {
						if r.Change == "delete" {
							continue
						}
						if i, ok := pending[rowdiff.KeyString(r.Key)]; ok {
							out.Rows[i].Origin = o
							delete(pending, rowdiff.KeyString(r.Key))
						}
					}
					if t.Schema == "added" {
						for k, i := range pending {
							out.Rows[i].Origin = o
							delete(pending, k)
						}
					}
				}
			}
		}
		at, c = pid, parent
	}
	return out, nil
}
