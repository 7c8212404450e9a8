package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
	"github.com/agentstate/agentstate/internal/mcpserver"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func mustOK(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res, out := call(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s %v: %s", name, args, text(res))
	}
	return out
}

func cutsOf(out map[string]any) [][]any {
	var cuts [][]any
	for _, c := range out["commits"].([]any) {
		cut, _ := c.(map[string]any)["cut"].([]any)
		cuts = append(cuts, cut)
	}
	return cuts
}

// Every tool over a history a forget cut, a fork that still reaches the cut
// commits, a fork made on the cut history, and an agent with no commits:
// answers where the CLI answers, the cut marked where 'agentstate log'
// marks it, clean tool errors where a revision names what is gone.
func TestCutHistory(t *testing.T) {
	c := inspecttest.NewCut(t)
	s := c.Steps
	cs := connect(t, mcpserver.NewServer(inspect.New(c.R), mcpserver.Options{Agent: inspecttest.A}))

	if as := mustOK(t, cs, "list_agents", nil)["agents"].([]any); len(as) != 3 {
		t.Fatalf("agents %v", as)
	}
	out := mustOK(t, cs, "log", nil)
	cuts := cutsOf(out)
	if len(cuts) != 3 || cuts[0] != nil || len(cuts[1]) != 1 || cuts[1][0] != s[3].String() || len(cuts[2]) != 1 || cuts[2][0] != s[0].String() {
		t.Fatalf("log's cut marks %v (log %v)", cuts, out)
	}
	if f, _ := out["forgotten"].(map[string]any); f == nil || f["policy"] != "--keep-last 2" {
		t.Fatalf("log's forgotten %v", out["forgotten"])
	}
	mustOK(t, cs, "log", map[string]any{"path": "memory.md", "limit": 10})
	// A range, as the CLI's: what HEAD reaches and the tag does not.
	if cs := mustOK(t, cs, "log", map[string]any{"rev": "keep-me..HEAD"})["commits"].([]any); len(cs) != 2 || cs[1].(map[string]any)["cid"] != s[4].String() {
		t.Fatalf("log keep-me..HEAD: %v", cs)
	}
	if cuts := cutsOf(mustOK(t, cs, "log", map[string]any{"agent": inspecttest.Fork})); len(cuts) != 3 || cuts[0] != nil || cuts[1] != nil || cuts[2] != nil {
		t.Fatalf("the fork's log marks a cut: %v", cuts)
	}
	if cuts := cutsOf(mustOK(t, cs, "log", map[string]any{"agent": inspecttest.Late})); len(cuts) != 1 || len(cuts[0]) != 1 {
		t.Fatalf("the late fork's log: %v", cuts)
	}
	out = mustOK(t, cs, "show", map[string]any{"rev": "HEAD~1", "lines": true})
	if out["parentGone"] != true || len(out["commit"].(map[string]any)["cut"].([]any)) != 1 {
		t.Fatalf("show HEAD~1: %v", out)
	}
	out = mustOK(t, cs, "show", map[string]any{"rev": "keep-me", "lines": true})
	if ch := out["changes"].([]any); len(ch) != 1 || !strings.Contains(ch[0].(map[string]any)["patch"].(string), "+step 2") {
		t.Fatalf("show keep-me: %v", out)
	}
	mustOK(t, cs, "diff", map[string]any{"from": "keep-me", "lines": true})
	mustOK(t, cs, "get", map[string]any{"key": "memory.md", "rev": "keep-me"})
	mustOK(t, cs, "list", map[string]any{"rev": "HEAD~1"})
	mustOK(t, cs, "read_subtree", map[string]any{"rev": "keep-me"})
	mustOK(t, cs, "oplog", nil)
	if l := mustOK(t, cs, "blame", map[string]any{"key": "memory.md", "rev": "keep-me"})["lines"].([]any)[0].(map[string]any); l["boundary"] != true || l["commit"] != s[1].String() {
		t.Fatalf("blame keep-me: %v", l)
	}
	for _, r := range mustOK(t, cs, "receipts", map[string]any{"verify": true})["receipts"].([]any) {
		if r.(map[string]any)["verified"] != true {
			t.Fatalf("receipt not verified: %v", r)
		}
	}
	mustOK(t, cs, "snapshots", nil)

	// Past the cut, and an agent with no commits: tool errors that say so.
	for name, args := range map[string]map[string]any{
		"show":         {"rev": "HEAD~5"},
		"log":          {"rev": "HEAD~2"},
		"diff":         {"from": "HEAD~3"},
		"get":          {"rev": s[3].String(), "key": "memory.md"},
		"list":         {"rev": "HEAD~2"},
		"read_subtree": {"rev": "HEAD~4"},
		"blame":        {"rev": "HEAD~2", "key": "memory.md"},
	} {
		res, _ := call(t, cs, name, args)
		if !res.IsError || !strings.Contains(text(res), "forget cut") {
			t.Errorf("%s %v past the cut: %v %q", name, args, res.IsError, text(res))
		}
	}
	for name, args := range map[string]map[string]any{
		"log": {}, "show": {}, "diff": {"from": "HEAD"}, "get": {"key": "memory.md"}, "list": {}, "read_subtree": {},
		"blame": {"key": "memory.md"}, "oplog": {}, "receipts": {}, "delete": {"key": "memory.md"}, "undo": {}, "fork": {"to": "x"},
		"task": {}, "task ": {"id": "step-1"},
	} {
		name = strings.TrimSpace(name)
		args["agent"] = inspecttest.Empty
		res, _ := call(t, cs, name, args)
		if !res.IsError || !strings.Contains(text(res), "no such agent") {
			t.Errorf("%s of an agent with no commits: %v %q", name, res.IsError, text(res))
		}
	}
	mustOK(t, cs, "snapshots", map[string]any{"agent": inspecttest.Empty})
	// Tasks on the cut history: those left, and one whose start is gone.
	tl := mustOK(t, cs, "task", nil)["tasks"].([]any)
	if len(tl) != 3 || tl[2].(map[string]any)["id"] != "step-2" {
		t.Errorf("tasks of the cut history: %v", tl)
	}
	if d := mustOK(t, cs, "task", map[string]any{"id": "step-5"}); d["startGone"] != true || len(d["changes"].([]any)) != 0 {
		t.Errorf("task whose start a forget took: %v", d)
	}
	if _, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "agentstate://" + inspecttest.A + "/HEAD%7E3/memory.md"}); err == nil ||
		!strings.Contains(err.Error(), "not found") {
		t.Fatalf("a resource past the cut: %v", err)
	}

	// Writes on the cut history and on the empty agent.
	mustOK(t, cs, "put", map[string]any{"key": "after.md", "value": "after the forget"})
	mustOK(t, cs, "delete", map[string]any{"key": "after.md"})
	mustOK(t, cs, "undo", nil)
	mustOK(t, cs, "fork", map[string]any{"rev": "keep-me", "to": "from-island"})
	mustOK(t, cs, "put", map[string]any{"agent": inspecttest.Empty, "key": "first.md", "value": "first"})
	if n := len(mustOK(t, cs, "log", map[string]any{"agent": inspecttest.Empty})["commits"].([]any)); n != 1 {
		t.Fatalf("the once empty agent's log: %d commits", n)
	}
}
