package inspect

import (
	"context"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/refs/receipt"
)

// MaxCompletions bounds the candidates one completion returns.
const MaxCompletions = 100

// Completion is the candidates for a partly typed name, in the order they
// are offered; More says there were more than MaxCompletions.
type Completion struct {
	Values []string `json:"values"`
	More   bool     `json:"more,omitempty"`
}

func (c *Completion) add(s string) bool {
	if slices.Contains(c.Values, s) {
		return true
	}
	if len(c.Values) == MaxCompletions {
		c.More = true
		return false
	}
	c.Values = append(c.Values, s)
	return true
}

// CompleteAgents returns the agents whose name starts with prefix, by name.
func (v *View) CompleteAgents(ctx context.Context, prefix string) (Completion, error) {
	heads, err := v.R.Refs.Agents(ctx)
	if err != nil {
		return Completion{}, classify(err)
	}
	names := make([]string, 0, len(heads))
	for _, h := range heads {
		if strings.HasPrefix(h.Agent, prefix) {
			names = append(names, h.Agent)
		}
	}
	slices.Sort(names)
	out := Completion{Values: []string{}}
	for _, n := range names {
		if !out.add(n) {
			break
		}
	}
	return out, nil
}

// CompleteRevs returns the revisions of agent that start with prefix:
// HEAD and its first parents HEAD~1..HEAD~3, the agent's tags by name, then
// task:ID for each task its receipts name, newest first. A commit CID is
// not offered (any 10+ of its characters name it).
func (v *View) CompleteRevs(ctx context.Context, agent, prefix string) (Completion, error) {
	if _, err := v.checkAgent(ctx, agent); err != nil {
		return Completion{}, err
	}
	out := Completion{Values: []string{}}
	for _, r := range []string{"HEAD", "HEAD~1", "HEAD~2", "HEAD~3"} {
		if strings.HasPrefix(r, prefix) {
			out.add(r)
		}
	}
	tags, err := v.R.Tags(ctx, agent)
	if err != nil {
		return Completion{}, classify(err)
	}
	for _, t := range tags[agent] {
		if strings.HasPrefix(t.Name, prefix) && !out.add(t.Name) {
			return out, nil
		}
	}
	// task:ID only once the prefix could begin one.
	if !strings.HasPrefix(dag.TaskPrefix, prefix) && !strings.HasPrefix(prefix, dag.TaskPrefix) {
		return out, nil
	}
	var ids []string
	for line, err := range v.R.Tape.Lines(ctx, agent) {
		if err != nil {
			return Completion{}, classify(err)
		}
		if rc, err := receipt.Parse(line); err == nil {
			ids = append(ids, rc.Task)
		}
	}
	for _, id := range slices.Backward(ids) {
		if r := dag.TaskPrefix + id; strings.HasPrefix(r, prefix) && !out.add(r) {
			break
		}
	}
	return out, nil
}

// CompleteKeys returns the keys at agent's rev that start with prefix, in
// key order.
func (v *View) CompleteKeys(ctx context.Context, agent, rev, prefix string) (Completion, error) {
	es, more, err := v.ListWith(ctx, agent, ListOptions{Rev: rev, Prefix: prefix, Limit: MaxCompletions, NoSizes: true})
	if err != nil {
		return Completion{}, err
	}
	out := Completion{Values: make([]string, 0, len(es)), More: more}
	for _, e := range es {
		out.Values = append(out.Values, e.Key)
	}
	return out, nil
}
