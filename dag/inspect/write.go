package inspect

import (
	"context"
	"errors"
	"maps"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

// WriteOptions describe the commit an edit makes.
type WriteOptions struct {
	Message  string
	Metadata map[string]string
}

// ErrNoChange: the edit would not change the tree (the value is already
// there, or the key already absent); HEAD stays.
var ErrNoChange = repo.ErrNoChange

// Put sets key to data at agent's HEAD, one commit (creating the agent if
// it has none). It holds the store's write gate, as every served write does.
func (v *View) Put(ctx context.Context, agent, key string, data []byte, o WriteOptions) (objects.CID, error) {
	if err := refs.ValidateAgent(agent); err != nil {
		return objects.CID{}, classify(err)
	}
	if err := objects.ValidateKey(key); err != nil {
		return objects.CID{}, classify(err)
	}
	defer v.R.HoldWrites()()
	val, blocks := objects.NewFileValue(data)
	return v.R.Edit(ctx, repo.EditRequest{Agent: agent, Message: o.Message, Metadata: maps.Clone(o.Metadata), Create: true, Blocks: blocks,
		Edit: func(ctx context.Context, t *objects.Tree) (bool, error) { return t.Put(ctx, key, val) }})
}

// Delete removes key at agent's HEAD, one commit. A key that is not there
// is ErrNotFound.
func (v *View) Delete(ctx context.Context, agent, key string, o WriteOptions) (objects.CID, error) {
	if _, err := v.checkAgent(ctx, agent); err != nil {
		return objects.CID{}, err
	}
	if err := objects.ValidateKey(key); err != nil {
		return objects.CID{}, classify(err)
	}
	defer v.R.HoldWrites()()
	missing := errors.New("no such key")
	id, err := v.R.Edit(ctx, repo.EditRequest{Agent: agent, Message: o.Message, Metadata: maps.Clone(o.Metadata),
		Edit: func(ctx context.Context, t *objects.Tree) (bool, error) {
			ok, err := t.Delete(ctx, key)
			if err == nil && !ok {
				return false, missing
			}
			return ok, err
		}})
	if errors.Is(err, missing) {
		return id, badNotFound(agent, key)
	}
	return id, classify(err)
}

func badNotFound(agent, key string) error {
	return &KeyNotFoundError{Key: key, Agent: agent}
}

// Undo reverts agent's last operation.
func (v *View) Undo(ctx context.Context, agent string) (repo.Undone, error) {
	if _, err := v.checkAgent(ctx, agent); err != nil {
		return repo.Undone{}, err
	}
	defer v.R.HoldWrites()()
	u, err := v.R.Undo(ctx, agent)
	return u, classify(err)
}

// Fork starts agent to at rev of from.
func (v *View) Fork(ctx context.Context, from, rev, to string) (refs.Entry, error) {
	if err := refs.ValidateAgent(to); err != nil {
		return refs.Entry{}, classify(err)
	}
	at, _, err := v.resolve(ctx, from, rev)
	if err != nil {
		return refs.Entry{}, err
	}
	defer v.R.HoldWrites()()
	en, err := v.R.Fork(ctx, from, at, to)
	return en, classify(err)
}
