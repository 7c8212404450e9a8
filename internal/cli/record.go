package cli

import (
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// finishCommit records a commit and prints its CID, or says nothing changed.
func (e *env) finishCommit(r *repo.Repo, req repo.CommitRequest) error {
	id, _, err := r.CommitTree(e.ctx, req)
	if errors.Is(err, repo.ErrNoChange) {
		fmt.Fprintf(e.stderr, "nothing changed; HEAD of %s stays at %s\n", req.Agent, id.Short())
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, id)
	return nil
}

// reportEdit prints the commit an edit made, or says nothing changed.
func (e *env) reportEdit(id objects.CID, err error) error {
	if errors.Is(err, repo.ErrNoChange) {
		fmt.Fprintf(e.stderr, "nothing changed; HEAD of %s stays at %s\n", e.agent, id.Short())
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, id)
	return nil
}
