package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// mcpcall TOOL JSON-ARGS [MCP-FLAGS...]: start 'agentstate mcp
	// MCP-FLAGS...' as a separate process, connect to it with the
	// SDK's client over stdio, list the tools (their names go to stdout, one
	// line "tools: a b c"), call TOOL with the arguments, and print the
	// result's text (and "error" first when it is a tool error, which fails
	// the command unless negated).
	scriptCmds["mcpcall"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 2 {
			ts.Fatalf("usage: mcpcall TOOL JSON-ARGS [MCP-FLAGS...]")
		}
		var targs map[string]any
		ts.Check(json.Unmarshal([]byte(args[1]), &targs))
		cmd := exec.Command("agentstate", append([]string{"mcp"}, args[2:]...)...)
		cmd.Dir = ts.Getenv("WORK")
		cmd.Env = os.Environ()
		for _, k := range []string{"PATH", "HOME", "SOURCE_DATE_EPOCH", "NO_COLOR", "AGENTSTATE_AGENT", "AGENTSTATE_STORE"} {
			cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "script", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
		ts.Check(err)
		defer cs.Close()
		tools, err := cs.ListTools(ctx, nil)
		ts.Check(err)
		var names []string
		for _, t := range tools.Tools {
			names = append(names, t.Name)
		}
		fmt.Fprintf(ts.Stdout(), "tools: %s\n", strings.Join(names, " "))
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: args[0], Arguments: targs})
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
			ts.Fatalf("mcpcall %s: IsError %v", args[0], res.IsError)
		}
	}
}
