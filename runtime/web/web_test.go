package web_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"io"
	"net/http"
	"net/http/cookiejar"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/runtime"
	"github.com/agentstate/agentstate/runtime/web"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	rwToken = "rw-token-0123456789abcdef"
	roToken = "ro-token-0123456789abcdef"
)

// bearer adds a token to every request, as an MCP client configured with a
// header does.
type bearer struct{ tok string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.tok)
	return http.DefaultTransport.RoundTrip(r)
}

// A runtime serving MCP on its TCP address, as runtime/web's documentation
// shows: an MCP client with each kind of token, through the server's token
// check.
func TestRuntimeServesMCPAndPage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]),
		Serve: runtime.ServeOptions{Listen: "127.0.0.1:0", Tokens: []string{rwToken}, ReadTokens: []string{roToken},
			HTTP: web.New(web.Options{Agent: "lumen", UI: true})}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: "t1"}, func(ctx context.Context, tx *runtime.Tx) error {
		return tx.Put(ctx, "notes.md", []byte("hello\n"))
	}); err != nil {
		t.Fatal(err)
	}
	c, err := remote.Dial(ctx, remote.SocketPath(dir), remote.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(ctx)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	var addr string
	for _, a := range st.Listen {
		if !strings.Contains(a, "/") {
			addr = a
		}
	}
	if addr == "" {
		t.Fatalf("no TCP address in %v", st.Listen)
	}
	base := "http://" + addr

	connect := func(tok string) *sdk.ClientSession {
		t.Helper()
		cl := sdk.NewClient(&sdk.Implementation{Name: "web-test", Version: "1"}, nil)
		s, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{tok}, Timeout: 30 * time.Second}, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatalf("MCP connect with %s: %v", tok, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	tools := func(s *sdk.ClientSession) []string {
		t.Helper()
		res, err := s.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		return names
	}
	text := func(res *sdk.CallToolResult) string {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String()
	}

	rw := connect(rwToken)
	if names := tools(rw); !slices.Contains(names, "put") || !slices.Contains(names, "log") {
		t.Fatalf("read-write tools %v", names)
	}
	res, err := rw.CallTool(ctx, &sdk.CallToolParams{Name: "put", Arguments: map[string]any{"agent": "lumen", "key": "mcp.txt", "value": "from mcp"}})
	if err != nil || res.IsError {
		t.Fatalf("put through MCP: %v %s", err, text(res))
	}
	v, err := rt.View(ctx, "lumen", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := v.Get(ctx, "mcp.txt"); err != nil || string(got) != "from mcp" {
		t.Fatalf("the runtime sees %q, %v", got, err)
	}

	ro := connect(roToken)
	if names := tools(ro); slices.Contains(names, "put") || slices.Contains(names, "delete") || slices.Contains(names, "undo") ||
		slices.Contains(names, "fork") || !slices.Contains(names, "get") {
		t.Fatalf("read-only tools %v", names)
	}
	res, err = ro.CallTool(ctx, &sdk.CallToolParams{Name: "put", Arguments: map[string]any{"agent": "lumen", "key": "x", "value": "y"}})
	if err == nil && !res.IsError {
		t.Fatal("a read-only token wrote through MCP")
	}
	res, err = ro.CallTool(ctx, &sdk.CallToolParams{Name: "get", Arguments: map[string]any{"agent": "lumen", "key": "mcp.txt"}})
	if err != nil || res.IsError || !strings.Contains(text(res), "from mcp") {
		t.Fatalf("get with the read-only token: %v %s", err, text(res))
	}

	// No token: refused before MCP.
	resp, err := http.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("MCP without a token: %d", resp.StatusCode)
	}

	// The page: ?token= sets the cookie, then the page and its API answer
	// a browser (which sends the cookie on GET).
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	resp, err = hc.Get(base + "/?token=" + roToken)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "/app.js") || resp.Request.URL.RawQuery != "" {
		t.Fatalf("the page: %d at %s: %.200s", resp.StatusCode, resp.Request.URL, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Fatalf("the page's CSP %q", csp)
	}
	resp, err = hc.Get(base + "/api/agents")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"name":"lumen"`) {
		t.Fatalf("the page's API with the cookie: %d %s", resp.StatusCode, body)
	}
	resp, err = http.Get(base + "/api/agents")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the page's API without a token: %d", resp.StatusCode)
	}
}
