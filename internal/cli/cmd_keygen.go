package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/agentstate/agentstate/export/envelope"
	"github.com/urfave/cli/v2"
)

func newKeygenCommand(e *env) *cli.Command {
	return &cli.Command{Name: "keygen", Usage: "write a new 32-byte snapshot key (mode 0600), or with --age an age identity", ArgsUsage: " ",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "key `FILE` to create (required without --age)"},
			&cli.BoolFlag{Name: "age", Usage: "make an age X25519 identity (age-keygen's format) and print its recipient (public key); without -o the identity goes to stdout"},
		},
		Action: e.runKeygen}
}

func (e *env) runKeygen(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	out := c.String("output")
	if c.Bool("age") {
		return e.keygenAge(out)
	}
	if out == "" {
		return usagef("keygen needs -o FILE (the key file to create)")
	}
	k, err := envelope.GenerateKey(nil)
	if err != nil {
		return err
	}
	if err := envelope.WriteKeyFile(e.ctx, e.path(out), k); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s already exists; refusing to overwrite a key", out)
		}
		return err
	}
	fmt.Fprintf(e.stdout, "wrote key %s to %s (keep it safe: snapshots cannot be decrypted without it)\n", k.ID(), out)
	return nil
}

// keygenAge writes a new age identity to out (mode 0600) and prints its
// recipient alone on stdout, so it can be captured and handed to whoever
// pushes snapshots to this operator. Without out it prints the identity file
// to stdout and the recipient to stderr, as age-keygen does.
func (e *env) keygenAge(out string) error {
	id, err := envelope.GenerateAgeIdentity()
	if err != nil {
		return err
	}
	if out == "" {
		fmt.Fprintf(e.stderr, "Public key: %s\n", id.Recipient())
		_, err := e.stdout.Write(envelope.EncodeAgeIdentityFile(id, time.Now()))
		return err
	}
	if err := envelope.WriteAgeIdentityFile(e.ctx, e.path(out), id); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s already exists; refusing to overwrite an identity", out)
		}
		return err
	}
	fmt.Fprintf(e.stderr, "wrote age identity to %s (keep it safe: snapshots encrypted to its recipient cannot be decrypted without it); its recipient, for 'push --recipient', is:\n", out)
	fmt.Fprintln(e.stdout, id.Recipient())
	return nil
}
