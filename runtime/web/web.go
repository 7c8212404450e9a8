// Package web is what a served store answers over HTTP on its TCP address:
// the MCP endpoint (streamable HTTP) at /mcp and, when asked for, the
// time-travel page at /. 'agentstate serve --listen' (and --ui) serves it; a
// runtime serves it with
//
//	runtime.Options{Serve: runtime.ServeOptions{
//		Listen: "127.0.0.1:7411", Tokens: tokens,
//		HTTP: web.New(web.Options{Agent: "lumen", UI: true}),
//	}}
//
// Tokens are checked before these handlers run (dag/repo/remote): a
// read-only token gets the MCP server without its write tools; the page
// only reads.
package web

import (
	"net/http"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/internal/mcpserver"
	"github.com/agentstate/agentstate/internal/webui"
)

// Options choose what is served.
type Options struct {
	// Agent is the MCP tools' agent when a call names none.
	Agent string
	// UI serves the time-travel page at / (internal/webui).
	UI bool
}

// New returns a runtime.ServeOptions.HTTP function serving o.
func New(o Options) func(*repo.Repo) http.Handler {
	return func(r *repo.Repo) http.Handler { return Handler(r, o) }
}

// Handler serves r: MCP at /mcp, and the page at / with o.UI.
func Handler(r *repo.Repo, o Options) http.Handler {
	v := inspect.New(r)
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpserver.Handler(v, remote.ReadOnlyRequest, mcpserver.Options{Agent: o.Agent}))
	if o.UI {
		mux.Handle("/", webui.Handler(v, webui.Options{}))
	}
	return mux
}
