package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"
)

// mcpSessions are the 'agentstate mcp' processes mcpstart left running, per
// script.
var mcpSessions = struct {
	sync.Mutex
	m map[*testscript.TestScript]map[string]*sdk.ClientSession
}{m: map[*testscript.TestScript]map[string]*sdk.ClientSession{}}

// startMcp starts 'agentstate mcp FLAGS...' as a separate process in the
// script's directory and connects to it with the SDK's client over stdio.
func startMcp(ts *testscript.TestScript, flags []string) *sdk.ClientSession {
	cmd := exec.Command("agentstate", append([]string{"mcp"}, flags...)...)
	cmd.Dir = ts.Getenv("WORK")
	cmd.Env = os.Environ()
	for _, k := range []string{"PATH", "HOME", "SOURCE_DATE_EPOCH", "NO_COLOR", "AGENTSTATE_AGENT", "AGENTSTATE_STORE"} {
		cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience())
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "script", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	ts.Check(err)
	return cs
}

// callMcp calls TOOL with the JSON arguments and prints the result's text
// (and "error" first when it is a tool error, which fails the command
// unless negated).
func callMcp(ts *testscript.TestScript, neg bool, cs *sdk.ClientSession, tool, args string) {
	var targs map[string]any
	ts.Check(json.Unmarshal([]byte(args), &targs))
	ctx, cancel := context.WithTimeout(context.Background(), patience())
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: targs})
	ts.Check(err)
	if res.IsError {
		fmt.Fprint(ts.Stdout(), "error: ")
	}
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			fmt.Fprintln(ts.Stdout(), tc.Text)
		}
	}
	if res.IsError != neg {
		ts.Fatalf("mcp %s: IsError %v", tool, res.IsError)
	}
}

func init() {
	// mcpcall TOOL JSON-ARGS [MCP-FLAGS...]: start 'agentstate mcp
	// MCP-FLAGS...' as a separate process, list the tools (their names go
	// to stdout, one line "tools: a b c"), call TOOL with the arguments as
	// callMcp does, and stop the process.
	scriptCmds["mcpcall"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: mcpcall TOOL JSON-ARGS [MCP-FLAGS...]")
		}
		cs := startMcp(ts, args[2:])
		defer cs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), patience())
		defer cancel()
		tools, err := cs.ListTools(ctx, nil)
		ts.Check(err)
		var names []string
		for _, t := range tools.Tools {
			names = append(names, t.Name)
		}
		fmt.Fprintf(ts.Stdout(), "tools: %s\n", strings.Join(names, " "))
		callMcp(ts, neg, cs, args[0], args[1])
	}
	// mcpstart NAME [MCP-FLAGS...]: start 'agentstate mcp MCP-FLAGS...' as
	// a separate process and keep it running, connected, as session NAME
	// (until mcpstop NAME or the end of the script).
	scriptCmds["mcpstart"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 1 || neg {
			ts.Fatalf("usage: mcpstart NAME [MCP-FLAGS...]")
		}
		cs := startMcp(ts, args[1:])
		mcpSessions.Lock()
		defer mcpSessions.Unlock()
		m := mcpSessions.m[ts]
		if m == nil {
			m = map[string]*sdk.ClientSession{}
			mcpSessions.m[ts] = m
			ts.Defer(func() {
				mcpSessions.Lock()
				defer mcpSessions.Unlock()
				for _, cs := range mcpSessions.m[ts] {
					cs.Close()
				}
				delete(mcpSessions.m, ts)
			})
		}
		if m[args[0]] != nil {
			ts.Fatalf("mcpstart: session %s is running", args[0])
		}
		m[args[0]] = cs
	}
	// mcpsession NAME TOOL JSON-ARGS: call TOOL in the running session NAME,
	// as mcpcall does.
	scriptCmds["mcpsession"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 3 {
			ts.Fatalf("usage: mcpsession NAME TOOL JSON-ARGS")
		}
		callMcp(ts, neg, mcpSession(ts, args[0]), args[1], args[2])
	}
	// mcpstop NAME: end session NAME: its process sees its stdin close and
	// exits.
	scriptCmds["mcpstop"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 1 || neg {
			ts.Fatalf("usage: mcpstop NAME")
		}
		cs := mcpSession(ts, args[0])
		ts.Check(cs.Close())
		mcpSessions.Lock()
		delete(mcpSessions.m[ts], args[0])
		mcpSessions.Unlock()
	}
}

func mcpSession(ts *testscript.TestScript, name string) *sdk.ClientSession {
	mcpSessions.Lock()
	defer mcpSessions.Unlock()
	cs := mcpSessions.m[ts][name]
	if cs == nil {
		ts.Fatalf("no mcp session %s (mcpstart it first)", name)
	}
	return cs
}
