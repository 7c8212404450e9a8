package web_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/runtime"
	"github.com/agentstate/agentstate/runtime/web"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// conformanceScenarios are the official suite's server scenarios that apply
// to agentstate: all but those that call the reference server's own
// fixture tools (tools-call-*, json-schema-2020-12, elicitation-*),
// prompts (prompts-*) and resources (resources-read-*,
// resources-templates-read), which this server does not have.
var conformanceScenarios = []string{
	"server-initialize", "ping", "logging-set-level", "tools-list", "resources-list",
	"completion-complete", "resources-subscribe", "resources-unsubscribe",
	"server-sse-polling", "server-sse-multiple-streams", "dns-rebinding-protection",
}

// The official MCP conformance suite (@modelcontextprotocol/conformance, on
// Node 22, installed by scripts/test-deps.sh) runs its server scenarios
// against the served /mcp of a runtime: through the server's TCP listener
// and token check (a proxy on 127.0.0.1 adds the bearer token the suite
// cannot send, keeping the request's Host). Every check must pass; a
// warning (a SHOULD the suite does not fail) is logged.
func TestConformanceSuite(t *testing.T) {
	node, suite := conformanceSuite(t)
	ctx := context.Background()
	dir := t.TempDir()
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]),
		Serve: runtime.ServeOptions{Listen: "127.0.0.1:0", Tokens: []string{rwToken},
			HTTP: web.New(web.Options{Agent: "lumen"})}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if _, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: "t1"}, func(ctx context.Context, tx *runtime.Tx) error {
		return tx.Put(ctx, "notes.md", []byte("hello\n"))
	}); err != nil {
		t.Fatal(err)
	}
	target := &url.URL{Scheme: "http", Host: tcpAddr(t, dir)}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // the server judges the Host the client sent
			r.Out.Header.Set("Authorization", "Bearer "+rwToken)
		},
		FlushInterval: -1, // event streams go through as they come
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ps := &http.Server{Handler: proxy}
	go ps.Serve(ln)
	defer ps.Close()
	endpoint := "http://" + ln.Addr().String() + "/mcp"

	runScenarios(t, node, suite, endpoint, conformanceScenarios)
}

// The same scenarios against 'agentstate mcp' (stdio) on a free store: the
// suite speaks streamable HTTP only, so the test bridges it, one
// 'agentstate mcp' process per session, with the SDK's own streamable
// server transport relaying each message unchanged (dns-rebinding-protection
// is left out: it judges the bridge's HTTP handling, not the server).
func TestConformanceSuiteStdio(t *testing.T) {
	node, suite := conformanceSuite(t)
	ctx := context.Background()
	bin := t.TempDir()
	if b, err := exec.Command("go", "build", "-o", bin+string(filepath.Separator),
		"github.com/agentstate/agentstate/cmd/agentstate", "github.com/agentstate/agentstate/cmd/agentstate-engine").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	dir := t.TempDir()
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: "t1"}, func(ctx context.Context, tx *runtime.Tx) error {
		return tx.Put(ctx, "notes.md", []byte("hello\n"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	br := &stdioBridge{argv: []string{filepath.Join(bin, "agentstate"), "--store", dir, "--agent", "lumen", "mcp"}, sessions: map[string]*sdk.StreamableServerTransport{}}
	defer br.close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: br}
	go hs.Serve(ln)
	defer hs.Close()
	var scenarios []string
	for _, sc := range conformanceScenarios {
		if sc != "dns-rebinding-protection" {
			scenarios = append(scenarios, sc)
		}
	}
	runScenarios(t, node, suite, "http://"+ln.Addr().String()+"/mcp", scenarios)
}

// stdioBridge serves streamable HTTP, starting one process per session and
// relaying JSON-RPC messages between the session and the process's stdio.
type stdioBridge struct {
	argv []string

	mu       sync.Mutex
	n        int
	sessions map[string]*sdk.StreamableServerTransport
	closers  []func()
}

func (b *stdioBridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	b.mu.Lock()
	st := b.sessions[id]
	if st == nil {
		if id != "" || r.Method != http.MethodPost {
			b.mu.Unlock()
			http.Error(w, "no such session", http.StatusNotFound)
			return
		}
		b.n++
		st = &sdk.StreamableServerTransport{SessionID: fmt.Sprintf("bridge-%d", b.n)}
		ctx, cancel := context.WithCancel(context.Background())
		sconn, err := st.Connect(ctx)
		if err != nil {
			b.mu.Unlock()
			cancel()
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		cmd := exec.Command(b.argv[0], b.argv[1:]...)
		cmd.Stderr = os.Stderr
		pconn, err := (&sdk.CommandTransport{Command: cmd}).Connect(ctx)
		if err != nil {
			b.mu.Unlock()
			cancel()
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		relay := func(from, to sdk.Connection) {
			for {
				m, err := from.Read(ctx)
				if err != nil || to.Write(ctx, m) != nil {
					cancel()
					return
				}
			}
		}
		go relay(sconn, pconn)
		go relay(pconn, sconn)
		b.sessions[st.SessionID] = st
		b.closers = append(b.closers, func() { cancel(); pconn.Close(); sconn.Close() })
	}
	b.mu.Unlock()
	st.ServeHTTP(w, r)
}

func (b *stdioBridge) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.closers {
		c()
	}
}

// runScenarios runs each scenario against endpoint; every check must pass.
func runScenarios(t *testing.T, node, suite, endpoint string, scenarios []string) {
	for _, sc := range scenarios {
		t.Run(sc, func(t *testing.T) {
			out := t.TempDir()
			cmd := exec.Command(node, suite, "server", "--url", endpoint, "--scenario", sc, "-o", out)
			b, err := cmd.CombinedOutput()
			checks := readChecks(t, out)
			if len(checks) == 0 {
				t.Fatalf("no checks (%v):\n%s", err, b)
			}
			for _, c := range checks {
				switch c.Status {
				case "SUCCESS", "INFO":
				case "WARNING": // a SHOULD the suite does not fail
					t.Logf("%s: %s: %s %s", c.ID, c.Status, c.Description, c.ErrorMessage)
				default:
					t.Errorf("%s: %s: %s %s", c.ID, c.Status, c.Description, c.ErrorMessage)
				}
			}
			if err != nil || t.Failed() {
				t.Fatalf("%v\n%s", err, b)
			}
		})
	}
}

type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

// readChecks reads every checks.json the suite wrote under dir.
func readChecks(t *testing.T, dir string) []conformanceCheck {
	t.Helper()
	var all []conformanceCheck
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var cs []conformanceCheck
		if err := json.Unmarshal(b, &cs); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		all = append(all, cs...)
		return nil
	})
	return all
}

// conformanceSuite runs scripts/test-deps.sh for the suite and returns the
// node binary and the suite's entry script it installed.
func conformanceSuite(t *testing.T) (node, suite string) {
	t.Helper()
	cmd := exec.Command(filepath.Join("..", "..", "scripts", "test-deps.sh"), "mcp-conformance")
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/test-deps.sh mcp-conformance: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) < 2 {
		t.Fatalf("scripts/test-deps.sh mcp-conformance printed %q", b)
	}
	return lines[len(lines)-2], lines[len(lines)-1]
}

// tcpAddr is the TCP address the store's server listens on.
func tcpAddr(t *testing.T, dir string) string {
	t.Helper()
	c, err := remote.Dial(context.Background(), remote.SocketPath(dir), remote.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range st.Listen {
		if !strings.Contains(a, "/") {
			return a
		}
	}
	t.Fatalf("no TCP address in %v", st.Listen)
	return ""
}
