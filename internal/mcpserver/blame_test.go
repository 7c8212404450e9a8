package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/internal/mcpserver"
)

// The blame tool answers the read model's Blame: each line with its commit
// and task; a binary value and a missing key are clean tool errors.
func TestBlameTool(t *testing.T) {
	v := store(t)
	h, err := v.Log(context.Background(), "lumen", inspect.LogOptions{Path: "notes.md"})
	if err != nil || len(h.Commits) != 2 {
		t.Fatalf("notes.md's log: %v %v", h.Commits, err)
	}
	cs := connect(t, mcpserver.NewServer(v, mcpserver.Options{Agent: "lumen"}))
	_, out := call(t, cs, "blame", map[string]any{"key": "notes.md"})
	lines, _ := out["lines"].([]any)
	if len(lines) != 2 || out["key"] != "notes.md" {
		t.Fatalf("blame %v", out)
	}
	for i, want := range []struct{ commit, task, text string }{
		{h.Commits[1].CID.String(), "t0", "one"},
		{h.Commits[0].CID.String(), "t2", "TWO"},
	} {
		l := lines[i].(map[string]any)
		if l["commit"] != want.commit || l["task"] != want.task || l["text"] != want.text || l["line"] != float64(i+1) {
			t.Errorf("line %d: %v, want %+v", i+1, l, want)
		}
	}
	_, out = call(t, cs, "blame", map[string]any{"key": "notes.md", "rev": "HEAD~2"})
	if l := out["lines"].([]any)[1].(map[string]any); l["task"] != "t0" || l["text"] != "two" {
		t.Fatalf("blame at HEAD~2: %v", out)
	}
	for _, tc := range []struct {
		key, words string
	}{{"bin", "is not text"}, {"nope", "does not exist"}, {"../x", "key"}} {
		res, _ := call(t, cs, "blame", map[string]any{"key": tc.key})
		if !res.IsError || !strings.Contains(text(res), tc.words) {
			t.Errorf("blame %s: %+v", tc.key, res)
		}
	}
}
