package mcpserver

import (
	"context"

	"github.com/agentstate/agentstate/dag/inspect"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type rowHistoryIn struct {
	Agent string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	Rev   string `json:"rev,omitempty" jsonschema:"the newest revision to look from (default HEAD)"`
	Key   string `json:"key,omitempty" jsonschema:"the SQLite value's key (default memory.db)"`
	Row   string `json:"row" jsonschema:"TABLE:PK: PK is the primary key's value, a JSON array for a composite key, or the rowid (e.g. messages:42, facts:[\"lumen\",\"is\"])"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many versions (default all)"`
}

// rowHistory is the read model's RowHistory of one row of a SQLite value.
func (h *handlers) rowHistory(ctx context.Context, _ *sdk.CallToolRequest, in rowHistoryIn) (*sdk.CallToolResult, any, error) {
	if in.Key == "" {
		in.Key = "memory.db"
	}
	var out inspect.RowHistory
	err := h.with(ctx, false, func(v *inspect.View) (err error) {
		out, err = v.RowHistory(ctx, h.agent(in.Agent), in.Rev, in.Key, in.Row, in.Limit)
		return err
	})
	return nil, out, err
}
