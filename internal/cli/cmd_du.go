package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/urfave/cli/v2"
)

func newDuCommand(e *env) *cli.Command {
	return &cli.Command{Name: "du", Usage: "what the store's bytes hold: live and reclaimable, per commit (added, shared), per key (growth over history)", ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "n", Value: 10, Usage: "show the newest `N` commits and the N keys that grew most (-1: all)"},
			jsonFlag(), bytesFlag(),
		},
		Action: e.runDu}
}

func (e *env) runDu(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		u, err := r.DiskUsage(e.ctx, e.agent)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return e.writeJSON(u)
		}
		n := c.Int("n")
		limit := func(l int) int {
			if n < 0 || l < n {
				return l
			}
			return n
		}
		s := u.Store
		fmt.Fprintf(e.stdout, "store: %s in %d blocks; live %s (%d blocks); reclaimable by gc %s (%d blocks)\n",
			e.size(s.Bytes), s.Blocks, e.size(s.LiveBytes), s.LiveBlocks, e.size(s.ReclaimableBytes), s.Reclaimable)
		fmt.Fprintf(e.stdout, "\n%s: %d commits in its history; newest first:\n", termsafe.Line(u.Agent), len(u.Commits))
		fmt.Fprintf(e.stdout, "  %-15s %10s %10s %10s  %s\n", "commit", "size", "added", "shared", "message")
		for _, cu := range u.Commits[:limit(len(u.Commits))] {
			fmt.Fprintf(e.stdout, "  %-15s %10s %10s %10s  %s\n", cu.CID.Short(), e.size(cu.Size), e.size(cu.Added), e.size(cu.Shared), termsafe.Line(oneLine(cu.Message)))
		}
		fmt.Fprintf(e.stdout, "\nkeys by growth over that history:\n")
		fmt.Fprintf(e.stdout, "  %10s %8s %10s  %s\n", "versions", "bytes", "at HEAD", "key")
		for _, k := range u.Keys[:limit(len(u.Keys))] {
			fmt.Fprintf(e.stdout, "  %10d %8s %10s  %s\n", k.Versions, e.size(k.Bytes), e.size(k.Current), termsafe.Line(k.Key))
		}
		return nil
	})
}
