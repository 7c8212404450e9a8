package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ValueTemplate is the resource template of a value at a revision.
const ValueTemplate = "agentstate://{agent}/{rev}/{+key}"

// complete answers completion/complete for the value template's
// arguments: agent (the store's agents), rev (HEAD, tags, task:ID of the
// agent in the context, default the server's) and key (the keys at that
// agent's revision, default HEAD). The candidates are the read model's
// (inspect.View.CompleteAgents, CompleteRevs, CompleteKeys), at most
// inspect.MaxCompletions. A context naming an agent or revision that does
// not exist gives no candidates; a reference to anything but the value
// template, or an argument it does not have, is invalid params (-32602).
func (h *handlers) complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	p := req.Params
	if p.Ref.Type != "ref/resource" || p.Ref.URI != ValueTemplate {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("nothing to complete for %s %q: this server completes the arguments of the resource template %s", p.Ref.Type, p.Ref.Name+p.Ref.URI, ValueTemplate)}
	}
	ctxArg := func(name string) string {
		if p.Context != nil {
			return p.Context.Arguments[name]
		}
		return ""
	}
	agent := h.agent(ctxArg("agent"))
	var c inspect.Completion
	err := h.with(ctx, false, func(v *inspect.View) (err error) {
		switch p.Argument.Name {
		case "agent":
			c, err = v.CompleteAgents(ctx, p.Argument.Value)
		case "rev":
			c, err = v.CompleteRevs(ctx, agent, p.Argument.Value)
		case "key":
			c, err = v.CompleteKeys(ctx, agent, ctxArg("rev"), p.Argument.Value)
		default:
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("%s has no argument %q (agent, rev, key)", ValueTemplate, p.Argument.Name)}
		}
		return err
	})
	if errors.Is(err, inspect.ErrNotFound) || errors.Is(err, inspect.ErrBadRequest) {
		c, err = inspect.Completion{}, nil
	}
	if err != nil {
		return nil, err
	}
	if c.Values == nil {
		c.Values = []string{}
	}
	out := &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: c.Values, HasMore: c.More}}
	if !c.More {
		out.Completion.Total = len(c.Values)
	}
	return out, nil
}
