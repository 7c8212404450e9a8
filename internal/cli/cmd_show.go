package cli

import (
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
		if err != nil {
			return err
		}
		if c.Bool("json") {
			j, err := e.logJSON(r, le)
			if err != nil {
				return err
			}
			return e.writeJSON(struct {
				logJSON
				Changes []objects.Change `json:"changes"`
			}{j, changes})
		}
		head, _ := r.Refs.Head(e.ctx, e.agent)
		e.printCommit(le, id == head.Commit)
		h, err := r.BundleHash(e.ctx, cm.Tree)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "\nTree:   %s\nBundle: %s\n\n", cm.Tree, h)
		if c.Bool("patch") {
			return e.printPatch(r, changes)
		}
		e.printChanges(changes)
		return nil
	})
}

func (e *env) changesFromParent(r *repo.Repo, cm *objects.Commit) ([]objects.Change, error) {
	from := objects.EmptyTreeCID
	if len(cm.Parents) > 0 {
		pc, err := r.Commit(e.ctx, cm.Parents[0])
		if err != nil {
			return nil, err
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
