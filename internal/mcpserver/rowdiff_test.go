package mcpserver_test

import (
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
	"github.com/agentstate/agentstate/internal/mcpserver"
)

// The diff tool gives a SQLite value's change by table, as the read model's
// DiffRows computes it: the rows the learn task inserted, updated and
// deleted, the FTS5 table as its own rows.
func TestDiffToolRows(t *testing.T) {
	s := inspecttest.NewSQLite(t)
	cs := connect(t, mcpserver.NewServer(inspect.New(s.R), mcpserver.Options{Agent: inspecttest.A}))
	_, out := call(t, cs, "diff", map[string]any{"from": "task:seed", "to": "task:learn"})
	counts := map[string][3]float64{}
	for _, c := range out["changes"].([]any) {
		ch := c.(map[string]any)
		if ch["path"] != "memory.db" {
			if ch["rows"] != nil {
				t.Fatalf("rows for %v", ch["path"])
			}
			continue
		}
		rows, _ := ch["rows"].(map[string]any)
		if rows == nil {
			t.Fatalf("no rows: %v", ch)
		}
		for _, tb := range rows["tables"].([]any) {
			m := tb.(map[string]any)
			counts[m["name"].(string)] = [3]float64{m["inserted"].(float64), m["updated"].(float64), m["deleted"].(float64)}
		}
	}
	want := map[string][3]float64{"messages": {1, 1, 1}, "facts": {0, 1, 0}, "notes": {1, 0, 0}}
	if len(counts) != len(want) {
		t.Fatalf("tables %v, want %v", counts, want)
	}
	for k, v := range want {
		if counts[k] != v {
			t.Fatalf("tables %v, want %v", counts, want)
		}
	}
}

// The row_history tool answers the read model's RowHistory: row 7 was
// inserted by the seed task and edited by learn.
func TestRowHistoryTool(t *testing.T) {
	s := inspecttest.NewSQLite(t)
	cs := connect(t, mcpserver.NewServer(inspect.New(s.R), mcpserver.Options{Agent: inspecttest.A, ReadOnly: true}))
	_, out := call(t, cs, "row_history", map[string]any{"row": "messages:7"})
	vs, _ := out["versions"].([]any)
	if len(vs) != 2 {
		t.Fatalf("versions: %v", out)
	}
	first, second := vs[0].(map[string]any), vs[1].(map[string]any)
	if first["task"] != "learn" || first["change"] != "update" || second["task"] != "seed" || second["change"] != "insert" {
		t.Fatalf("versions: %v", vs)
	}
}

// The blame tool with a table blames rows: facts' ("lumen", "is") was last
// changed by the learn task.
func TestBlameToolTable(t *testing.T) {
	s := inspecttest.NewSQLite(t)
	cs := connect(t, mcpserver.NewServer(inspect.New(s.R), mcpserver.Options{Agent: inspecttest.A, ReadOnly: true}))
	_, out := call(t, cs, "blame", map[string]any{"key": "memory.db", "table": "facts"})
	rows, _ := out["rows"].([]any)
	tasks := map[string]any{}
	for _, r := range rows {
		m := r.(map[string]any)
		k := m["key"].([]any)
		tasks[k[0].(string)+"/"+k[1].(string)] = m["task"]
	}
	if len(rows) != 3 || tasks["lumen/is"] != "learn" || tasks["lumen/likes"] != "seed" {
		t.Fatalf("rows %v", out)
	}
}
