package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// pages calls tool with args, then again with each nextCursor it gives,
// and returns every page's items (the member named items) and how many
// pages there were; between the first and second page it runs between.
func pages(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any, items string, between func()) (all []any, n int) {
	t.Helper()
	cursor := ""
	for {
		a := map[string]any{}
		for k, v := range args {
			a[k] = v
		}
		if cursor != "" {
			a["cursor"] = cursor
		}
		res, out := call(t, cs, tool, a)
		if res.IsError {
			t.Fatalf("%s page %d: %s", tool, n+1, text(res))
		}
		n++
		all = append(all, out[items].([]any)...)
		if n > 200 {
			t.Fatalf("%s: more than 200 pages", tool)
		}
		if n == 1 && between != nil {
			between()
		}
		c, _ := out["nextCursor"].(string)
		if c == "" {
			return all, n
		}
		cursor = c
	}
}

func field(xs []any, name string) []string {
	var out []string
	for _, x := range xs {
		out = append(out, fmt.Sprint(x.(map[string]any)[name]))
	}
	return out
}

// log, list, oplog and receipts answer in bounded pages with a
// nextCursor, as the specification pages its lists: the pages together
// are the whole answer, a write between pages does not move them, and a
// forged cursor, another agent's, another tool's or another store's is a
// clean error.
func TestToolCursors(t *testing.T) {
	v := store(t)
	cs := connect(t, mcpserver.NewServer(v, mcpserver.Options{Agent: "lumen"}))
	for i := range 30 {
		if res, _ := call(t, cs, "put", map[string]any{"key": fmt.Sprintf("k/%02d", i), "value": fmt.Sprint(i)}); res.IsError {
			t.Fatal(text(res))
		}
	}
	_, whole := call(t, cs, "log", map[string]any{"limit": 1000})
	wantLog := field(whole["commits"].([]any), "cid")
	if len(wantLog) != 34 {
		t.Fatalf("log has %d commits", len(wantLog))
	}
	write := func() { call(t, cs, "put", map[string]any{"key": "k/zz", "value": "later"}) }

	got, n := pages(t, cs, "log", map[string]any{"limit": 7}, "commits", write)
	if !slices.Equal(field(got, "cid"), wantLog) || n != 5 {
		t.Fatalf("log in %d pages: %v, want %v", n, field(got, "cid"), wantLog)
	}
	// A range pages too: HEAD~30..HEAD~5 is 25 commits.
	got, n = pages(t, cs, "log", map[string]any{"limit": 10, "rev": wantLog[5] + ".." + wantLog[0]}, "commits", nil)
	if !slices.Equal(field(got, "cid"), wantLog[:5]) || n != 1 {
		t.Fatalf("range: %v in %d pages", field(got, "cid"), n)
	}
	got, n = pages(t, cs, "log", map[string]any{"limit": 10, "rev": wantLog[30] + ".." + wantLog[5]}, "commits", nil)
	if !slices.Equal(field(got, "cid"), wantLog[5:30]) || n != 3 {
		t.Fatalf("range: %v in %d pages, want %v", field(got, "cid"), n, wantLog[5:30])
	}

	_, wholeList := call(t, cs, "list", map[string]any{"prefix": "k/"})
	got, n = pages(t, cs, "list", map[string]any{"prefix": "k/", "limit": 8}, "entries", write)
	if !slices.Equal(field(got, "key"), field(wholeList["entries"].([]any), "key")) || len(got) != 31 || n != 4 {
		t.Fatalf("list in %d pages: %v", n, field(got, "key"))
	}

	_, wholeOps := call(t, cs, "oplog", map[string]any{"limit": 1000})
	got, n = pages(t, cs, "oplog", map[string]any{"limit": 9}, "ops", nil)
	if !slices.Equal(field(got, "seq"), field(wholeOps["ops"].([]any), "seq")) || n != 4 {
		t.Fatalf("oplog in %d pages: %v", n, field(got, "seq"))
	}

	_, wholeRcpt := call(t, cs, "receipts", map[string]any{"verify": true})
	got, n = pages(t, cs, "receipts", map[string]any{"limit": 1, "verify": true}, "receipts", nil)
	if len(got) != 4 || n != 4 || !reflect.DeepEqual(got, wholeRcpt["receipts"]) {
		t.Fatalf("receipts in %d pages: %v, whole %v", n, got, wholeRcpt["receipts"])
	}

	cursorOf := func(cs *sdk.ClientSession, tool string, args map[string]any) string {
		_, out := call(t, cs, tool, args)
		c, _ := out["nextCursor"].(string)
		if c == "" {
			t.Fatalf("%s %v gave no cursor: %v", tool, args, out)
		}
		return c
	}
	call(t, cs, "fork", map[string]any{"to": "nova"})
	other := connect(t, mcpserver.NewServer(store(t), mcpserver.Options{Agent: "lumen"}))
	for i := range 3 {
		call(t, other, "put", map[string]any{"key": fmt.Sprintf("o/%d", i), "value": "other store"})
	}
	for _, c := range []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"forged", "log", map[string]any{"cursor": "bm90IGEgY3Vyc29y"}, "not one a log gave"},
		{"another store's", "log", map[string]any{"cursor": cursorOf(other, "log", map[string]any{"limit": 2})}, "does not hold"},
		{"another agent's", "log", map[string]any{"agent": "nova", "cursor": cursorOf(cs, "log", map[string]any{"limit": 2})}, "for agent"},
		{"a megabyte", "log", map[string]any{"cursor": strings.Repeat("A", 1<<20)}, "cursor over"},
		{"forged", "list", map[string]any{"cursor": "%%%"}, "invalid cursor"},
		{"another prefix", "list", map[string]any{"prefix": "x/", "cursor": cursorOf(cs, "list", map[string]any{"prefix": "k/", "limit": 2})}, "continues prefix"},
		{"another tool's", "list", map[string]any{"cursor": cursorOf(cs, "oplog", map[string]any{"limit": 2})}, "continues a oplog"},
		{"another store's", "list", map[string]any{"cursor": cursorOf(other, "list", map[string]any{"limit": 2})}, "not in this store"},
		{"another store's", "oplog", map[string]any{"cursor": cursorOf(other, "oplog", map[string]any{"limit": 2})}, "does not hold"},
		{"another agent's", "oplog", map[string]any{"agent": "nova", "cursor": cursorOf(cs, "oplog", map[string]any{"limit": 2})}, "for agent"},
		{"forged", "receipts", map[string]any{"cursor": "eyJrIjoicmVjZWlwdHMiLCJhIjoibHVtZW4iLCJuIjo5OX0"}, "does not hold"},
		{"another tool's", "receipts", map[string]any{"cursor": cursorOf(cs, "log", map[string]any{"limit": 2})}, "invalid cursor"},
	} {
		res, _ := call(t, cs, c.tool, c.args)
		if !res.IsError || !strings.Contains(text(res), c.want) {
			t.Errorf("%s %s cursor: %v %.200q, want an error saying %q", c.tool, c.name, res.IsError, text(res), c.want)
		}
	}
}

// A tool's text content is its structured content serialized, as the
// specification asks for compatibility, never a second, different copy
// (get of a text value once sent the text twice: raw and in the JSON).
func TestTextIsTheStructuredContent(t *testing.T) {
	v := store(t)
	cs := connect(t, mcpserver.NewServer(v, mcpserver.Options{Agent: "lumen"}))
	big := strings.Repeat("a line of text\n", 10000)
	call(t, cs, "put", map[string]any{"key": "big.md", "value": big})
	for tool, args := range map[string]map[string]any{
		"get": {"key": "big.md"}, "log": {}, "list": {}, "read_subtree": {}, "show": {}, "oplog": {},
	} {
		res, _ := call(t, cs, tool, args)
		if res.IsError || len(res.Content) != 1 {
			t.Fatalf("%s: %v %d contents", tool, res.IsError, len(res.Content))
		}
		var fromText, structured any
		if err := json.Unmarshal([]byte(text(res)), &fromText); err != nil {
			t.Fatalf("%s: the text is not the JSON: %.100q", tool, text(res))
		}
		b, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(b, &structured)
		if !reflect.DeepEqual(fromText, structured) {
			t.Fatalf("%s: the text and the structured content differ", tool)
		}
		if tool == "get" && (len(text(res)) > len(big)*6/5 || fromText.(map[string]any)["text"] != big) {
			t.Fatalf("get: %d bytes of text for a %d-byte value", len(text(res)), len(big))
		}
	}
}

// logging/setLevel is honoured (protocol 2025-11-25 and before): nothing
// is logged before a level is set; then the writes (notice) and failed
// calls (warning) at or above it, and every call by name at debug. A level
// the specification does not have is -32602. On the newest protocol a
// call's own _meta level is honoured the same way.
func TestLogging(t *testing.T) {
	v := store(t)
	ctx := context.Background()
	var mu sync.Mutex
	var got []*sdk.LoggingMessageParams
	ct, st := sdk.NewInMemoryTransports()
	if _, err := mcpserver.NewServer(v, mcpserver.Options{Agent: "lumen"}).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
			mu.Lock()
			got = append(got, r.Params)
			mu.Unlock()
		},
	}).Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if cs.InitializeResult().Capabilities.Logging == nil {
		t.Fatal("no logging capability")
	}
	// take waits (a bounded while) until n messages came, then returns them.
	take := func(n int) []*sdk.LoggingMessageParams {
		for range 500 {
			mu.Lock()
			k := len(got)
			mu.Unlock()
			if k >= n {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		// A ping after the calls: any message sent before its answer has come.
		cs.Ping(ctx, nil)
		mu.Lock()
		defer mu.Unlock()
		out := got
		got = nil
		return out
	}
	call(t, cs, "put", map[string]any{"key": "a", "value": "1"})
	call(t, cs, "get", map[string]any{"key": "nope"})
	if m := take(0); len(m) != 0 {
		t.Fatalf("logged before a level was set: %v", m)
	}

	if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "notice"}); err != nil {
		t.Fatal(err)
	}
	_, out := call(t, cs, "put", map[string]any{"key": "a", "value": "2"})
	call(t, cs, "log", nil)
	call(t, cs, "get", map[string]any{"key": "nope"})
	m := take(2)
	if len(m) != 2 || m[0].Level != "notice" || m[1].Level != "warning" || m[0].Logger != "agentstate" {
		t.Fatalf("at notice: %v", m)
	}
	if d := m[0].Data.(map[string]any); d["tool"] != "put" || d["commit"] != out["commit"] {
		t.Fatalf("the put's message: %v, its commit %v", d, out["commit"])
	}
	if d := m[1].Data.(map[string]any); d["tool"] != "get" || !strings.Contains(d["error"].(string), "nope") {
		t.Fatalf("the failed get's message: %v", d)
	}

	if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	call(t, cs, "put", map[string]any{"key": "a", "value": "3"})
	call(t, cs, "get", map[string]any{"key": "nope"})
	if m := take(0); len(m) != 0 {
		t.Fatalf("at error: %v", m)
	}

	if err := cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	call(t, cs, "list_agents", nil)
	if m := take(1); len(m) != 1 || m[0].Level != "debug" || m[0].Data.(map[string]any)["tool"] != "list_agents" {
		t.Fatalf("at debug: %v", m)
	}

	err = cs.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: "loud"})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("level loud: %v", err)
	}

	// The newest protocol: the level rides on each call.
	ct2, st2 := sdk.NewInMemoryTransports()
	if _, err := mcpserver.NewServer(v, mcpserver.Options{Agent: "lumen"}).Connect(ctx, st2, nil); err != nil {
		t.Fatal(err)
	}
	cs2, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, &sdk.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
			mu.Lock()
			got = append(got, r.Params)
			mu.Unlock()
		},
	}).Connect(ctx, ct2, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	for _, level := range []string{"", "notice"} {
		p := &sdk.CallToolParams{Name: "put", Arguments: map[string]any{"key": "b", "value": "x" + level}}
		if level != "" {
			p.Meta = sdk.Meta{sdk.MetaKeyLogLevel: level}
		}
		if _, err := cs2.CallTool(ctx, p); err != nil {
			t.Fatal(err)
		}
		want := map[string]int{"": 0, "notice": 1}[level]
		if m := take(want); len(m) != want || (want == 1 && m[0].Level != "notice") {
			t.Fatalf("newest protocol, level %q: %v", level, m)
		}
	}
}
