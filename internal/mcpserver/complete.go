package mcpserver

import (
	"context"
	"errors"

	"github.com/agentstate/agentstate/dag/inspect"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ValueTemplate is the resource template of a value at a revision.
const ValueTemplate = "agentstate://{agent}/{rev}/{+key}"

// complete answers completion/complete for the value template's
// arguments: agent (the store's agents), rev (HEAD, tags, task:ID of the
// agent in the context, default the server's) and key (the keys at that
// agent's revision, default HEAD). The candidates are the read model's
// (inspect.View.CompleteAgents, CompleteRevs, CompleteKeys), at most
// inspect.MaxCompletions. What has nothing to complete gets no candidates,
// not an error: a context naming an agent or revision that does not exist,
// a prompt (the server has none), another template, an argument the
// template does not have (as the official conformance suite expects of a
// server without the reference server's prompts).
func (h *handlers) complete(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	p := req.Params
	if p.Ref.Type != "ref/resource" || p.Ref.URI != ValueTemplate {
		return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{}}}, nil
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
