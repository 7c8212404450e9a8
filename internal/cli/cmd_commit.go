package cli

import (
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export"
	"github.com/urfave/cli/v2"
)

func newCommitCommand(e *env) *cli.Command {
	return &cli.Command{Name: "commit", Usage: "snapshot a brain directory as the agent's next commit", ArgsUsage: "DIR",
		Flags: []cli.Flag{
			messageFlag(),
			&cli.StringSliceFlag{Name: "meta", Usage: "metadata `KEY=VALUE` (repeatable)"},
			&cli.BoolFlag{Name: "allow-empty", Usage: "commit even if nothing changed"},
		}, Action: e.runCommit}
}

func (e *env) runCommit(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	meta, err := parseMeta(c.StringSlice("meta"))
	if err != nil {
		return err
	}
	dir := c.Args().First()
	// Opening the store itself, the command scans the directory beside
	// Badger's open, once it holds the store's lock (so not beside another
	// writer of the store, a checkout into the same directory for one); a
	// served store's command scans in ImportDir, as it always did.
	var ahead *export.ScanAhead
	e.locked = func() {
		if ahead == nil {
			ahead = export.StartScan(e.ctx, e.path(dir))
		}
	}
	defer func() {
		if ahead != nil {
			ahead.Stop()
		}
	}()
	return e.withRepo(func(r *repo.Repo) error {
		res, err := export.ImportDir(e.ctx, r.Blocks, e.path(dir), export.ImportOptions{Cache: r.StatCache(), Ahead: ahead})
		if err != nil {
			return err
		}
		for _, s := range res.Skipped {
			fmt.Fprintf(e.stderr, "agentstate: skipped %s: %s\n", s.Path, s.Reason)
		}
		tree := res.Tree
		return e.finishCommit(r, repo.CommitRequest{Agent: e.agent, Tree: tree, Message: c.String("message"),
			Metadata: meta, AllowEmpty: c.Bool("allow-empty")})
	})
}

// parseMeta parses commit's --meta KEY=VALUE flags (KEY not empty; VALUE may
// be, and may hold '='; a later KEY wins). No flags: nil.
func parseMeta(kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--meta %q: want KEY=VALUE", kv)
		}
		m[k] = v
	}
	return m, nil
}
