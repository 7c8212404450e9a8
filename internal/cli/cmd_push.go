package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/envelope"
	"github.com/urfave/cli/v2"
)

func newPushCommand(e *env) *cli.Command {
	return &cli.Command{Name: "push", Usage: "encrypt REV (default HEAD) and ship it to the blob store; repoint the pointer", ArgsUsage: "[REV]",
		Flags: append([]cli.Flag{keyFlag(),
			&cli.StringSliceFlag{Name: "recipient", Aliases: []string{"r"}, Usage: "encrypt to this age X25519 recipient (age1..., an operator's public key) instead of the key; repeatable"},
			&cli.StringFlag{Name: "recipients-file", Usage: "encrypt to the age recipients in FILE (one age1... per line, # comments) instead of the key", EnvVars: []string{"AGENTSTATE_RECIPIENTS_FILE"}},
			&cli.IntFlag{Name: "epochs", Usage: "Walrus epochs to store for", EnvVars: []string{"AGENTSTATE_WALRUS_EPOCHS"}},
			&cli.BoolFlag{Name: "permanent", Usage: "store a permanent (not deletable) blob"},
			&cli.StringFlag{Name: "eth-key", Usage: "hex secp256k1 key file that signs the ENS update", EnvVars: []string{"AGENTSTATE_ETH_KEY"}},
			jsonFlag()}, walrusFlags()...),
		Action: e.runPush}
}

func (e *env) runPush(c *cli.Context) error {
	if err := nargs(c, 0, 1); err != nil {
		return err
	}
	rev := revArg(c, 0)
	return e.withRepo(func(r *repo.Repo) error {
		id, err := r.Resolve(e.ctx, e.agent, rev)
		if err != nil {
			return err
		}
		p, cleanup, err := e.pipeline(c, r, true)
		if err != nil {
			return err
		}
		defer cleanup()
		cfg, _ := loadConfig(r.Dir)
		p.Options.Epochs = c.Int("epochs")
		if p.Options.Epochs == 0 {
			p.Options.Epochs = cfg.Walrus.Epochs
		}
		p.Options.Permanent = c.Bool("permanent") || cfg.Walrus.Permanent
		var done func()
		p.Options.Progress, done = e.progress("push")
		rec, err := p.Push(e.ctx, e.agent, id)
		done()
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return e.writeJSON(rec)
		}
		state := "stored"
		if rec.AlreadyCertified {
			state = "already stored"
		}
		fmt.Fprintf(e.stdout, "pushed %s (bundle %s) as blob %s: %d bytes, %s", rec.Commit.Short(), rec.BundleHash, rec.BlobID, rec.Size, state)
		if rec.EndEpoch > 0 {
			fmt.Fprintf(e.stdout, ", until epoch %d", rec.EndEpoch)
		}
		if a, ok := p.Cipher.(*envelope.Age); ok {
			fmt.Fprintf(e.stdout, ", encrypted to %d age recipient%s", a.Recipients(), map[bool]string{true: "s"}[a.Recipients() != 1])
		}
		fmt.Fprintf(e.stdout, "\npointer: %s\n", rec.Pointer)
		return nil
	})
}
