package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/internal/mcpserver"
	"github.com/agentstate/agentstate/internal/webui"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// windows is one store state and its three windows: the command line
// (in-process, over the served repository), an MCP client, and the page's
// API.
type windows struct {
	t    *testing.T
	r    *repo.Repo
	dir  string
	mcp  *sdk.ClientSession
	page string
}

// newWindows builds inspecttest's cut store (a forget cut, a fork that
// reaches the cut commits, a fork made on the cut history, an agent with
// no commits) and adds to its agent A a merge (a line forked at step 6
// landed beside a commit made on HEAD) and an undone operation.
func newWindows(t *testing.T) *windows {
	t.Helper()
	ctx := context.Background()
	c := inspecttest.NewCut(t)
	w := &windows{t: t, r: c.R, dir: t.TempDir()}
	if err := os.WriteFile(filepath.Join(w.dir, "v.txt"), []byte("a value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.R.Fork(ctx, inspecttest.A, c.Steps[5], "side"); err != nil {
		t.Fatal(err)
	}
	w.cli("--agent", "side", "put", "-m", "theirs", "side.md", "v.txt")
	w.cli("--agent", inspecttest.A, "put", "-m", "ours", "ours.md", "v.txt")
	side, sc, err := c.R.HeadCommit(ctx, "side")
	if err != nil {
		t.Fatal(err)
	}
	s6, err := c.R.Commit(ctx, c.Steps[5])
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.R.Land(ctx, repo.LandRequest{Agent: inspecttest.A, Start: c.Steps[5], StartTree: s6.Tree,
		Last: side, LastTree: sc.Tree, LastTime: sc.Time, MergeMessage: "merge side"})
	if err != nil || !l.Merged {
		t.Fatalf("landing the side line: merged %v, %v", l.Merged, err)
	}
	// A big text value (over the read model's patch cap), in two versions.
	for i, name := range []string{"big-1.txt", "big-2.txt"} {
		var big strings.Builder
		for n := 0; big.Len() <= inspect.MaxPatchValue+inspect.MaxPatchValue/2; n++ {
			fmt.Fprintf(&big, "line %d of version %d\n", n, i+1)
		}
		if err := os.WriteFile(filepath.Join(w.dir, name), []byte(big.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		w.cli("--agent", inspecttest.A, "put", "-m", "big "+name, "big.txt", name)
	}
	w.cli("--agent", inspecttest.A, "put", "-m", "to undo", "undone.md", "v.txt")
	w.cli("--agent", inspecttest.A, "undo")
	ops, err := inspect.New(c.R).Oplog(ctx, inspecttest.A, 100)
	if err != nil || !ops[1].Undone {
		t.Fatalf("no undone operation in the fixture: %v %+v", err, ops)
	}

	w.mcp = connectMCP(t, mcpserver.NewServer(inspect.New(c.R), mcpserver.Options{Agent: inspecttest.A}))
	srv := httptest.NewServer(webui.Handler(inspect.New(c.R), webui.Options{Heartbeat: time.Second}))
	t.Cleanup(srv.Close)
	w.page = srv.URL
	return w
}

// cli runs a command line over the served repository and returns its
// stdout; it fails the test on a non-zero exit.
func (w *windows) cli(args ...string) []byte {
	w.t.Helper()
	var out, errb bytes.Buffer
	env := []string{"SOURCE_DATE_EPOCH=" + os.Getenv("SOURCE_DATE_EPOCH"), "NO_COLOR=1"}
	if code := Exec(context.Background(), w.r, remote.ExecRequest{Args: append([]string{"agentstate"}, args...), Dir: w.dir, Env: env},
		strings.NewReader(""), &out, &errb); code != 0 {
		w.t.Fatalf("agentstate %v: exit %d: %s", args, code, errb.String())
	}
	return out.Bytes()
}

func connectMCP(t *testing.T, s *sdk.Server) *sdk.ClientSession {
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

// tool calls an MCP tool and returns its structured result as generic JSON.
func (w *windows) tool(name string, args map[string]any) map[string]any {
	w.t.Helper()
	res, err := w.mcp.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		w.t.Fatalf("MCP %s %v: %v %+v", name, args, err, res)
	}
	var out map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		w.t.Fatal(err)
	}
	return out
}

// api gets a page's API route and returns its JSON object as generic JSON.
func (w *windows) api(route string, q url.Values) map[string]any {
	w.t.Helper()
	out, ok := w.apiAny(route, q).(map[string]any)
	if !ok {
		w.t.Fatalf("GET %s?%s: not an object", route, q.Encode())
	}
	return out
}

// apiAny gets a page's API route and returns its JSON as generic JSON.
func (w *windows) apiAny(route string, q url.Values) any {
	w.t.Helper()
	res, err := http.Get(w.page + route + "?" + q.Encode())
	if err != nil {
		w.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		w.t.Fatalf("GET %s?%s: %s %s", route, q.Encode(), res.Status, b)
	}
	return generic(w.t, b)
}

func generic(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	return v
}

// The CLI's log --json, MCP's log tool and the page's /api/log render one
// read model's log, so on one store state (a merge, forks, a forget cut,
// an undone operation) they agree commit for commit and field for field.
// Deliberate differences: the CLI's --json is the commits alone (its text
// marks HEAD and prints the cut line); MCP and the page add "head" and
// "forgotten" (the page writes "forgotten": null where MCP leaves it out).
func TestWindowsAgreeOnLog(t *testing.T) {
	w := newWindows(t)
	type query struct {
		agent, rev, path string
		limit            int
	}
	sawMerge, sawCut := false, false
	for _, q := range []query{
		{agent: inspecttest.A},
		{agent: inspecttest.A, limit: 3},
		{agent: inspecttest.A, path: "memory.md"},
		{agent: inspecttest.A, rev: "keep-me"},
		{agent: inspecttest.A, rev: "HEAD~1", path: "ours.md"},
		{agent: inspecttest.Fork},
		{agent: inspecttest.Late},
		{agent: "side"},
	} {
		name := fmt.Sprintf("%+v", q)
		args := []string{"--agent", q.agent, "log", "--json"}
		margs := map[string]any{"agent": q.agent, "limit": 1000}
		pq := url.Values{"agent": {q.agent}, "limit": {"1000"}}
		if q.path != "" {
			args = append(args, "--path", q.path)
			margs["path"], pq["path"] = q.path, []string{q.path}
		}
		if q.limit > 0 {
			args = append(args, "-n", fmt.Sprint(q.limit))
			margs["limit"], pq["limit"] = q.limit, []string{fmt.Sprint(q.limit)}
		}
		if q.rev != "" {
			args = append(args, q.rev)
			margs["rev"], pq["rev"] = q.rev, []string{q.rev}
		}
		cliOut := generic(t, w.cli(args...))
		mcpOut := w.tool("log", margs)
		pageOut := w.api("/api/log", pq)

		if !reflect.DeepEqual(cliOut, mcpOut["commits"]) {
			t.Errorf("%s: the CLI's log --json and MCP's log differ:\nCLI %v\nMCP %v", name, cliOut, mcpOut["commits"])
		}
		if !reflect.DeepEqual(cliOut, pageOut["commits"]) {
			t.Errorf("%s: the CLI's log --json and the page's /api/log differ:\nCLI  %v\npage %v", name, cliOut, pageOut["commits"])
		}
		if mcpOut["head"] != pageOut["head"] || mcpOut["head"] == nil {
			t.Errorf("%s: head: MCP %v, page %v", name, mcpOut["head"], pageOut["head"])
		}
		if !reflect.DeepEqual(mcpOut["forgotten"], pageOut["forgotten"]) {
			t.Errorf("%s: forgotten: MCP %v, page %v", name, mcpOut["forgotten"], pageOut["forgotten"])
		}
		for _, c := range cliOut.([]any) {
			c := c.(map[string]any)
			sawMerge = sawMerge || len(c["parents"].([]any)) > 1
			_, cut := c["cut"]
			sawCut = sawCut || cut
		}

		// The text log says what the read model says: HEAD marked on the
		// agent's HEAD, one cut line (the read model's) below each cut
		// commit.
		var h inspect.History
		b, _ := json.Marshal(mcpOut)
		if err := json.Unmarshal(b, &h); err != nil {
			t.Fatal(err)
		}
		targs := append([]string{"--agent", q.agent, "log"}, args[4:]...)
		out := string(w.cli(targs...))
		cuts := 0
		for _, c := range h.Commits {
			if len(c.Cut) > 0 {
				cuts++
			}
		}
		if got := strings.Count(out, "~~ "+h.Forgotten.CutLine()+" ~~"); got != cuts {
			t.Errorf("%s: the text log has %d cut lines %q, want %d:\n%s", name, got, h.Forgotten.CutLine(), cuts, out)
		}
		marked := strings.Contains(out, "commit "+h.Head.String()+" (HEAD -> "+q.agent+")")
		inLog := false
		for _, c := range h.Commits {
			inLog = inLog || c.CID == h.Head
		}
		if marked != inLog {
			t.Errorf("%s: HEAD %s marked %v, in the log %v:\n%s", name, h.Head, marked, inLog, out)
		}
	}
	if !sawMerge || !sawCut {
		t.Fatalf("the fixture's logs show a merge %v, a cut %v", sawMerge, sawCut)
	}
}

// The CLI's oplog --json, MCP's oplog tool and the page's /api/oplog render
// the read model's operation log: on the same store (an undone operation,
// forks, a forget cut) they agree entry for entry and field for field, and
// the CLI's text marks the undone operation.
func TestWindowsAgreeOnOplog(t *testing.T) {
	w := newWindows(t)
	for _, agent := range []string{inspecttest.A, "side"} {
		cliOut := generic(t, w.cli("--agent", agent, "oplog", "--json"))
		mcpOut := w.tool("oplog", map[string]any{"agent": agent, "limit": 1000})["ops"]
		res, err := http.Get(w.page + "/api/oplog?" + url.Values{"agent": {agent}, "limit": {"1000"}}.Encode())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Fatalf("/api/oplog: %s %s", res.Status, b)
		}
		pageOut := generic(t, b)
		if !reflect.DeepEqual(cliOut, mcpOut) {
			t.Errorf("%s: the CLI's oplog --json and MCP's oplog differ:\nCLI %v\nMCP %v", agent, cliOut, mcpOut)
		}
		if !reflect.DeepEqual(cliOut, pageOut) {
			t.Errorf("%s: the CLI's oplog --json and the page's /api/oplog differ:\nCLI  %v\npage %v", agent, cliOut, pageOut)
		}
		ops, _ := cliOut.([]any)
		undone := 0
		for _, op := range ops {
			if m, _ := op.(map[string]any); m["undone"] == true {
				undone++
			}
		}
		text := string(w.cli("--agent", agent, "oplog"))
		if got := strings.Count(text, "(undone)"); got != undone {
			t.Errorf("%s: the text oplog marks %d operations undone, the read model %d:\n%s", agent, got, undone, text)
		}
		if agent == inspecttest.A && undone == 0 {
			t.Errorf("the fixture has no undone operation on %s", agent)
		}
	}
}

// agree fails the test unless the three windows' answers are equal.
func agree(t *testing.T, what string, cliOut, mcpOut, pageOut any) {
	t.Helper()
	if !reflect.DeepEqual(cliOut, mcpOut) {
		t.Errorf("%s: the CLI's --json and MCP differ:\nCLI %v\nMCP %v", what, cliOut, mcpOut)
	}
	if !reflect.DeepEqual(cliOut, pageOut) {
		t.Errorf("%s: the CLI's --json and the page differ:\nCLI  %v\npage %v", what, cliOut, pageOut)
	}
}

// fixtureAgents are the agents of newWindows's store: one with a merge, a
// forget cut, an undone operation, receipts of forgotten commits and a big
// value; a fork that reaches the cut commits; a fork made on the cut
// history; the merged line's agent.
var fixtureAgents = []string{inspecttest.A, inspecttest.Fork, inspecttest.Late, "side"}

// The windows agree on agents, and on every agent's receipts, verified
// (the receipts of the commits a forget cut say so in their note).
func TestWindowsAgreeOnAgentsAndReceipts(t *testing.T) {
	w := newWindows(t)
	agree(t, "agents", generic(t, w.cli("agents", "--json")), w.tool("list_agents", nil)["agents"], w.apiAny("/api/agents", nil))
	forgotten := 0
	for _, agent := range fixtureAgents {
		cliOut := generic(t, w.cli("--agent", agent, "receipts", "--verify", "--json"))
		page := w.api("/api/receipts", url.Values{"agent": {agent}}) // one page holds them all
		if n, _ := page["total"].(float64); int(n) != len(page["receipts"].([]any)) {
			t.Errorf("%s: the page's first page of receipts holds %d of %v", agent, len(page["receipts"].([]any)), page["total"])
		}
		agree(t, agent+" receipts", cliOut, w.tool("receipts", map[string]any{"agent": agent, "verify": true})["receipts"], page["receipts"])
		rs, _ := cliOut.([]any)
		for _, r := range rs {
			r := r.(map[string]any)
			if r["verified"] != true {
				t.Errorf("%s: a receipt does not verify: %v", agent, r)
			}
			if note, _ := r["note"].(string); strings.Contains(note, "forgotten") {
				forgotten++
			}
		}
	}
	if forgotten == 0 {
		t.Fatal("the fixture has no receipt of a forgotten commit")
	}
}

// The windows agree on show for every commit of every agent's log (the
// merge, the commits a forget cut below, the oldest one whose parent is
// gone, the big value's), with line diffs and (CLI and MCP) without.
func TestWindowsAgreeOnShow(t *testing.T) {
	w := newWindows(t)
	sawMerge, sawGone, sawLarge := false, false, false
	for _, agent := range fixtureAgents {
		h, err := inspect.New(w.r).Log(context.Background(), agent, inspect.LogOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range h.Commits {
			rev := c.CID.String()
			name := agent + " show " + c.Message
			cliOut := generic(t, w.cli("--agent", agent, "show", "--json", "-p", rev))
			agree(t, name, cliOut, w.tool("show", map[string]any{"agent": agent, "rev": rev, "lines": true}),
				w.api("/api/commit", url.Values{"agent": {agent}, "rev": {rev}}))
			plain := generic(t, w.cli("--agent", agent, "show", "--json", rev))
			if mcpOut := w.tool("show", map[string]any{"agent": agent, "rev": rev}); !reflect.DeepEqual(plain, mcpOut) {
				t.Errorf("%s without lines: CLI %v\nMCP %v", name, plain, mcpOut)
			}
			s := cliOut.(map[string]any)
			sawMerge = sawMerge || len(c.Parents) > 1
			sawGone = sawGone || s["parentGone"] == true
			for _, ch := range s["changes"].([]any) {
				sawLarge = sawLarge || ch.(map[string]any)["large"] == true
			}
		}
	}
	if !sawMerge || !sawGone || !sawLarge {
		t.Fatalf("the fixture shows a merge %v, a commit whose parent is gone %v, a large value %v", sawMerge, sawGone, sawLarge)
	}
}

// The windows agree on diff between revisions across the merge, the cut
// and the big value's two versions.
func TestWindowsAgreeOnDiff(t *testing.T) {
	w := newWindows(t)
	a := inspecttest.A
	for _, q := range [][2]string{{"HEAD~1", "HEAD"}, {"HEAD~2", "HEAD"}, {"keep-me", "HEAD"}, {"HEAD", "keep-me"}, {"HEAD~3", "HEAD~1"}} {
		name := "diff " + q[0] + " " + q[1]
		cliOut := generic(t, w.cli("--agent", a, "diff", "--json", "-p", q[0], q[1]))
		agree(t, name, cliOut, w.tool("diff", map[string]any{"agent": a, "from": q[0], "to": q[1], "lines": true})["changes"],
			w.apiAny("/api/diff", url.Values{"agent": {a}, "from": {q[0]}, "to": {q[1]}}))
		plain := generic(t, w.cli("--agent", a, "diff", "--json", q[0], q[1]))
		if mcpOut := w.tool("diff", map[string]any{"agent": a, "from": q[0], "to": q[1]})["changes"]; !reflect.DeepEqual(plain, mcpOut) {
			t.Errorf("%s without lines: CLI %v\nMCP %v", name, plain, mcpOut)
		}
	}
	big := generic(t, w.cli("--agent", a, "diff", "--json", "-p", "HEAD~1", "HEAD")).([]any)
	if len(big) != 1 || big[0].(map[string]any)["large"] != true || big[0].(map[string]any)["path"] != "big.txt" {
		t.Fatalf("diff of the big value's versions: %v", big)
	}
}

// The windows agree on listings at several revisions and prefixes, and on
// values: the read model's fields for field, the content as each window
// carries it (the CLI's --json: base64 "content", always; MCP: "text" or
// "base64" up to its inline limit, else "omitted"; the page: "text" up to
// its preview limit, else "omitted").
func TestWindowsAgreeOnLsAndGet(t *testing.T) {
	w := newWindows(t)
	sawBig := false
	for _, agent := range fixtureAgents {
		h, err := inspect.New(w.r).Log(context.Background(), agent, inspect.LogOptions{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range h.Commits {
			rev := c.CID.String()
			for _, prefix := range []string{"", "big", "none/"} {
				name := fmt.Sprintf("%s ls --at %s %q", agent, rev, prefix)
				args := []string{"--agent", agent, "ls", "--json", "--at", rev}
				if prefix != "" {
					args = append(args, prefix)
				}
				cliOut := generic(t, w.cli(args...))
				agree(t, name, cliOut, w.tool("list", map[string]any{"agent": agent, "rev": rev, "prefix": prefix})["entries"],
					w.api("/api/keys", url.Values{"agent": {agent}, "rev": {rev}, "prefix": {prefix}})["entries"])
			}
			es, _ := generic(t, w.cli("--agent", agent, "ls", "--json", "--at", rev)).([]any)
			for _, en := range es {
				key := en.(map[string]any)["key"].(string)
				name := fmt.Sprintf("%s get --at %s %s", agent, rev, key)
				cliOut := generic(t, w.cli("--agent", agent, "get", "--json", "--at", rev, key)).(map[string]any)
				mcpOut := w.tool("get", map[string]any{"agent": agent, "rev": rev, "key": key})
				pageOut := w.api("/api/value", url.Values{"agent": {agent}, "rev": {rev}, "key": {key}})
				for _, f := range []string{"key", "commit", "cid", "size"} {
					if cliOut[f] == nil || !reflect.DeepEqual(cliOut[f], mcpOut[f]) || !reflect.DeepEqual(cliOut[f], pageOut[f]) {
						t.Errorf("%s: %s: CLI %v, MCP %v, page %v", name, f, cliOut[f], mcpOut[f], pageOut[f])
					}
				}
				content, err := base64.StdEncoding.DecodeString(fmt.Sprint(cliOut["content"]))
				if err != nil || float64(len(content)) != cliOut["size"] {
					t.Fatalf("%s: content %d bytes of %v: %v", name, len(content), cliOut["size"], err)
				}
				if text, ok := mcpOut["text"].(string); ok && text != string(content) {
					t.Errorf("%s: MCP's text differs from the CLI's content", name)
				} else if !ok && mcpOut["omitted"] == nil {
					t.Errorf("%s: MCP gives neither text nor omitted: %v", name, mcpOut)
				}
				if text, ok := pageOut["text"].(string); ok && text != string(content) {
					t.Errorf("%s: the page's text differs from the CLI's content", name)
				} else if !ok && pageOut["omitted"] == nil {
					t.Errorf("%s: the page gives neither text nor omitted: %v", name, pageOut)
				}
				if len(content) > inspect.MaxPatchValue {
					sawBig = true
					if mcpOut["omitted"] == nil || pageOut["omitted"] == nil {
						t.Errorf("%s: a big value is inlined: MCP %v, page %v", name, mcpOut["omitted"], pageOut["omitted"])
					}
				}
			}
		}
	}
	if !sawBig {
		t.Fatal("the fixture has no big value")
	}
}
