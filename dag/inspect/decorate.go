package inspect

import (
	"context"
	"slices"

	"github.com/agentstate/agentstate/objects"
)

// Decoration is what names a commit in an agent's log, as git's
// decorations do: the agent's HEAD, the agent's tags on it, and the other
// agents whose HEAD it is.
type Decoration struct {
	Head   bool     `json:"head,omitempty"`
	Tags   []string `json:"tags,omitempty"`
	Agents []string `json:"agents,omitempty"`
}

// Decorations returns the decorations of agent's log by commit: its HEAD,
// its tags (by name) and the other agents' HEADs (by name).
func (v *View) Decorations(ctx context.Context, agent string) (map[objects.CID]*Decoration, error) {
	head, err := v.checkAgent(ctx, agent)
	if err != nil {
		return nil, err
	}
	out := map[objects.CID]*Decoration{}
	at := func(c objects.CID) *Decoration {
		d := out[c]
		if d == nil {
			d = &Decoration{}
			out[c] = d
		}
		return d
	}
	at(head.Commit).Head = true
	tags, err := v.R.Tags(ctx, agent)
	if err != nil {
		return nil, classify(err)
	}
	for _, t := range tags[agent] {
		d := at(t.Commit)
		d.Tags = append(d.Tags, t.Name)
	}
	heads, err := v.R.Refs.Agents(ctx)
	if err != nil {
		return nil, classify(err)
	}
	for _, h := range heads {
		if h.Agent != agent {
			d := at(h.Commit)
			d.Agents = append(d.Agents, h.Agent)
		}
	}
	for _, d := range out {
		slices.Sort(d.Tags)
		slices.Sort(d.Agents)
	}
	return out, nil
}
