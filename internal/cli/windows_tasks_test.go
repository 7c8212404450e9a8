package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/mcpserver"
	"github.com/agentstate/agentstate/internal/webui"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The CLI's log --tasks --json and show --json task:ID, MCP's task tool
// and the page's /api/tasks and /api/task render one read model's tasks:
// on a store where a runtime landed tasks (two attempts of one, one as a
// merge) and a fork whose tape has no receipt, they agree task for task and
// field for field.
func TestWindowsAgreeOnTasks(t *testing.T) {
	store := t.TempDir()
	if code := tasksFixture([]string{store, "lumen"}); code != 0 {
		t.Fatalf("agentstate-tasks: exit %d", code)
	}
	r, err := repo.Open(store, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	w := &windows{t: t, r: r, dir: t.TempDir()}
	w.cli("--agent", "lumen", "fork", "copy")
	w.mcp = connectMCP(t, mcpserver.NewServer(inspect.New(r), mcpserver.Options{Agent: "lumen"}))
	srv := httptest.NewServer(webui.Handler(inspect.New(r), webui.Options{Heartbeat: time.Second}))
	t.Cleanup(srv.Close)
	w.page = srv.URL

	for _, agent := range []string{"lumen", "copy"} {
		cliOut := generic(t, w.cli("--agent", agent, "log", "--tasks", "--verify", "--json"))
		mcpOut := w.tool("task", map[string]any{"agent": agent, "limit": 1000})
		pageOut := w.api("/api/tasks", url.Values{"agent": {agent}, "limit": {"1000"}})
		if len(cliOut.([]any)) != 6 {
			t.Fatalf("%s: %d tasks: %v", agent, len(cliOut.([]any)), cliOut)
		}
		if !reflect.DeepEqual(cliOut, mcpOut["tasks"]) {
			t.Errorf("%s: log --tasks --json and MCP's task differ:\nCLI %v\nMCP %v", agent, cliOut, mcpOut["tasks"])
		}
		if !reflect.DeepEqual(cliOut, pageOut["tasks"]) {
			t.Errorf("%s: log --tasks --json and /api/tasks differ:\nCLI  %v\npage %v", agent, cliOut, pageOut["tasks"])
		}
		if mcpOut["head"] != pageOut["head"] || mcpOut["more"] != false || pageOut["more"] != false {
			t.Errorf("%s: head %v / %v, more %v / %v", agent, mcpOut["head"], pageOut["head"], mcpOut["more"], pageOut["more"])
		}
		// A page of two, from the third.
		mp := w.tool("task", map[string]any{"agent": agent, "skip": 2, "limit": 2})
		pp := w.api("/api/tasks", url.Values{"agent": {agent}, "skip": {"2"}, "limit": {"2"}})
		if !reflect.DeepEqual(mp, pp) || !reflect.DeepEqual(mp["tasks"], cliOut.([]any)[2:4]) || mp["more"] != true {
			t.Errorf("%s: pages differ:\nMCP  %v\npage %v", agent, mp, pp)
		}
		for _, id := range []string{"slow", "fix@1", "fix"} {
			cliTask := generic(t, w.cli("--agent", agent, "show", "-p", "--json", "task:"+id))
			mcpTask := w.tool("task", map[string]any{"agent": agent, "id": id, "lines": true})
			pageTask := w.api("/api/task", url.Values{"agent": {agent}, "id": {id}})
			if !reflect.DeepEqual(cliTask, mcpTask) || !reflect.DeepEqual(cliTask, pageTask) {
				t.Errorf("%s task %s: the windows differ:\nCLI  %v\nMCP  %v\npage %v", agent, id, cliTask, mcpTask, pageTask)
			}
		}
	}
	// The same facts: slow landed as a merge, its change is its own.
	d := w.api("/api/task", url.Values{"agent": {"lumen"}, "id": {"slow"}})
	task := d["task"].(map[string]any)
	changes := d["changes"].([]any)
	if task["merge"] != true || task["receipt"] != "verified" || len(changes) != 1 || changes[0].(map[string]any)["path"] != "notes/slow.md" ||
		!strings.Contains(changes[0].(map[string]any)["patch"].(string), "+slow work") {
		t.Errorf("slow: %v", d)
	}
	// An unknown task: not found in every window, with the IDs near it.
	res, err := w.mcp.CallTool(t.Context(), &sdk.CallToolParams{Name: "task", Arguments: map[string]any{"agent": "lumen", "id": "fxi"}})
	if err != nil || !res.IsError || len(res.Content) == 0 || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, `no task "fxi" landed for agent lumen; did you mean "fix"?`) {
		t.Errorf("MCP task fxi: %v %+v", err, res)
	}
	for q, code := range map[string]int{"agent=lumen&id=fxi": 404, "agent=lumen": 400, "agent=nobody&id=fix": 404, "agent=lumen&id=fix@9": 404} {
		hr, err := http.Get(w.page + "/api/task?" + q)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(hr.Body)
		hr.Body.Close()
		if hr.StatusCode != code {
			t.Errorf("/api/task?%s: %d %s, want %d", q, hr.StatusCode, b, code)
		}
	}
	// Task revisions are accepted by the other tools too.
	if got := w.tool("show", map[string]any{"agent": "lumen", "rev": "task:fix@1"})["commit"].(map[string]any)["metadata"].(map[string]any)["attempt"]; got != "1" {
		t.Errorf("MCP show task:fix@1: attempt %v", got)
	}
	if got := w.api("/api/commit", url.Values{"agent": {"lumen"}, "rev": {"task:slow^2"}})["commit"].(map[string]any)["message"]; got != "put notes/slow.md" {
		t.Errorf("page commit task:slow^2: %v", got)
	}
}
