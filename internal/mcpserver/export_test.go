package mcpserver

import (
	"github.com/agentstate/agentstate/dag/inspect"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewServerCounting is NewServer with a count of its live subscriptions
// and HEAD watchers.
func NewServerCounting(v *inspect.View, o Options) (*sdk.Server, func() (subscriptions, watchers int)) {
	s, sub := newServer(v, o)
	return s, sub.count
}
