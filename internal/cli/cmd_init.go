package cli

import (
	"fmt"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"path/filepath"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/urfave/cli/v2"
)

func newInitCommand(e *env) *cli.Command {
	return &cli.Command{Name: "init", Usage: "create a store (.agentstate here, or --store DIR)", ArgsUsage: " ", Action: e.runInit}
}

func (e *env) runInit(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	dir := e.storeFlag
	if dir == "" {
		dir = repo.DirName
	}
	abs, err := filepath.Abs(e.path(dir))
	if err != nil {
		return err
	}
	if badger.IsWhole(abs) {
		return fmt.Errorf("a store already exists at %s", abs)
	}
	e.closed() // a read-only open this command closed before
	r, err := repo.Init(abs, repo.Options{})
	if err != nil {
		return err
	}
	if err := r.Close(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Initialized empty agentstate store in %s\n", abs)
	return nil
}
