package mcpserver

import (
	"context"

	"github.com/agentstate/agentstate/dag/inspect"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// blame is the read model's Blame of a text value.
func (h *handlers) blame(ctx context.Context, _ *sdk.CallToolRequest, in keyIn) (*sdk.CallToolResult, any, error) {
	var out inspect.Blame
	err := h.with(ctx, false, func(v *inspect.View) (err error) {
		out, err = v.Blame(ctx, h.agent(in.Agent), in.Rev, in.Key)
		return err
	})
	return nil, out, err
}
