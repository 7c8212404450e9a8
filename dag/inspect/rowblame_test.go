package inspect_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
)

// Each row of a table with the task that last inserted or changed it.
func TestBlameRows(t *testing.T) {
	s := inspecttest.NewSQLite(t)
	v := inspect.New(s.R)
	ctx := context.Background()
	b, err := v.BlameRows(ctx, inspecttest.A, "", "memory.db", "messages")
	if err != nil {
		t.Fatal(err)
	}
	task := map[int64]string{}
	for _, r := range b.Rows {
		task[r.Key[0].Int] = r.Task
	}
	if len(b.Rows) != 12000 || b.KeyColumns[0] != "rowid" {
		t.Fatalf("%d rows, key %v", len(b.Rows), b.KeyColumns)
	}
	for id, want := range map[int64]string{1: "seed", 7: "learn", 12001: "reshape", 11995: "reshape", 11990: "seed"} {
		if task[id] != want {
			t.Errorf("row %d: %q, want %q", id, task[id], want)
		}
	}
	if _, ok := task[8]; ok {
		t.Error("row 8, deleted, is blamed")
	}
	b, err = v.BlameRows(ctx, inspecttest.A, "", "memory.db", "facts")
	if err != nil || len(b.Rows) != 3 || len(b.KeyColumns) != 2 {
		t.Fatalf("facts: %v %+v", err, b)
	}
	for _, r := range b.Rows {
		want := "seed"
		if r.Key[0].Text == "lumen" && r.Key[1].Text == "is" {
			want = "learn"
		}
		if r.Task != want {
			t.Errorf("facts %v: %q, want %q", r.Key, r.Task, want)
		}
	}
	b, err = v.BlameRows(ctx, inspecttest.A, "", "memory.db", "tasks")
	if err != nil || len(b.Rows) != 3 || b.Rows[0].Task != "reshape" {
		t.Fatalf("tasks: %v %+v", err, b)
	}
	if _, err := v.BlameRows(ctx, inspecttest.A, "", "memory.db", "nosuch"); !errors.Is(err, inspect.ErrBadRequest) {
		t.Fatalf("no such table: %v", err)
	}
	if _, err := v.BlameRows(ctx, inspecttest.A, "", "notes.md", "messages"); !errors.Is(err, inspect.ErrBadRequest) {
		t.Fatalf("not a database: %v", err)
	}
}
