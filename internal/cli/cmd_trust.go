package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/urfave/cli/v2"
)

// trust: the keys this store trusts to verify receipts and sign histories
// (dag/repo/trust.go). Keys that arrive with a clone, pull or history are
// only learned (they verify that agent's receipts); trusting a key is this
// command.

func newTrustCommand(e *env) *cli.Command {
	scope := &cli.BoolFlag{Name: "all-agents", Usage: "the key trusted for every agent, not only for the agent (--agent)"}
	return &cli.Command{Name: "trust", Usage: "list, add or remove the ed25519 keys this store trusts to verify receipts and sign restored histories",
		Description: "A key trusted for an agent verifies its receipts and may sign a history of it that restore --history accepts without --pub. " +
			"Keys learned from another store (with a clone, pull or send of an agent, or named by its history manifest) verify that agent's receipts only and sign nothing until trusted here.",
		Subcommands: []*cli.Command{
			{Name: "ls", Usage: "list every trusted and learned key", ArgsUsage: " ", Flags: []cli.Flag{jsonFlag()}, Action: e.runTrustLs},
			{Name: "add", Usage: "trust KEY (64 hex digits, base64, or a .pub file) for the agent, or with --all-agents for every agent", ArgsUsage: "KEY",
				Flags: []cli.Flag{scope}, Action: func(c *cli.Context) error { return e.runTrustChange(c, true) }},
			{Name: "rm", Usage: "remove the agent's trusted and learned records of KEY, or with --all-agents the key trusted for every agent", ArgsUsage: "KEY",
				Flags: []cli.Flag{scope}, Action: func(c *cli.Context) error { return e.runTrustChange(c, false) }},
		}}
}

func (e *env) runTrustLs(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		recs, err := r.Keys(e.ctx)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			if recs == nil {
				recs = []repo.KeyRecord{}
			}
			return e.writeJSON(recs)
		}
		for _, k := range recs {
			var what string
			switch k.Kind {
			case repo.KeyOperator:
				what = "trusted for every agent: verifies receipts, signs histories"
			case repo.KeyAgent:
				what = "trusted for " + k.Agent + ": verifies its receipts, signs its history"
			default:
				what = "learned with " + k.Agent + "'s receipts: verifies them, signs nothing"
			}
			fmt.Fprintf(e.stdout, "%s\t%s", k.Key, what)
			if k.Source != "" {
				fmt.Fprintf(e.stdout, " (%s)", termsafe.Line(k.Source))
			}
			if k.Time != "" {
				fmt.Fprintf(e.stdout, " since %s", termsafe.Line(k.Time))
			}
			fmt.Fprintln(e.stdout)
		}
		return nil
	})
}

func (e *env) runTrustChange(c *cli.Context, add bool) error {
	verb := "add"
	if !add {
		verb = "rm"
	}
	if c.NArg() != 1 {
		return usagef("trust %s KEY: one key, as 64 hex digits, base64, or a .pub file", verb)
	}
	keys, err := parseKeyArgs(e, []string{c.Args().First()})
	if err != nil {
		return err
	}
	agent, scope := e.agent, "agent "+e.agent
	if c.Bool("all-agents") {
		agent, scope = "", "every agent"
	}
	k := repo.KeyHex(keys[0])
	op := repo.KeyOp{Op: repo.KeyOpTrust, Agent: agent, Keys: []string{k}, Source: "trust add"}
	if !add {
		op.Op, op.Source = repo.KeyOpUntrust, ""
	}
	return e.withRepo(func(r *repo.Repo) error {
		n, err := r.ApplyKeyOp(e.ctx, op)
		if err != nil {
			return err
		}
		if add {
			fmt.Fprintf(e.stdout, "trusted %s for %s: it verifies receipts and may sign a history restore --history accepts without --pub\n", k, scope)
			return nil
		}
		if n == 0 {
			hint := " (a key trusted for every agent is removed with --all-agents)"
			if agent == "" {
				hint = " (a key trusted or learned for one agent is removed with --agent AGENT)"
			}
			return fmt.Errorf("key %s is not trusted for %s%s", k, scope, hint)
		}
		fmt.Fprintf(e.stdout, "removed %d record(s) of key %s for %s\n", n, k, scope)
		return nil
	})
}
