package inspect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/sqlitedb"
	"github.com/agentstate/agentstate/dag/sqlitedb/rowdiff"
	"github.com/agentstate/agentstate/objects"
)

// RowValues is one version of a row: its columns and their values.
type RowValues struct {
	Columns []string  `json:"columns"`
	Values  []SQLCell `json:"values"`
}

// RevertRowPlan is what reverting a commit's (or a task's) change to one
// row of a SQLite value does at an agent's HEAD. Before, After and AtHead
// are the row before the change, after it and at HEAD (nil: no such row).
// Action is "insert" (the change deleted the row), "delete" (it inserted
// it), "update" (it changed it), "done" (HEAD already holds the row as it
// was before) or "conflict" (a later commit changed the row too).
type RevertRowPlan struct {
	Rev    string      `json:"rev"`
	Commit objects.CID `json:"commit"`
	Base   objects.CID `json:"base,omitzero"`
	Task   string      `json:"task,omitempty"`
	Head   objects.CID `json:"head"`
	Key    string      `json:"key"`
	Table  string      `json:"table"`
	Row    string      `json:"row"` // TABLE:PK as given
	PK     []SQLCell   `json:"pk"`
	Before *RowValues  `json:"before"`
	After  *RowValues  `json:"after"`
	AtHead *RowValues  `json:"atHead"`
	Action string      `json:"action"`
	// New is the revert's commit (RevertRow only).
	New objects.CID `json:"new,omitzero"`
}

// RowConflictError is a refused row revert: a later commit changed the
// row to values other than the reverted change's. Nothing was written.
type RowConflictError struct {
	Rev, Key, Row string
}

func (e *RowConflictError) Error() string {
	return fmt.Sprintf("revert %s: refused: later commits changed row %s of %q too (HEAD holds neither the row %s left nor the one before it); nothing was reverted",
		e.Rev, e.Row, e.Key, e.Rev)
}

// Is makes the error ErrRevertConflict to errors.Is.
func (e *RowConflictError) Is(target error) bool { return target == ErrRevertConflict }

// PlanRevertRow returns what reverting rev's change to the row ref
// (TABLE:PK, as RowHistory takes it) of key's SQLite value would do at
// agent's HEAD; it writes nothing. A row rev did not change is
// ErrBadRequest.
func (v *View) PlanRevertRow(ctx context.Context, agent, rev, key, ref string) (RevertRowPlan, error) {
	p, err := v.revertRowChange(ctx, agent, rev, key, ref)
	if err != nil {
		return RevertRowPlan{}, err
	}
	head, t, err := v.headTree(ctx, agent)
	if err != nil {
		return RevertRowPlan{}, err
	}
	p.Head = head
	_, err = v.judgeRevertRow(ctx, t, &p)
	return p, err
}

// RevertRow makes one commit on agent's HEAD (by compare-and-swap, as
// every edit) whose value at key is HEAD's with the row ref put back to
// what it was before rev changed it: re-inserted, deleted or its old
// values written, by one statement SQLite runs on an in-memory copy of
// HEAD's database (sqlitedb.Apply), stored as a new value. It is refused
// with a *RowConflictError, naming the row, when HEAD's row is neither the
// one rev left nor the one before it; a row HEAD already holds as it was
// is ErrNoChange. The commit's message is o.Message or "revert SHORTCID
// row TABLE:PK of KEY"; its metadata is o.Metadata with "op": "revert",
// "revert": the commit reverted and "revertRow": the row.
func (v *View) RevertRow(ctx context.Context, agent, rev, key, ref string, o WriteOptions) (RevertRowPlan, error) {
	p, err := v.revertRowChange(ctx, agent, rev, key, ref)
	if err != nil {
		return RevertRowPlan{}, err
	}
	msg := o.Message
	if msg == "" {
		what := p.Commit.Short()
		if p.Task != "" {
			what = "task:" + p.Task
		}
		msg = fmt.Sprintf("revert %s row %s of %s", what, ref, key)
	}
	meta := maps.Clone(o.Metadata)
	if meta == nil {
		meta = map[string]string{}
	}
	meta["op"], meta["revert"], meta["revertRow"] = "revert", p.Commit.String(), key+":"+ref
	if p.Task != "" {
		meta["revertTask"] = p.Task
	}
	defer v.R.HoldWrites()()
	var judged RevertRowPlan
	id, err := v.R.Edit(ctx, repo.EditRequest{Agent: agent, Message: msg, Metadata: meta,
		Edit: func(ctx context.Context, t *objects.Tree) (bool, error) {
			judged = p
			cur, err := v.judgeRevertRow(ctx, t, &judged)
			if err != nil {
				return false, err
			}
			if judged.Action == "done" {
				return false, nil
			}
			if cur.IsZero() {
				return false, badf("revert %s: row %s: %q is not at HEAD (the change removed the whole value): there is no database to put the row back into; revert the value itself", rev, ref, key)
			}
			db, err := sqlitedb.Open(ctx, v.R.Blocks, cur)
			if err != nil {
				return false, headSQLError(key, err)
			}
			var want *rowdiff.Row
			if judged.Before != nil {
				want = &rowdiff.Row{Columns: judged.Before.Columns, Values: judged.Before.Values}
			}
			stmt, err := rowdiff.RestoreSQL(ctx, db, p.Table, p.PK, want)
			db.Close()
			if errors.Is(err, rowdiff.ErrBadKey) {
				return false, badf("revert %s: row %s of %q: %v", rev, ref, key, err)
			}
			if err != nil {
				return false, headSQLError(key, err)
			}
			data, err := sqlitedb.Apply(ctx, v.R.Blocks, cur, stmt)
			if errors.Is(err, sqlitedb.ErrEdit) {
				return false, badf("revert %s: row %s of %q: %v", rev, ref, key, err)
			}
			if err != nil {
				return false, headSQLError(key, err)
			}
			val, _, err := objects.WriteValue(ctx, v.R.Blocks, bytes.NewReader(data))
			if err != nil {
				return false, err
			}
			return t.Put(ctx, key, val)
		}})
	if err != nil {
		if errors.Is(err, ErrRevertConflict) || errors.Is(err, ErrNoChange) {
			if errors.Is(err, ErrNoChange) {
				err = fmt.Errorf("revert %s: HEAD already holds row %s of %q as it was before: %w", rev, ref, key, ErrNoChange)
			}
			return judged, err
		}
		return judged, classify(err)
	}
	judged.New = id
	if cm, err := v.R.Commit(ctx, id); err == nil && len(cm.Parents) > 0 {
		judged.Head = cm.Parents[0]
	}
	return judged, nil
}

// revertRowChange finds the change rev names to key and the row before
// and after it; a row it did not change is ErrBadRequest.
func (v *View) revertRowChange(ctx context.Context, agent, rev, key, ref string) (RevertRowPlan, error) {
	table, pk, err := ParseRowRef(ref)
	if err != nil {
		return RevertRowPlan{}, err
	}
	kp, err := v.revertChange(ctx, agent, rev, []string{key})
	if err != nil {
		return RevertRowPlan{}, err
	}
	k := kp.Keys[0]
	p := RevertRowPlan{Rev: kp.Rev, Commit: kp.Commit, Base: kp.Base, Task: kp.Task, Key: key, Table: table, Row: ref, PK: pk}
	if p.Before, err = v.rowOf(ctx, k.Before, key, table, pk); err != nil {
		return RevertRowPlan{}, err
	}
	if p.After, err = v.rowOf(ctx, k.After, key, table, pk); err != nil {
		return RevertRowPlan{}, err
	}
	if sameRow(p.Before, p.After) {
		return RevertRowPlan{}, badf("revert %s: it changed %q but not row %s (no such table or row, or the same values before and after)", p.Rev, key, ref)
	}
	return p, nil
}

// rowOf reads one row of the SQLite value val (nil: val is absent, not a
// database, has no such table or no such row).
func (v *View) rowOf(ctx context.Context, val objects.CID, key, table string, pk []SQLCell) (*RowValues, error) {
	if val.IsZero() {
		return nil, nil
	}
	db, err := sqlitedb.Open(ctx, v.R.Blocks, val)
	if errors.Is(err, sqlitedb.ErrNotDatabase) {
		return nil, nil
	}
	if err != nil {
		return nil, headSQLError(key, err)
	}
	defer db.Close()
	r, found, err := rowdiff.Lookup(ctx, db, table, pk)
	if errors.Is(err, rowdiff.ErrBadKey) {
		return nil, badf("%v", err)
	}
	if err != nil {
		return nil, headSQLError(key, err)
	}
	if !found {
		return nil, nil
	}
	return &RowValues{Columns: r.Columns, Values: r.Values}, nil
}

func sameRow(a, b *RowValues) bool {
	if a == nil || b == nil {
		return a == b
	}
	return len(changedColumns(rowdiff.Row{Columns: a.Columns, Values: a.Values}, rowdiff.Row{Columns: b.Columns, Values: b.Values})) == 0
}

// judgeRevertRow reads the row at HEAD (the tree t) and sets the action;
// a conflict is a *RowConflictError. It returns the key's value at HEAD.
func (v *View) judgeRevertRow(ctx context.Context, t *objects.Tree, p *RevertRowPlan) (objects.CID, error) {
	cur, _, err := t.Get(ctx, p.Key)
	if err != nil {
		return cur, classify(err)
	}
	if p.AtHead, err = v.rowOf(ctx, cur, p.Key, p.Table, p.PK); err != nil {
		return cur, err
	}
	switch {
	case sameRow(p.AtHead, p.Before):
		p.Action = "done"
	case !sameRow(p.AtHead, p.After):
		p.Action = "conflict"
		return cur, &RowConflictError{Rev: p.Rev, Key: p.Key, Row: p.Row}
	case p.Before == nil:
		p.Action = "delete"
	case p.After == nil:
		p.Action = "insert"
	default:
		p.Action = "update"
	}
	return cur, nil
}

// headSQLError words a sqlitedb error met reading or writing key's value
// and gives it its kind.
func headSQLError(key string, err error) error {
	switch {
	case errors.Is(err, sqlitedb.ErrNotDatabase), errors.Is(err, sqlitedb.ErrCorrupt), errors.Is(err, sqlitedb.ErrRefused),
		errors.Is(err, sqlitedb.ErrTimeout), errors.Is(err, sqlitedb.ErrQuery), errors.Is(err, sqlitedb.ErrTooLarge),
		errors.Is(err, sqlitedb.ErrEdit):
		return &kindError{ErrBadRequest, fmt.Errorf("%s: %w", key, err)}
	}
	return classify(err)
}
