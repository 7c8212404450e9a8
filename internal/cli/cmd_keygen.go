package cli

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/agentstate/agentstate/export/envelope"
	"github.com/urfave/cli/v2"
)

func newKeygenCommand(e *env) *cli.Command {
	return &cli.Command{Name: "keygen", Usage: "write a new 32-byte snapshot key (mode 0600)", ArgsUsage: " ",
		Flags:  []cli.Flag{&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Required: true, Usage: "key file to create"}},
		Action: e.runKeygen}
}

func (e *env) runKeygen(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	k, err := envelope.GenerateKey(nil)
	if err != nil {
		return err
	}
	out := c.String("output")
	if err := envelope.WriteKeyFile(e.ctx, e.path(out), k); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s already exists; refusing to overwrite a key", out)
		}
		return err
	}
	fmt.Fprintf(e.stdout, "wrote key %s to %s (keep it safe: snapshots cannot be decrypted without it)\n", k.ID(), out)
	return nil
}
