package runtime

import (
	"context"
	"fmt"
	"sync"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

// View is a read-only look at one commit of an agent's brain. It is safe
// for concurrent use and stays valid while the Runtime is open (commits are
// immutable; HEAD moving later does not change a View).
type View struct {
	rt     *Runtime
	commit objects.CID
	c      *objects.Commit // nil for the empty state of an agent with no commits

	mu   sync.Mutex
	tree *objects.Tree
}

// View opens agent's state at rev: "" or "HEAD" for HEAD, or any revision
// the CLI accepts (a CID or an abbreviation of one, HEAD~2, HEAD^2,
// other@HEAD). Viewing HEAD loads the agent like Agent does (cold-starting
// it from its snapshot or seed when the store has no state for it); an
// agent with no state anywhere is the empty brain.
func (rt *Runtime) View(ctx context.Context, agent, rev string) (*View, error) {
	if err := refs.ValidateAgent(agent); err != nil {
		return nil, err
	}
	if err := rt.enter(); err != nil {
		return nil, err
	}
	defer rt.leave()
	if rev == "" || rev == "HEAD" {
		info, err := rt.load(ctx, agent)
		if err != nil {
			return nil, err
		}
		if info.Head.IsZero() {
			return &View{rt: rt}, nil
		}
		return rt.viewCommit(ctx, info.Head)
	}
	c, err := rt.repo.Resolve(ctx, agent, rev)
	if err != nil {
		return nil, err
	}
	return rt.viewCommit(ctx, c)
}

// ViewCommit opens the state at a commit.
func (rt *Runtime) ViewCommit(ctx context.Context, commit objects.CID) (*View, error) {
	if err := rt.enter(); err != nil {
		return nil, err
	}
	defer rt.leave()
	return rt.viewCommit(ctx, commit)
}

func (rt *Runtime) viewCommit(ctx context.Context, commit objects.CID) (*View, error) {
	c, err := rt.repo.Commit(ctx, commit)
	if err != nil {
		return nil, err
	}
	return &View{rt: rt, commit: commit, c: c}, nil
}

// Commit returns the viewed commit (zero for an agent with no state).
func (v *View) Commit() objects.CID { return v.commit }

// Tree returns the viewed tree's root.
func (v *View) Tree() objects.CID {
	if v.c == nil {
		return objects.EmptyTreeCID
	}
	return v.c.Tree
}

// Metadata returns the viewed commit's metadata (task id, attempt, ...).
func (v *View) Metadata() map[string]string {
	if v.c == nil {
		return nil
	}
	out := make(map[string]string, len(v.c.Metadata))
	for k, val := range v.c.Metadata {
		out[k] = val
	}
	return out
}

func (v *View) load(ctx context.Context) (*objects.Tree, error) {
	if v.tree == nil {
		t, err := objects.LoadTree(ctx, v.rt.repo.Blocks, v.Tree())
		if err != nil {
			return nil, fmt.Errorf("runtime: loading tree %s: %w", v.Tree(), err)
		}
		v.tree = t
	}
	return v.tree, nil
}

// Get returns the value of key; a missing key matches ErrKeyNotFound.
func (v *View) Get(ctx context.Context, key string) ([]byte, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, err := v.load(ctx)
	if err != nil {
		return nil, err
	}
	return getValue(ctx, v.rt, t, key)
}

// List returns the keys starting with prefix in bytewise order.
func (v *View) List(ctx context.Context, prefix string) ([]string, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	t, err := v.load(ctx)
	if err != nil {
		return nil, err
	}
	return listKeys(ctx, t, prefix)
}

// BundleHash returns the viewed state's lineage bundle hash.
func (v *View) BundleHash(ctx context.Context) (objects.BundleHash, error) {
	return v.rt.repo.BundleHash(ctx, v.Tree())
}
