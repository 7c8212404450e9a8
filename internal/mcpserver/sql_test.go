package mcpserver_test

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
	"github.com/agentstate/agentstate/internal/mcpserver"
)

// The sql tool answers the read model's SQL: at an old revision, the rows
// sqlite3 reads from that version of the file, typed; without a query, the
// tables; writes and bad limits are clean tool errors.
func TestSQLTool(t *testing.T) {
	s := inspecttest.NewSQLite(t)
	cs := connect(t, mcpserver.NewServer(inspect.New(s.R), mcpserver.Options{Agent: inspecttest.A}))
	q := "SELECT id, body FROM messages WHERE id IN (7, 8) ORDER BY id"
	_, out := call(t, cs, "sql", map[string]any{"key": "memory.db", "rev": "task:seed", "query": q})
	want, err := exec.Command("sqlite3", "-readonly", s.Files[0], q).Output()
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := out["rows"].([]any)
	var got strings.Builder
	for _, r := range rows {
		c := r.([]any)
		got.WriteString(strconv.Itoa(int(c[0].(float64))) + "|" + c[1].(string) + "\n")
	}
	if got.String() != string(want) || out["commit"] != s.Commits[0].String() {
		t.Fatalf("sql at task:seed: %v\ngot  %q\nwant %q", out, got.String(), want)
	}
	_, out = call(t, cs, "sql", map[string]any{"key": "memory.db", "query": "SELECT x'00ff' AS b, NULL AS n, 'hi' AS t"})
	row := out["rows"].([]any)[0].([]any)
	if b, _ := row[0].(map[string]any); b["base64"] != "AP8=" || row[1] != nil || row[2] != "hi" {
		t.Fatalf("typed values %v", row)
	}
	_, out = call(t, cs, "sql", map[string]any{"key": "memory.db", "query": "SELECT id FROM messages", "max_rows": 2})
	if len(out["rows"].([]any)) != 2 || out["truncated"] != true {
		t.Fatalf("max_rows: %v", out)
	}
	_, out = call(t, cs, "sql", map[string]any{"key": "memory.db"})
	var names []string
	for _, tb := range out["tables"].([]any) {
		names = append(names, tb.(map[string]any)["name"].(string))
	}
	if !strings.Contains(strings.Join(names, " "), "facts messages notes") || !strings.Contains(strings.Join(names, " "), "tasks") {
		t.Fatalf("tables %v", names)
	}
	for _, tc := range []struct {
		args  map[string]any
		words string
	}{
		{map[string]any{"key": "memory.db", "query": "DELETE FROM messages"}, "refused"},
		{map[string]any{"key": "notes.md", "query": "SELECT 1"}, "not a SQLite database"},
		{map[string]any{"key": "memory.db", "query": "SELECT 1", "max_rows": 5000}, "max_rows"},
		{map[string]any{"key": "memory.db", "query": "SELECT 1", "timeout_ms": 60000}, "timeout_ms"},
		{map[string]any{"key": "memory.db", "query": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c", "timeout_ms": 100}, "time limit"},
	} {
		res, _ := call(t, cs, "sql", tc.args)
		if !res.IsError || !strings.Contains(text(res), tc.words) {
			t.Errorf("sql %v: %s", tc.args, text(res))
		}
	}
}
