package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newHashCommand(e *env) *cli.Command {
	return &cli.Command{Name: "hash", Usage: "print the lineage bundle hash of REV (default HEAD) or of --dir", ArgsUsage: "[REV]",
		Flags: []cli.Flag{&cli.StringFlag{Name: "dir", Usage: "hash the brain directory `DIR` on disk instead"}, jsonFlag()}, Action: e.runHash}
}

func (e *env) runHash(c *cli.Context) error {
	if err := nargs(c, 0, 1); err != nil {
		return err
	}
	if dir := c.String("dir"); dir != "" {
		if c.NArg() > 0 {
			return usagef("hash: give either --dir or a revision, not both")
		}
		h, err := hashDir(e, e.path(dir))
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return e.writeJSON(map[string]string{"bundleHash": h.String(), "dir": dir})
		}
		fmt.Fprintln(e.stdout, h)
		return nil
	}
	rev := revArg(c, 0)
	return e.withRepoRead(func(r *repo.Repo) error {
		id, cm, err := r.ResolveCommit(e.ctx, e.agent, rev)
		if err != nil {
			return err
		}
		h, err := r.BundleHash(e.ctx, cm.Tree)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return e.writeJSON(map[string]string{"bundleHash": h.String(), "commit": id.String(), "tree": cm.Tree.String()})
		}
		fmt.Fprintln(e.stdout, h)
		return nil
	})
}

// hashDir computes the bundle hash of a directory on disk, streaming each file.
func hashDir(e *env, dir string) (objects.BundleHash, error) {
	files, skipped, err := export.Scan(e.ctx, dir)
	if err != nil {
		return objects.BundleHash{}, err
	}
	for _, s := range skipped {
		fmt.Fprintf(e.stderr, "agentstate: skipped %s: %s\n", s.Path, s.Reason)
	}
	h := objects.NewBundleHasher()
	for _, f := range files {
		if objects.ExcludedFromBundle(f.Key) {
			continue
		}
		sum, err := export.FileSHA256(f.Path)
		if err != nil {
			return objects.BundleHash{}, err
		}
		if err := h.Add(f.Key, sum); err != nil {
			return objects.BundleHash{}, err
		}
	}
	return h.Sum()
}
