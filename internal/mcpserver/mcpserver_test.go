package mcpserver_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/mcpserver"
	"github.com/agentstate/agentstate/runtime"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// store lands tasks through a runtime (so receipts exist), one of them
// writing HTML into a value and a message, and returns a view of it.
func store(t *testing.T) *inspect.View {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, kv := range [][2]string{{"notes.md", "one\ntwo\n"}, {"skills/x.md", "<script>alert(1)</script>\n"}, {"notes.md", "one\nTWO\n"}, {"bin", "\x00\x01\x02"}} {
		if _, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: "t" + string(rune('0'+i))}, func(ctx context.Context, tx *runtime.Tx) error {
			return tx.Put(ctx, kv[0], []byte(kv[1]))
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return inspect.New(r)
}

func connect(t *testing.T, s *sdk.Server) *sdk.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := sdk.NewInMemoryTransports()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (*sdk.CallToolResult, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	var out map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &out)
	}
	return res, out
}

func text(res *sdk.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func TestTools(t *testing.T) {
	v := store(t)
	cs := connect(t, mcpserver.NewServer(v, mcpserver.Options{Agent: "lumen"}))
	if got := toolNames(t, cs); !slices.Equal(got, []string{"blame", "delete", "diff", "fork", "get", "list", "list_agents", "log", "oplog", "put", "read_subtree", "receipts", "row_history", "show", "snapshots", "sql", "task", "undo"}) {
		t.Fatalf("tools %v", got)
	}
	_, out := call(t, cs, "list_agents", nil)
	if as := out["agents"].([]any); len(as) != 1 || as[0].(map[string]any)["name"] != "lumen" {
		t.Fatalf("agents %v", out)
	}
	_, out = call(t, cs, "log", map[string]any{"limit": 2})
	if cs := out["commits"].([]any); len(cs) != 2 || cs[0].(map[string]any)["message"] != "put bin" {
		t.Fatalf("log %v", out)
	}
	_, out = call(t, cs, "log", map[string]any{"path": "notes.md"})
	if n := len(out["commits"].([]any)); n != 2 {
		t.Fatalf("log --path notes.md: %d commits", n)
	}
	_, out = call(t, cs, "diff", map[string]any{"from": "HEAD~2", "to": "HEAD~1", "lines": true})
	ch := out["changes"].([]any)[0].(map[string]any)
	if ch["path"] != "notes.md" || !strings.Contains(ch["patch"].(string), "-two\n+TWO\n") {
		t.Fatalf("diff %v", out)
	}
	// Text comes back as text, verbatim (HTML included); bytes as base64.
	_, out = call(t, cs, "get", map[string]any{"key": "skills/x.md"})
	if out["text"] != "<script>alert(1)</script>\n" {
		t.Fatalf("get text: %v", out)
	}
	_, out = call(t, cs, "get", map[string]any{"key": "bin"})
	if out["base64"] != "AAEC" || out["text"] != nil {
		t.Fatalf("get bytes: %v", out)
	}
	_, out = call(t, cs, "read_subtree", map[string]any{"prefix": "skills/"})
	if vs := out["values"].([]any); len(vs) != 1 || vs[0].(map[string]any)["key"] != "skills/x.md" {
		t.Fatalf("read_subtree %v", out)
	}
	_, out = call(t, cs, "receipts", map[string]any{"verify": true})
	for _, r := range out["receipts"].([]any) {
		if r.(map[string]any)["verified"] != true {
			t.Fatalf("receipt not verified: %v", r)
		}
	}
	// Writes: one commit each, from MCP.
	_, out = call(t, cs, "put", map[string]any{"key": "mcp.md", "value": "hello"})
	if out["commit"] == nil {
		t.Fatalf("put %v", out)
	}
	_, out = call(t, cs, "show", nil)
	c := out["commit"].(map[string]any)
	if c["message"] != "mcp: put mcp.md" || c["metadata"].(map[string]any)["source"] != "mcp" {
		t.Fatalf("the put's commit %v", c)
	}
	if _, out = call(t, cs, "undo", nil); out["undid"] == nil {
		t.Fatalf("undo %v", out)
	}
	if res, _ := call(t, cs, "get", map[string]any{"key": "mcp.md"}); !res.IsError {
		t.Fatal("the undone put is still at HEAD")
	}
	if _, out = call(t, cs, "fork", map[string]any{"rev": "HEAD~1", "to": "nova"}); out["agent"] != "nova" {
		t.Fatalf("fork %v", out)
	}
	// Errors are tool results, with clear messages.
	for name, args := range map[string]map[string]any{
		"get":  {"key": "nope"},
		"show": {"rev": "bafyreiaaaaaaaaaaaaaaa"},
		"log":  {"agent": "nobody"},
		"put":  {"key": "../etc/passwd", "value": "x"},
		"diff": {"from": "HEAD~99"},
	} {
		res, _ := call(t, cs, name, args)
		if !res.IsError || text(res) == "" {
			t.Errorf("%s %v: not a clean tool error: %+v", name, args, res)
		}
	}
	// A value as a resource.
	rr, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "agentstate://lumen/HEAD%7E1/skills/x.md"})
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "<script>alert(1)</script>\n" {
		t.Fatalf("resource: %v %+v", err, rr)
	}
	if _, err := cs.ReadResource(context.Background(), &sdk.ReadResourceParams{URI: "agentstate://lumen/HEAD/nope"}); err == nil {
		t.Fatal("a missing key read as a resource")
	}
}

// Over streamable HTTP: a read-only request gets only the reads.
func TestHTTPReadOnly(t *testing.T) {
	v := store(t)
	h := mcpserver.Handler(v, func(r *http.Request) bool { return r.Header.Get("X-Test-Read-Only") == "1" }, mcpserver.Options{Agent: "lumen"})
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, ro := range []bool{false, true} {
		hc := &http.Client{Transport: headerRT{ro}}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(),
			&sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		names := toolNames(t, cs)
		if slices.Contains(names, "put") == ro || !slices.Contains(names, "get") {
			t.Fatalf("read-only %v: tools %v", ro, names)
		}
		if ro {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "put", Arguments: map[string]any{"key": "x", "value": "y"}})
			if err == nil && !res.IsError {
				t.Fatal("a read-only session wrote")
			}
		}
		cs.Close()
	}
}

type headerRT struct{ ro bool }

func (h headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if h.ro {
		r.Header.Set("X-Test-Read-Only", "1")
	}
	return http.DefaultTransport.RoundTrip(r)
}
