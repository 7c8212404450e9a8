// Package web is what a served store answers over HTTP on its TCP address:
// the MCP endpoint (streamable HTTP) at /mcp. 'agentstate serve --listen'
// serves it; a runtime serves it with
//
//	runtime.Options{Serve: runtime.ServeOptions{
//		Listen: "127.0.0.1:7411", Tokens: tokens,
//		HTTP: web.New(web.Options{Agent: "lumen"}),
//	}}
//
// Tokens are checked before these handlers run (dag/repo/remote): a
// read-only token gets the MCP server without its write tools.
package web

import (
	"net/http"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/internal/inspect"
	"github.com/agentstate/agentstate/internal/mcpserver"
)

// Options choose what is served.
type Options struct {
	// Agent is the MCP tools' agent when a call names none.
	Agent string
}

// New returns a runtime.ServeOptions.HTTP function serving o.
func New(o Options) func(*repo.Repo) http.Handler {
	return func(r *repo.Repo) http.Handler { return Handler(r, o) }
}

// Handler serves r: MCP at /mcp.
func Handler(r *repo.Repo, o Options) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcpserver.Handler(inspect.New(r), remote.ReadOnlyRequest, mcpserver.Options{Agent: o.Agent}))
	return mux
}
