package mcpserver

import (
	"context"
	"fmt"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Bounds of the sql tool's limits.
const (
	sqlDefaultRows    = 100
	sqlMaxRows        = 1000
	sqlDefaultTimeout = 5 * time.Second
	sqlMaxTimeout     = 30 * time.Second
)

type sqlIn struct {
	Agent     string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	Rev       string `json:"rev,omitempty" jsonschema:"the revision (default HEAD)"`
	Key       string `json:"key" jsonschema:"the key of a SQLite value, e.g. memory.db"`
	Query     string `json:"query,omitempty" jsonschema:"one read-only SQL statement; empty: list the tables"`
	MaxRows   int    `json:"max_rows,omitempty" jsonschema:"rows returned at most (default 100, at most 1000)"`
	TimeoutMS int    `json:"timeout_ms,omitempty" jsonschema:"the query's time limit in milliseconds (default 5000, at most 30000)"`
}

type sqlTablesOut struct {
	Tables []inspect.SQLTable `json:"tables"`
}

// sql is the read model's SQL (or, with no query, SQLTables) of a SQLite value.
func (h *handlers) sql(ctx context.Context, _ *sdk.CallToolRequest, in sqlIn) (*sdk.CallToolResult, any, error) {
	lim := inspect.SQLLimits{MaxRows: in.MaxRows, Timeout: time.Duration(in.TimeoutMS) * time.Millisecond}
	switch {
	case in.MaxRows < 0 || in.MaxRows > sqlMaxRows:
		return nil, nil, fmt.Errorf("max_rows %d is not from 1 to %d", in.MaxRows, sqlMaxRows)
	case in.TimeoutMS < 0 || lim.Timeout > sqlMaxTimeout:
		return nil, nil, fmt.Errorf("timeout_ms %d is not from 1 to %d", in.TimeoutMS, sqlMaxTimeout.Milliseconds())
	}
	if lim.MaxRows == 0 {
		lim.MaxRows = sqlDefaultRows
	}
	if lim.Timeout == 0 {
		lim.Timeout = sqlDefaultTimeout
	}
	var out any
	err := h.with(ctx, false, func(v *inspect.View) error {
		if in.Query == "" {
			t, err := v.SQLTables(ctx, h.agent(in.Agent), in.Rev, in.Key)
			out = sqlTablesOut{t}
			return err
		}
		r, err := v.SQL(ctx, h.agent(in.Agent), in.Rev, in.Key, in.Query, lim)
		out = r
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return nil, out, nil
}
