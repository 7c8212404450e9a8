package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newShowCommand(e *env) *cli.Command {
	return &cli.Command{Name: "show", Usage: "show a commit and what it changed, or REV:KEY's value", ArgsUsage: "REV[:KEY]",
		Flags: []cli.Flag{patchFlag(), jsonFlag()}, Action: e.runShow}
}

func (e *env) runShow(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	arg := c.Args().First()
	rev, key, hasKey := strings.Cut(arg, ":")
	if hasKey {
		if err := objects.ValidateKey(key); err != nil {
			return err
		}
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		if hasKey {
			data, err := e.valueAt(r, rev, key)
			if err != nil {
				return err
			}
			_, err = e.stdout.Write(data)
			return err
		}
		id, cm, err := r.ResolveCommit(e.ctx, e.agent, rev)
		if err != nil {
			return err
		}
		le := dag.LogEntry{CID: id, Commit: cm}
		changes, err := e.changesFromParent(r, cm)
		// A first parent a forget cut (the oldest commit log lists): what
		// the commit changed is not known, the rest is.
		parentGone := errors.Is(err, dag.ErrUnknown)
		if err != nil && !parentGone {
			return err
		}
		if c.Bool("json") {
			j, err := e.logJSON(r, le)
			if err != nil {
				return err
			}
			return e.writeJSON(struct {
				logJSON
				Changes    []objects.Change `json:"changes"`
				ParentGone bool             `json:"parentGone,omitempty"`
			}{j, changes, parentGone})
		}
		head, _ := r.Refs.Head(e.ctx, e.agent)
		e.printCommit(entryCommit(le), id == head.Commit)
		h, err := r.BundleHash(e.ctx, cm.Tree)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "\nTree:   %s\nBundle: %s\n\n", cm.Tree, h)
		if parentGone {
			fmt.Fprintf(e.stdout, "%s\n", e.paint("2", "~~ the first parent was forgotten (history cut by forget): what this commit changed is not known ~~"))
			return nil
		}
		if c.Bool("patch") {
			return e.printPatch(r, changes)
		}
		e.printChanges(changes)
		return nil
	})
}

// changesFromParent is what cm changed against its first parent; a first
// parent not in the store is an error that wraps dag.ErrUnknown, and the
// changes are then empty.
func (e *env) changesFromParent(r *repo.Repo, cm *objects.Commit) ([]objects.Change, error) {
	from := objects.EmptyTreeCID
	if len(cm.Parents) > 0 {
		pc, err := r.Commit(e.ctx, cm.Parents[0])
		if err != nil {
			return []objects.Change{}, err
		}
		from = pc.Tree
	}
	changes := []objects.Change{}
	for ch, err := range objects.DiffTrees(e.ctx, r.Blocks, from, cm.Tree) {
		if err != nil {
			return nil, err
		}
		changes = append(changes, ch)
	}
	return changes, nil
}
