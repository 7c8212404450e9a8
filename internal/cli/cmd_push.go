//go:build !lean

package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/urfave/cli/v2"
)

func newPushCommand(e *env) *cli.Command {
	return &cli.Command{Name: "push", Usage: "encrypt REV (default HEAD) and ship it to the blob store; repoint the pointer", ArgsUsage: "[REV]",
		Flags: append([]cli.Flag{keyFlag(),
			&cli.StringSliceFlag{Name: "recipient", Aliases: []string{"r"}, Usage: "encrypt to the age X25519 `RECIPIENT` (age1..., an operator's public key) instead of the key; repeatable"},
			&cli.StringFlag{Name: "recipients-file", Usage: "encrypt to the age recipients in `FILE` (one age1... per line, # comments) instead of the key", EnvVars: []string{"AGENTSTATE_RECIPIENTS_FILE"}},
			&cli.IntFlag{Name: "epochs", Usage: "store for `N` Walrus epochs", EnvVars: []string{"AGENTSTATE_WALRUS_EPOCHS"}},
			&cli.BoolFlag{Name: "permanent", Usage: "store a permanent (not deletable) blob"},
			&cli.StringFlag{Name: "eth-key", Usage: "hex secp256k1 key `FILE` that signs the ENS update", EnvVars: []string{"AGENTSTATE_ETH_KEY"}},
			&cli.BoolFlag{Name: "history", Usage: "also ship the whole history: a pack of the blocks and receipts new since the last history push, and a manifest signed with --sign-key (REV must be HEAD)"},
			&cli.StringFlag{Name: "sign-key", Usage: "operator ed25519 key `FILE` that signs the history manifest (created, with FILE.pub, when missing)", EnvVars: []string{"AGENTSTATE_SIGN_KEY"}},
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
		withHistory := c.Bool("history")
		if withHistory {
			if c.String("sign-key") == "" {
				return usagef("push --history needs --sign-key FILE: the operator's ed25519 key that signs the manifest (the runtime's operator key; created with its .pub beside it when FILE does not exist)")
			}
			if head, err := r.Resolve(e.ctx, e.agent, "HEAD"); err != nil {
				return err
			} else if head != id {
				return usagef("push --history ships HEAD's history; %s is not HEAD", rev)
			}
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
		var hist *historyPushed
		if withHistory {
			if hist, err = e.pushHistory(c, r, p); err != nil {
				return fmt.Errorf("%w (the snapshot %s was pushed and its pointer moved)", err, rec.BlobID)
			}
		}
		if c.Bool("json") {
			if hist != nil {
				return e.writeJSON(struct {
					snapshot.Record
					History *historyPushed `json:"history"`
				}{rec, hist})
			}
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
		if hist != nil {
			e.printHistoryPushed(hist)
		}
		return nil
	})
}
