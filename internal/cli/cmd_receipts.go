package cli

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"io"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs/receipt"
	"github.com/urfave/cli/v2"
)

func newReceiptsCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "receipts",
		Usage:     "list (and verify) the agent's signed task receipts",
		ArgsUsage: " ",
		Description: "Receipts come from the agent's receipt tape in the store, or from a receipts.ndjson\n" +
			"file (--file, e.g. from an extracted snapshot). --verify checks each receipt's ed25519\n" +
			"signature against the operator keys the runtime recorded in the store, or against --pub,\n" +
			"its stateDeltaHash, and (when the commit is in the store) its bundleAfter.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "verify", Usage: "verify every receipt; exit 1 if any fails"},
			&cli.StringSliceFlag{Name: "pub", Usage: "trusted operator public `KEY`: a file or 64 hex digits (repeatable; default: the keys recorded in the store)"},
			&cli.StringFlag{Name: "file", Usage: "read receipts.ndjson from `FILE` ('-' for stdin) instead of the store"},
			jsonFlag(),
		},
		Action: e.receiptsAction,
	}
}

type receiptsOptions struct {
	readOpts
	Verify, JSON bool
	// Keys, when set, are the operator keys verified against (--pub)
	// instead of those the store trusts for the agent's receipts.
	Keys []ed25519.PublicKey
	// Lines, when set, are a receipts.ndjson's (--file), read instead of
	// the agent's tape; View is then unused.
	Lines [][]byte
}

func (e *env) receiptsAction(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	o := receiptsOptions{Verify: c.Bool("verify"), JSON: c.Bool("json")}
	var err error
	if o.Keys, err = parseKeyArgs(e, c.StringSlice("pub")); err != nil {
		return err
	}
	if file := c.String("file"); file != "" {
		if o.Verify && len(o.Keys) == 0 {
			return usagef("receipts: --verify --file needs --pub KEY (there is no store to take operator keys from)")
		}
		data, err := readLimited(e, file)
		if err != nil {
			return err
		}
		o.Lines = splitLines(data)
		o.readOpts = readOpts{Agent: e.agent, Color: e.color}
		return runReceipts(e.ctx, o, c.Args().Slice(), e.stdout)
	}
	return e.withRepoRead(func(r *repo.Repo) error { // receipts only reads
		o.readOpts = e.readOpts(r)
		return runReceipts(e.ctx, o, c.Args().Slice(), e.stdout)
	})
}

func parseKeyArgs(e *env, args []string) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for _, a := range args {
		k, err := receipt.ParsePublicKey(a)
		if err != nil {
			data, _, ferr := e.readInput(a, maxSecretFile)
			if ferr != nil {
				return nil, usagef("--pub %q: neither a key (64 hex digits) nor a readable file: %v", a, ferr)
			}
			if k, err = receipt.ParsePublicKey(string(data)); err != nil {
				return nil, usagef("--pub %s: %v", a, err)
			}
		}
		keys = append(keys, k)
	}
	return keys, nil
}

const maxReceiptsFile = 1 << 30

func readLimited(e *env, name string) ([]byte, error) {
	var r io.Reader = e.stdin
	if name != "-" {
		f, err := e.openInput(name, "receipts --file - < "+name)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxReceiptsFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxReceiptsFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, maxReceiptsFile)
	}
	return data, nil
}

// splitLines gives the non-blank lines of data: never nil, so an empty
// --file reads as no receipts, not as the store's (receiptsOptions.Lines).
func splitLines(data []byte) [][]byte {
	out := [][]byte{}
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// runReceipts renders the read model's receipts (inspect.View.ReceiptsWith,
// or inspect.ReadReceipts for o.Lines; --json is its []inspect.Receipt),
// oldest first, and fails when a line is not a receipt or, with --verify,
// when one fails verification.
func runReceipts(ctx context.Context, o receiptsOptions, args []string, out io.Writer) error {
	if len(args) != 0 {
		return usagef("receipts: takes no arguments")
	}
	var rs []inspect.Receipt
	if o.Lines != nil {
		rs = inspect.ReadReceipts(o.Lines, o.Verify, o.Keys)
	} else {
		var err error
		if o.Verify && len(o.Keys) == 0 {
			// The keys the store trusts for the agent's receipts, read
			// here to say how many verified them.
			if o.Keys, err = o.View.R.TrustedKeys(ctx, o.Agent, repo.KeyVerifiesReceipts); err != nil {
				return err
			}
		}
		if rs, err = o.View.ReceiptsWith(ctx, o.Agent, inspect.ReceiptOptions{Verify: o.Verify, Keys: o.Keys}); err != nil {
			return err
		}
	}
	keys := len(o.Keys)
	e := o.out(ctx, out)
	failed, unreadable := 0, 0
	for _, j := range rs {
		if j.Receipt == nil {
			unreadable++
		} else if j.Verified != nil && !*j.Verified {
			failed++
		}
	}
	if o.JSON {
		if err := e.writeJSON(rs); err != nil {
			return err
		}
	} else {
		for _, j := range rs {
			if j.Receipt == nil {
				fmt.Fprintf(out, "%4d  %s\n", j.N, e.paint("31", "unreadable: "+termsafe.Line(j.Error)))
				continue
			}
			rc := j.Receipt
			merge := ""
			if rc.Merged() {
				merge = " (merge)"
			}
			fmt.Fprintf(out, "%4d  %s  %s  %-24s %s -> %s%s", j.N, fmtTime(rc.Time), rc.Commit.Short(), termsafe.Line(rc.Task), shortHash(rc.BundleBefore), shortHash(rc.BundleAfter), merge)
			switch {
			case !o.Verify:
			case j.Verified != nil && !*j.Verified:
				fmt.Fprintf(out, "  %s", e.paint("31", "FAILED: "+termsafe.Line(j.Error)))
			case j.Note != "":
				fmt.Fprintf(out, "  %s (%s)", e.paint("32", "ok"), termsafe.Line(j.Note))
			default:
				fmt.Fprintf(out, "  %s", e.paint("32", "ok"))
			}
			fmt.Fprintln(out)
		}
		if o.Verify && failed+unreadable == 0 {
			fmt.Fprintf(out, "%d receipt(s) verified against %d operator key(s)\n", len(rs), keys)
		}
	}
	if o.Verify && failed+unreadable > 0 {
		return fmt.Errorf("%d of %d receipt(s) failed verification", failed+unreadable, len(rs))
	}
	if unreadable > 0 {
		return fmt.Errorf("%d of %d receipt line(s) are not valid receipts", unreadable, len(rs))
	}
	return nil
}

func shortHash(h objects.BundleHash) string { return h.String()[:10] }
