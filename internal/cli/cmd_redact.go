package cli

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/runtime"
	"github.com/urfave/cli/v2"
)

func newRedactCommand(e *env) *cli.Command {
	return &cli.Command{Name: "redact", Usage: "remove a value's content from the store for good, keeping every commit id, bundle hash and receipt valid (a signed record says what is gone)",
		ArgsUsage: "KEY",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "at", Usage: "redact KEY's value at `REV`"},
			&cli.BoolFlag{Name: "all", Usage: "redact every version of KEY in the agent's history"},
			&cli.StringFlag{Name: "row", Usage: "erase one row `TABLE:PK` of a SQLite value (KEY, default memory.db) from the history: a new commit without it, and the pages that held it redacted in every older version"},
			&cli.StringFlag{Name: "value", Usage: "redact the value `CID` (at KEY when KEY is given; else wherever it appears in the agent's history)"},
			&cli.StringFlag{Name: "reason", Usage: "why (`TEXT`, kept in the record; required)"},
			&cli.StringFlag{Name: "sign-key", Usage: "operator ed25519 key `FILE` that signs the record (created, with FILE.pub, when missing); it becomes trusted for the agent", EnvVars: []string{"AGENTSTATE_SIGN_KEY"}},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "say what would be removed; change nothing"},
			jsonFlag(),
		},
		Action: e.runRedact}
}

func (e *env) runRedact(c *cli.Context) error {
	if err := nargs(c, 0, 1); err != nil {
		return err
	}
	req := repo.RedactRequest{Agent: e.agent, Key: c.Args().First(), All: c.Bool("all"), Reason: c.String("reason"), DryRun: c.Bool("dry-run")}
	if v := c.String("value"); v != "" {
		id, err := objects.ParseCID(v)
		if err != nil {
			return usagef("--value %q: %v", v, err)
		}
		req.Value = id
	}
	if row := c.String("row"); row != "" {
		return e.runRedactRow(c, req, row)
	}
	n := 0
	for _, set := range []bool{c.String("at") != "", req.All, !req.Value.IsZero()} {
		if set {
			n++
		}
	}
	switch {
	case req.Key == "" && req.Value.IsZero():
		return usagef("redact KEY --at REV | --all, or redact --value CID; with --reason TEXT")
	case n != 1:
		return usagef("redact needs exactly one of --at REV, --all and --value CID")
	case req.Reason == "":
		return usagef("redact needs --reason TEXT: it is kept in the signed record")
	case c.String("sign-key") == "":
		return usagef("redact needs --sign-key FILE: the operator's ed25519 key that signs the record (created with its .pub beside it when FILE does not exist)")
	}
	keyFile := e.path(c.String("sign-key"))
	e.gatesOwnWrites = true // redact waits for writers as gc does
	return e.withRepo(func(r *repo.Repo) error {
		if at := c.String("at"); at != "" {
			id, err := r.Resolve(e.ctx, e.agent, at)
			if err != nil {
				return err
			}
			req.At = id
		}
		// A refused redaction changes nothing, not even the key file: a
		// key to create is created once the request is known to be good.
		if _, err := os.Stat(keyFile); errors.Is(err, os.ErrNotExist) {
			dry := req
			dry.DryRun = true
			if _, err := r.Redact(e.ctx, dry, ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))); err != nil {
				return fmt.Errorf("redact: %w", err)
			}
			if !req.DryRun {
				fmt.Fprintf(e.stderr, "created operator key %s (public key in %s.pub)\n", keyFile, keyFile)
			}
		}
		var key ed25519.PrivateKey
		if req.DryRun {
			key = ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)) // a dry run signs nothing
		} else {
			var err error
			if key, err = runtime.LoadOrCreateKey(e.ctx, keyFile); err != nil {
				return err
			}
		}
		rep, err := r.Redact(e.ctx, req, key)
		if err != nil {
			return fmt.Errorf("redact: %w", err)
		}
		if c.Bool("json") {
			return e.writeJSON(rep)
		}
		e.printRedact(rep)
		return nil
	})
}

func (e *env) printRedact(rep repo.RedactReport) {
	out := e.stdout
	keys := make([]string, len(rep.Keys))
	for i, k := range rep.Keys {
		keys[i] = termsafe.Line(k)
	}
	verb, rm := "redacted", "removed"
	if rep.DryRun {
		verb, rm = "would redact", "would remove"
	}
	fmt.Fprintf(out, "%s %d value(s) of %s (%s): %s %d block(s), %d bytes\n", verb, len(rep.Values), e.agent, strings.Join(keys, ", "), rm, rep.Removed, rep.Bytes)
	for _, v := range rep.Values {
		fmt.Fprintf(out, "  value %s\n", v)
	}
	for _, c := range rep.Commits {
		fmt.Fprintf(out, "  first at commit %s\n", c)
	}
	if rep.ID != "" {
		fmt.Fprintf(out, "record %s (agentstate redactions lists it)\n", rep.ID)
	}
	if rep.Kept > 0 {
		fmt.Fprintf(out, "%d chunk(s) stay: values that are not redacted use them", rep.Kept)
		if len(rep.Shared) > 0 {
			fmt.Fprintf(out, "; to remove them, redact these versions too:\n")
			for _, s := range rep.Shared {
				fmt.Fprintf(out, "  agentstate --agent %s redact %s --at %s --reason ...   # %d shared chunk(s), value %s\n",
					e.agent, shellQuote(s.Key), s.Commit, s.Chunks, s.Value.Short())
			}
		} else {
			fmt.Fprintln(out)
		}
	}
	if !rep.DryRun {
		fmt.Fprintln(out, "commit ids, bundle hashes and receipts are unchanged; copies made before (clones, exports, history packs already pushed to Walrus) still hold the content: a pushed history cannot be unpublished, push --history again to publish one without it")
	}
}

// shellQuote quotes a key for a command line to copy.
func shellQuote(s string) string {
	safe := true
	for _, r := range s {
		if !(r == '/' || r == '.' || r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			safe = false
		}
	}
	if safe && s != "" {
		return s
	}
	return "'" + strings.ReplaceAll(termsafe.Line(s), "'", `'\''`) + "'"
}

func newRedactionsCommand(e *env) *cli.Command {
	return &cli.Command{Name: "redactions", Usage: "list the redaction records of the agent (--all-agents: every agent's)", ArgsUsage: " ",
		Flags:  []cli.Flag{&cli.BoolFlag{Name: "all-agents", Usage: "every agent's records"}, jsonFlag()},
		Action: e.runRedactions}
}

func (e *env) runRedactions(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	agent := e.agent
	if c.Bool("all-agents") {
		agent = ""
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		ris, err := r.Redactions(e.ctx, agent)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			if ris == nil {
				ris = []repo.RedactionInfo{}
			}
			return e.writeJSON(ris)
		}
		if len(ris) == 0 {
			fmt.Fprintln(e.stderr, "no redactions")
		}
		for _, ri := range ris {
			fmt.Fprintf(e.stdout, "redaction %s\n", ri.ID)
			if ri.Record != nil {
				rec := ri.Record
				keys := make([]string, len(rec.Keys))
				for i, k := range rec.Keys {
					keys[i] = termsafe.Line(k)
				}
				fmt.Fprintf(e.stdout, "  agent   %s\n  keys    %s\n  time    %s\n  signer  %x\n  reason  %s\n  values  %d, blocks removed %d\n",
					termsafe.Line(rec.Agent), strings.Join(keys, ", "), time.Unix(rec.Time, 0).UTC().Format(time.RFC3339), []byte(rec.Signer),
					termsafe.Line(rec.Reason), len(rec.Values), len(rec.Blocks))
				for _, v := range rec.Values {
					fmt.Fprintf(e.stdout, "    %s\n", v)
				}
			}
			if ri.Problem != "" {
				fmt.Fprintf(e.stdout, "  NOT HONOURED: %s\n", termsafe.Line(ri.Problem))
			}
		}
		return nil
	})
}

// runRedactRow is redact --row: the read model's RedactRow.
func (e *env) runRedactRow(c *cli.Context, req repo.RedactRequest, row string) error {
	switch {
	case c.String("at") != "" || req.All || !req.Value.IsZero():
		return usagef("redact --row takes none of --at, --all and --value: it erases the row from every version of KEY")
	case req.Reason == "":
		return usagef("redact needs --reason TEXT: it is kept in the signed record")
	case c.String("sign-key") == "":
		return usagef("redact needs --sign-key FILE: the operator's ed25519 key that signs the record (created with its .pub beside it when FILE does not exist)")
	}
	if req.Key == "" {
		req.Key = "memory.db"
	}
	keyFile := e.path(c.String("sign-key"))
	e.gatesOwnWrites = true
	return e.withRepo(func(r *repo.Repo) error {
		view := inspect.New(r)
		if _, err := os.Stat(keyFile); errors.Is(err, os.ErrNotExist) {
			if _, err := view.RedactRow(e.ctx, e.agent, req.Key, row, req.Reason, ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)), inspect.WriteOptions{}, true); err != nil {
				return fmt.Errorf("redact: %w", err)
			}
			if !req.DryRun {
				fmt.Fprintf(e.stderr, "created operator key %s (public key in %s.pub)\n", keyFile, keyFile)
			}
		}
		key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)) // a dry run signs nothing
		if !req.DryRun {
			var err error
			if key, err = runtime.LoadOrCreateKey(e.ctx, keyFile); err != nil {
				return err
			}
		}
		rep, err := view.RedactRow(e.ctx, e.agent, req.Key, row, req.Reason, key, inspect.WriteOptions{}, req.DryRun)
		if err != nil {
			return fmt.Errorf("redact: %w", err)
		}
		if c.Bool("json") {
			return e.writeJSON(rep)
		}
		if !rep.New.IsZero() {
			fmt.Fprintf(e.stdout, "%s: row %s erased from %s at HEAD: %s\n", e.agent, termsafe.Line(row), termsafe.Line(req.Key), rep.New)
		}
		fmt.Fprintf(e.stdout, "%d older version(s) held the row; the pages that held it:\n", len(rep.Versions))
		e.printRedact(rep.Redaction)
		return nil
	})
}
