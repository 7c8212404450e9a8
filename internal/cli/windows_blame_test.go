package cli

import (
	"bytes"
	"context"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
)

// The CLI's blame --json, MCP's blame tool and the page's /api/blame render
// one read model's blame, so on one store state (a merge, forks, a forget
// cut) they agree line for line; the text marks "^" where the read model
// marks a boundary. (MCP and the page give the whole Blame; the CLI's
// --json is its lines.)
func TestWindowsAgreeOnBlame(t *testing.T) {
	w := newWindows(t)
	for _, c := range []struct{ agent, rev, key string }{
		{inspecttest.A, "HEAD", "memory.md"},
		{inspecttest.A, "HEAD", "side.md"},
		{inspecttest.A, "keep-me", "memory.md"},
		{inspecttest.Fork, "HEAD", "memory.md"},
		{inspecttest.Late, "HEAD", "memory.md"},
	} {
		cliOut := generic(t, w.cli("--agent", c.agent, "blame", "--json", c.rev+":"+c.key))
		mcpOut := w.tool("blame", map[string]any{"agent": c.agent, "rev": c.rev, "key": c.key})["lines"]
		pageOut := w.api("/api/blame", url.Values{"agent": {c.agent}, "rev": {c.rev}, "key": {c.key}})["lines"]
		if !reflect.DeepEqual(cliOut, mcpOut) || !reflect.DeepEqual(cliOut, pageOut) {
			t.Errorf("%+v: the windows differ:\nCLI  %v\nMCP  %v\npage %v", c, cliOut, mcpOut, pageOut)
		}
		lines, _ := cliOut.([]any)
		boundary := 0
		for _, l := range lines {
			if m, _ := l.(map[string]any); m["boundary"] == true {
				boundary++
			}
		}
		text := string(w.cli("--agent", c.agent, "blame", c.rev+":"+c.key))
		marked := 0
		for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
			if strings.HasPrefix(l, "^") {
				marked++
			}
		}
		if len(lines) == 0 || marked != boundary || strings.Count(text, "\n") != len(lines) {
			t.Errorf("%+v: %d lines, %d boundary; the text marks %d:\n%s", c, len(lines), boundary, marked, text)
		}
		if (c.rev == "keep-me" || c.agent == inspecttest.Late) != (boundary > 0) {
			t.Errorf("%+v: %d boundary lines", c, boundary)
		}
	}
}

// runBlame is a function of its options, as the other read commands are:
// called directly, it renders the read model's blame, marks the boundary,
// and refuses what blame cannot read.
func TestRunBlame(t *testing.T) {
	ctx := context.Background()
	c := inspecttest.NewCut(t)
	ro := readOpts{View: inspect.New(c.R), Agent: inspecttest.A}
	var out bytes.Buffer
	if err := runBlame(ctx, blameOptions{readOpts: ro}, []string{"keep-me:memory.md"}, &out); err != nil {
		t.Fatal(err)
	}
	if want := "^" + c.Steps[1].Short() + " (step-2 2023-11-15 00:13:20 +0000 1) step 2\n"; out.String() != want {
		t.Fatalf("blame keep-me:memory.md:\n%q\nwant\n%q", out.String(), want)
	}
	out.Reset()
	if err := runBlame(ctx, blameOptions{readOpts: ro, JSON: true}, []string{"memory.md"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"task": "step-6"`) || !strings.HasPrefix(out.String(), "[") {
		t.Fatalf("blame --json: %s", out.String())
	}
	for _, args := range [][]string{{}, {"a", "b"}, {"HEAD:../x"}, {"task:nope:memory.md"}, {"nope.md"}} {
		out.Reset()
		if err := runBlame(ctx, blameOptions{readOpts: ro}, args, &out); err == nil || out.Len() != 0 {
			t.Errorf("blame %q: %v, wrote %q", args, err, out.String())
		}
	}
}
