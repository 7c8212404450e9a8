package cli

import (
	"net/http/httptest"
	"net/url"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
	"github.com/agentstate/agentstate/internal/mcpserver"
	"github.com/agentstate/agentstate/internal/webui"
)

// The CLI's sql, MCP's sql tool and the page's /api/sql render one read
// model's SQL, so at each commit of a changing memory.db they give the same
// rows, typed alike; the CLI's list mode equals sqlite3's on that version.
func TestWindowsAgreeOnSQL(t *testing.T) {
	s := inspecttest.NewSQLite(t)
	w := &windows{t: t, r: s.R, dir: t.TempDir()}
	w.mcp = connectMCP(t, mcpserver.NewServer(inspect.New(s.R), mcpserver.Options{Agent: inspecttest.A}))
	srv := httptest.NewServer(webui.Handler(inspect.New(s.R), webui.Options{Heartbeat: time.Second}))
	t.Cleanup(srv.Close)
	w.page = srv.URL
	for i, rev := range []string{"task:seed", "task:learn", "HEAD"} {
		for _, q := range []string{
			"SELECT id, role, body, score, raw, at FROM messages WHERE id IN (5, 7, 8, 12001) ORDER BY id",
			"SELECT * FROM facts",
			"SELECT title, body FROM notes WHERE notes MATCH 'checks OR storage' ORDER BY rowid",
		} {
			mcpOut := w.tool("sql", map[string]any{"rev": rev, "key": "memory.db", "query": q})
			pageOut := w.api("/api/sql", url.Values{"agent": {inspecttest.A}, "rev": {rev}, "key": {"memory.db"}, "query": {q}})
			if !reflect.DeepEqual(mcpOut, pageOut) {
				t.Errorf("%s %s: MCP and the page differ:\nMCP  %v\npage %v", rev, q, mcpOut, pageOut)
			}
			// The CLI's --json objects, in the read model's column order.
			cols, _ := mcpOut["columns"].([]any)
			var cliRows []any
			for _, o := range generic(t, w.cli("--agent", inspecttest.A, "sql", "--json", rev+":memory.db", q)).([]any) {
				row := []any{}
				for _, c := range cols {
					row = append(row, o.(map[string]any)[c.(string)])
				}
				cliRows = append(cliRows, row)
			}
			if rows, _ := mcpOut["rows"].([]any); !reflect.DeepEqual(cliRows, rows) && (len(rows) > 0 || len(cliRows) > 0) {
				t.Errorf("%s %s: the CLI's rows differ:\nCLI %v\nMCP %v", rev, q, cliRows, rows)
			}
			want, err := exec.Command("sqlite3", "-readonly", s.Files[i], q).Output()
			if err != nil {
				t.Fatal(err)
			}
			if got := w.cli("--agent", inspecttest.A, "sql", rev+":memory.db", q); string(got) != string(want) {
				t.Errorf("%s %s: CLI %q, sqlite3 %q", rev, q, got, want)
			}
		}
	}
}
