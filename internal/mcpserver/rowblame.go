package mcpserver

import (
	"context"

	"github.com/agentstate/agentstate/dag/inspect"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type blameIn struct {
	Agent string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	Rev   string `json:"rev,omitempty" jsonschema:"the revision (default HEAD)"`
	Key   string `json:"key" jsonschema:"the key, e.g. skills/search.md"`
	Table string `json:"table,omitempty" jsonschema:"for a SQLite value: the table whose rows to blame"`
}

// blameAny is the read model's Blame of a text value, or with a table its
// BlameRows of a SQLite value's table.
func (h *handlers) blameAny(ctx context.Context, req *sdk.CallToolRequest, in blameIn) (*sdk.CallToolResult, any, error) {
	if in.Table == "" {
		return h.blame(ctx, req, keyIn{Agent: in.Agent, Rev: in.Rev, Key: in.Key})
	}
	var out inspect.RowBlame
	err := h.with(ctx, false, func(v *inspect.View) (err error) {
		out, err = v.BlameRows(ctx, h.agent(in.Agent), in.Rev, in.Key, in.Table)
		return err
	})
	return nil, out, err
}
