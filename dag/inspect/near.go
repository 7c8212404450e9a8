package inspect

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

// KeyNotFoundError is a key a commit's tree does not hold (ErrNotFound):
// at the commit At, or, when At is zero, at the agent's HEAD.
type KeyNotFoundError struct {
	Key   string
	At    objects.CID
	Agent string
}

func (e *KeyNotFoundError) Error() string {
	if e.At.IsZero() {
		return fmt.Sprintf("key %q does not exist at HEAD", e.Key)
	}
	return fmt.Sprintf("key %q does not exist at %s", e.Key, e.At.Short())
}

func (e *KeyNotFoundError) Is(target error) bool { return target == ErrNotFound }

// maxNearKeys bounds the keys Near compares a missing key with.
const maxNearKeys = 1 << 20

// Near returns up to three names close to the one a not-found error names
// (by edit distance, as dag.NearIDs finds them): the agents for an agent
// with no HEAD, the keys of the commit for a key it does not hold, the
// agent's tags (and HEAD) for a revision that reads as a tag's name and is
// none. Nil for any other error, or when nothing is close.
func (v *View) Near(ctx context.Context, agent string, err error) []string {
	var noAgent *refs.NoAgentError
	var noKey *KeyNotFoundError
	var noTag *repo.NoTagError
	switch {
	case errors.As(err, &noAgent):
		heads, herr := v.R.Refs.Agents(ctx)
		if herr != nil {
			return nil
		}
		names := make([]string, len(heads))
		for i, h := range heads {
			names[i] = h.Agent
		}
		return dag.NearIDs(noAgent.Agent, names)
	case errors.As(err, &noKey):
		at := noKey.At
		if at.IsZero() {
			a := noKey.Agent
			if a == "" {
				a = agent
			}
			h, herr := v.R.Refs.Head(ctx, a)
			if herr != nil {
				return nil
			}
			at = h.Commit
		}
		cm, cerr := v.R.Commit(ctx, at)
		if cerr != nil {
			return nil
		}
		t, terr := objects.LoadTree(ctx, v.R.Blocks, cm.Tree)
		if terr != nil {
			return nil
		}
		var keys []string
		for en, eerr := range t.Entries(ctx, "") {
			if eerr != nil || len(keys) >= maxNearKeys {
				break
			}
			keys = append(keys, en.Key)
		}
		return dag.NearIDs(noKey.Key, keys)
	case errors.As(err, &noTag):
		tags, terr := v.R.Tags(ctx, noTag.Agent)
		if terr != nil {
			return nil
		}
		names := []string{"HEAD"}
		for _, t := range tags[noTag.Agent] {
			names = append(names, t.Name)
		}
		return dag.NearIDs(noTag.Name, names)
	}
	return nil
}
