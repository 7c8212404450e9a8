package cli

import "github.com/urfave/cli/v2"

func newRedoCommand(e *env) *cli.Command {
	return &cli.Command{Name: "redo", Usage: "re-apply the operation the last undo reverted", ArgsUsage: " ", Action: e.runRedo}
}

func (e *env) runRedo(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.undoRedo(true)
}
