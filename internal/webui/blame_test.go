package webui_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
)

// The page's blame API is the read model's Blame; what it cannot blame is
// a clear 400 or 404.
func TestBlameAPI(t *testing.T) {
	_, srv := fixture(t)
	resp, body := get(t, srv.URL+"/api/blame?agent=lumen&rev=HEAD&key=notes.md")
	var b inspect.Blame
	if err := json.Unmarshal(body, &b); err != nil || resp.StatusCode != 200 || len(b.Lines) != 3 {
		t.Fatalf("blame: %d %v %s", resp.StatusCode, err, body)
	}
	for i, want := range []struct{ task, text string }{{"base", "one"}, {"fast", "TWO"}, {"base", "three"}} {
		if l := b.Lines[i]; l.Task != want.task || l.Text != want.text || l.Line != i+1 || l.Commit.IsZero() {
			t.Errorf("line %d: %+v, want %+v", i+1, l, want)
		}
	}
	for url, want := range map[string]struct {
		code  int
		words string
	}{
		"/api/blame?agent=lumen&rev=HEAD&key=big.bin": {400, "is not text"},
		"/api/blame?agent=lumen&rev=HEAD&key=nope":    {404, "does not exist"},
		"/api/blame?agent=lumen&rev=HEAD&key=../x":    {400, ""},
		"/api/blame?agent=nobody&rev=HEAD&key=a.md":   {404, ""},
		"/api/blame?agent=lumen&rev=HEAD~99&key=a.md": {404, ""},
	} {
		resp, body := get(t, srv.URL+url)
		if resp.StatusCode != want.code || !strings.Contains(string(body), want.words) {
			t.Errorf("%s: %d %s, want %d saying %q", url, resp.StatusCode, body, want.code, want.words)
		}
	}
}
