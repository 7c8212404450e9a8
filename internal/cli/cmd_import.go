package cli

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/refs"
	"github.com/urfave/cli/v2"
)

func newImportCommand(e *env) *cli.Command {
	return &cli.Command{Name: "import", Usage: "commit a tar as the agent's next state", ArgsUsage: "FILE.tar",
		Flags: []cli.Flag{
			messageFlag(),
			&cli.BoolFlag{Name: "skip-unsupported", Usage: "skip (and report) links and devices instead of refusing the tar"},
		}, Action: e.runImport}
}

func (e *env) runImport(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	f, err := os.Open(e.path(c.Args().First()))
	if err != nil {
		return err
	}
	defer f.Close()
	return e.withRepo(func(r *repo.Repo) error {
		imp, err := snapshot.ReadTar(e.ctx, bufio.NewReaderSize(f, 1<<20), r.Blocks, c.Bool("skip-unsupported"))
		if err != nil {
			return fmt.Errorf("importing %s (nothing was committed): %w", c.Args().First(), err)
		}
		for _, s := range imp.Skipped {
			fmt.Fprintf(e.stderr, "agentstate: skipped %s: %s\n", s.Path, s.Type)
		}
		if imp.Lock != nil {
			if err := imp.CheckLineage(nil); err != nil {
				fmt.Fprintf(e.stderr, "agentstate: note: %v\n", err)
			}
		}
		msg := c.String("message")
		if msg == "" {
			msg = "import " + filepath.Base(c.Args().First())
		}
		return e.finishCommit(r, repo.CommitRequest{Agent: e.agent, Tree: imp.Tree, Message: msg, Op: refs.OpImport})
	})
}
