package mcpserver

import (
	"context"
	"fmt"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const redactDescription = "Remove a value's content from the store for good (a secret, personal data), keeping every commit id, bundle hash and receipt valid: " +
	"the key's value at rev, every version of the key (all), or one row of a SQLite value (row: TABLE:PK; key default memory.db: a new commit without the row, and the pages that held it redacted in every older version). " +
	"A signed record says what is gone and why (reason, required). Copies made before (clones, exports, histories pushed to Walrus) keep it."

type redactIn struct {
	Agent  string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	Key    string `json:"key,omitempty" jsonschema:"the key (with row: default memory.db)"`
	Rev    string `json:"rev,omitempty" jsonschema:"redact the key's value at this revision"`
	All    bool   `json:"all,omitempty" jsonschema:"redact every version of the key in the agent's history"`
	Row    string `json:"row,omitempty" jsonschema:"erase one row TABLE:PK of a SQLite value from the history"`
	Reason string `json:"reason" jsonschema:"why: kept in the signed record"`
	DryRun bool   `json:"dryRun,omitempty" jsonschema:"say what would be removed; change nothing"`
}

func (h *handlers) redact(ctx context.Context, _ *sdk.CallToolRequest, in redactIn) (*sdk.CallToolResult, any, error) {
	n := 0
	for _, set := range []bool{in.Rev != "", in.All, in.Row != ""} {
		if set {
			n++
		}
	}
	if n != 1 || in.Reason == "" {
		return nil, repo.RedactReport{}, fmt.Errorf("redact takes exactly one of rev, all and row, and a reason")
	}
	agent := h.agent(in.Agent)
	if in.Row != "" {
		key := in.Key
		if key == "" {
			key = "memory.db"
		}
		var out inspect.RedactRowReport
		err := h.with(ctx, true, func(v *inspect.View) (err error) {
			out, err = v.RedactRow(ctx, agent, key, in.Row, in.Reason, h.o.RedactSigner, inspect.WriteOptions{Metadata: map[string]string{"source": Source}}, in.DryRun)
			return err
		})
		return nil, out, err
	}
	var out repo.RedactReport
	err := h.with(ctx, true, func(v *inspect.View) error {
		req := repo.RedactRequest{Agent: agent, Key: in.Key, All: in.All, Reason: in.Reason, DryRun: in.DryRun}
		if in.Rev != "" {
			id, err := v.R.Resolve(ctx, agent, in.Rev)
			if err != nil {
				return err
			}
			req.At = id
		}
		var err error
		out, err = v.R.Redact(ctx, req, h.o.RedactSigner)
		return err
	})
	return nil, out, err
}
