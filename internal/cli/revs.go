package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

// revArg returns the i-th argument as a revision, HEAD when it is absent.
func revArg(c *cli.Context, i int) string {
	if rev := c.Args().Get(i); rev != "" {
		return rev
	}
	return "HEAD"
}

func (e *env) valueAt(r *repo.Repo, rev, key string) ([]byte, error) {
	_, data, err := e.lookup(r, rev, key)
	return data, err
}

// lookup returns the value CID and content of key at rev.
func (e *env) lookup(r *repo.Repo, rev, key string) (objects.CID, []byte, error) {
	v, err := e.lookupCID(r, rev, key)
	if err != nil {
		return objects.CID{}, nil, err
	}
	data, err := objects.ReadValue(e.ctx, r.Blocks, v)
	return v, data, err
}

// lookupCID returns the value CID of key at rev.
func (e *env) lookupCID(r *repo.Repo, rev, key string) (objects.CID, error) {
	id, err := r.Resolve(e.ctx, e.agent, rev)
	if err != nil {
		return objects.CID{}, err
	}
	t, err := r.Tree(e.ctx, id)
	if err != nil {
		return objects.CID{}, err
	}
	v, ok, err := t.Get(e.ctx, key)
	if err != nil {
		return objects.CID{}, err
	}
	if !ok {
		return objects.CID{}, fmt.Errorf("key %q does not exist at %s (%s)", key, rev, id.Short())
	}
	return v, nil
}
