package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The server's log (capability "logging"): a client that sets a level
// with logging/setLevel gets notifications/message at that level and
// above; one that sets none gets none. What is logged:
//
//   - notice: each write a tool made (put, delete, undo, fork) and what it
//     moved HEAD to;
//   - warning: a tool call that failed, with its message;
//   - debug: every tool call, by name.
//
// The SDK keeps the session's level and drops what is below it.

// loggerName is the "logger" of every message.
const loggerName = "agentstate"

// levels are the specification's, least severe first.
var levels = []sdk.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

var writeTools = map[string]bool{"put": true, "delete": true, "undo": true, "fork": true}

// logCalls is the receiving middleware that checks logging/setLevel's
// level and logs tool calls.
func logCalls(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		switch method {
		case "logging/setLevel":
			if p, ok := req.GetParams().(*sdk.SetLoggingLevelParams); ok && !slices.Contains(levels, p.Level) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: fmt.Sprintf("logging level %.40q: one of debug, info, notice, warning, error, critical, alert, emergency", p.Level)}
			}
		case "tools/call":
			res, err := next(ctx, method, req)
			logCall(ctx, req, res)
			return res, err
		}
		return next(ctx, method, req)
	}
}

func logCall(ctx context.Context, req sdk.Request, res sdk.Result) {
	ss, ok := req.GetSession().(*sdk.ServerSession)
	p, pok := req.GetParams().(*sdk.CallToolParamsRaw)
	r, rok := res.(*sdk.CallToolResult)
	if !ok || !pok || !rok || r == nil {
		return
	}
	logf := func(level sdk.LoggingLevel, data any) {
		// A client gone, or one that cannot take the message, loses it;
		// the call's answer is what matters.
		_ = ss.Log(ctx, &sdk.LoggingMessageParams{Level: level, Logger: loggerName, Data: data})
	}
	logf("debug", map[string]any{"tool": p.Name})
	switch {
	case r.IsError:
		msg := ""
		for _, c := range r.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				msg += tc.Text
			}
		}
		logf("warning", map[string]any{"tool": p.Name, "error": msg})
	case writeTools[p.Name]:
		var out map[string]any
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			_ = json.Unmarshal(b, &out)
		}
		data := map[string]any{"tool": p.Name}
		for k, v := range out {
			data[k] = v
		}
		logf("notice", data)
	}
}
