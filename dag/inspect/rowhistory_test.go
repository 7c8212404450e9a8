package inspect_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
)

// The history of one row: the commits (with their tasks) that inserted,
// changed or deleted it, newest first; rows the tasks did not touch have
// one version, and bad references are refused.
func TestRowHistory(t *testing.T) {
	s := inspecttest.NewSQLite(t)
	v := inspect.New(s.R)
	ctx := context.Background()
	h, err := v.RowHistory(ctx, inspecttest.A, "", "memory.db", "messages:7", 0)
	if err != nil {
		t.Fatal(err)
	}
	// Row 7: inserted by seed, edited by learn; reshape did not touch it.
	if len(h.Versions) != 2 || h.Versions[0].Task != "learn" || h.Versions[0].Change != "update" || h.Versions[1].Task != "seed" || h.Versions[1].Change != "insert" {
		t.Fatalf("messages:7: %+v", h.Versions)
	}
	if ch := h.Versions[0].Changed; len(ch) != 1 || ch[0] != "body" || h.Versions[0].Values[2].Text != "edited" {
		t.Fatalf("the edit: %+v", h.Versions[0])
	}
	// Row 8: deleted by learn.
	h, err = v.RowHistory(ctx, inspecttest.A, "", "memory.db", "messages:8", 0)
	if err != nil || len(h.Versions) != 2 || h.Versions[0].Change != "delete" || h.Versions[0].Task != "learn" {
		t.Fatalf("messages:8: %v %+v", err, h.Versions)
	}
	// Row 11995: its task column set by reshape (a column added).
	h, err = v.RowHistory(ctx, inspecttest.A, "", "memory.db", "messages:11995", 0)
	if err != nil || len(h.Versions) != 2 || h.Versions[0].Task != "reshape" || h.Versions[0].Changed[0] != "task" {
		t.Fatalf("messages:11995: %v %+v", err, h.Versions)
	}
	// A composite key of a WITHOUT ROWID table; a text key; an FTS5 row.
	h, err = v.RowHistory(ctx, inspecttest.A, "", "memory.db", `facts:["lumen","is"]`, 0)
	if err != nil || len(h.Versions) != 2 || h.Versions[0].Old[2].Text != "an agent" || h.Versions[0].Values[2].Text != "a careful agent" {
		t.Fatalf("facts: %v %+v", err, h.Versions)
	}
	h, err = v.RowHistory(ctx, inspecttest.A, "", "memory.db", `tasks:reshape`, 0)
	if err != nil || len(h.Versions) != 1 || h.Versions[0].Task != "reshape" {
		t.Fatalf("tasks: %v %+v", err, h.Versions)
	}
	h, err = v.RowHistory(ctx, inspecttest.A, "", "memory.db", `notes:3`, 0)
	if err != nil || len(h.Versions) != 1 || h.Versions[0].Task != "learn" || h.Versions[0].Values[0].Text != "gas" {
		t.Fatalf("notes: %v %+v", err, h.Versions)
	}
	// At an old revision, the later change is not there.
	h, err = v.RowHistory(ctx, inspecttest.A, "task:seed", "memory.db", "messages:7", 0)
	if err != nil || len(h.Versions) != 1 {
		t.Fatalf("at task:seed: %v %+v", err, h.Versions)
	}
	for _, ref := range []string{"messages", "facts:[\"lumen\"]", "facts:[1,", ":7", "messages:[null]"} {
		if _, err := v.RowHistory(ctx, inspecttest.A, "", "memory.db", ref, 0); !errors.Is(err, inspect.ErrBadRequest) {
			t.Errorf("%q: %v, want a bad request", ref, err)
		}
	}
}
