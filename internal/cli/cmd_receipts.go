package cli

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"os"

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
			&cli.StringSliceFlag{Name: "pub", Usage: "trusted operator public key: FILE or 64 hex digits (repeatable; default: the keys recorded in the store)"},
			&cli.StringFlag{Name: "file", Usage: "read receipts.ndjson from FILE ('-' for stdin) instead of the store"},
			jsonFlag(),
		},
		Action: e.runReceipts,
	}
}

type receiptsOpts struct {
	verify bool
	json   bool
	pubs   []string
	file   string
}

type receiptJSON struct {
	N        int             `json:"n"`
	Receipt  json.RawMessage `json:"receipt,omitempty"`
	Line     string          `json:"line,omitempty"` // a line that does not parse
	Verified *bool           `json:"verified,omitempty"`
	Error    string          `json:"error,omitempty"`
	Note     string          `json:"note,omitempty"`
}

func (e *env) runReceipts(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	o := receiptsOpts{verify: c.Bool("verify"), json: c.Bool("json"), pubs: c.StringSlice("pub"), file: c.String("file")}
	keys, err := parseKeyArgs(e, o.pubs)
	if err != nil {
		return err
	}
	if o.file != "" {
		if o.verify && len(keys) == 0 {
			return usagef("receipts: --verify --file needs --pub KEY (there is no store to take operator keys from)")
		}
		data, err := readLimited(e, o.file)
		if err != nil {
			return err
		}
		return e.listReceipts(o, splitLines(data), keys, nil)
	}
	return e.withRepoRead(func(r *repo.Repo) error { // receipts only reads
		if len(keys) == 0 {
			if keys, err = r.TrustedKeys(e.ctx, e.agent, repo.KeyVerifiesReceipts); err != nil {
				return err
			}
		}
		var lines [][]byte
		for l, err := range r.Tape.Lines(e.ctx, e.agent) {
			if err != nil {
				return fmt.Errorf("reading the receipt tape of %q: %w", e.agent, err)
			}
			lines = append(lines, l)
		}
		return e.listReceipts(o, lines, keys, r)
	})
}

func parseKeyArgs(e *env, args []string) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for _, a := range args {
		k, err := receipt.ParsePublicKey(a)
		if err != nil {
			data, ferr := os.ReadFile(e.path(a))
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
		f, err := os.Open(e.path(name))
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

func splitLines(data []byte) [][]byte {
	var out [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out
}

// checkReceipt verifies one receipt; note says what could not be checked.
func (e *env) checkReceipt(rc *receipt.Receipt, keys []ed25519.PublicKey, r *repo.Repo) (note string, err error) {
	if err := rc.VerifyAny(keys); err != nil {
		return "", err
	}
	if r == nil {
		return "", nil
	}
	if has, _ := r.Blocks.Has(e.ctx, rc.Commit); !has {
		if cp, ok, _ := r.CheckpointOf(e.ctx, rc.Agent); ok {
			return fmt.Sprintf("commit forgotten (history cut by forget at %s); the receipt stays as the audit trail", fmtTime(cp.Time)), nil
		}
		return "commit not in this store (restored from a snapshot)", nil
	}
	h, err := r.CommitBundleHash(e.ctx, rc.Commit)
	if err != nil {
		return "", fmt.Errorf("bundle hash of %s: %w", rc.Commit.Short(), err)
	}
	if h != rc.BundleAfter {
		return "", fmt.Errorf("bundleAfter %s, but commit %s hashes to %s", rc.BundleAfter, rc.Commit.Short(), h)
	}
	return "", nil
}

func (e *env) listReceipts(o receiptsOpts, lines [][]byte, keys []ed25519.PublicKey, r *repo.Repo) error {
	out := []receiptJSON{}
	failed := 0
	for i, l := range lines {
		n := i + 1
		rc, perr := receipt.Parse(l)
		var note string
		verr := perr
		if perr == nil && o.verify {
			note, verr = e.checkReceipt(rc, keys, r)
		}
		if verr != nil {
			failed++
		}
		if o.json {
			j := receiptJSON{N: n, Note: note}
			if perr != nil {
				j.Line = string(l)
			} else {
				j.Receipt = rc.Line()
			}
			if o.verify || perr != nil {
				ok := verr == nil
				j.Verified = &ok
			}
			if verr != nil {
				j.Error = verr.Error()
			}
			out = append(out, j)
			continue
		}
		if perr != nil {
			fmt.Fprintf(e.stdout, "%4d  %s\n", n, e.paint("31", "unreadable: "+termsafe.Line(perr.Error())))
			continue
		}
		merge := ""
		if rc.Merged() {
			merge = " (merge)"
		}
		fmt.Fprintf(e.stdout, "%4d  %s  %s  %-24s %s -> %s%s", n, fmtTime(rc.Time), rc.Commit.Short(), termsafe.Line(rc.Task), shortHash(rc.BundleBefore), shortHash(rc.BundleAfter), merge)
		switch {
		case !o.verify:
		case verr != nil:
			fmt.Fprintf(e.stdout, "  %s", e.paint("31", "FAILED: "+termsafe.Line(verr.Error())))
		case note != "":
			fmt.Fprintf(e.stdout, "  %s (%s)", e.paint("32", "ok"), termsafe.Line(note))
		default:
			fmt.Fprintf(e.stdout, "  %s", e.paint("32", "ok"))
		}
		fmt.Fprintln(e.stdout)
	}
	if o.json {
		if err := e.writeJSON(out); err != nil {
			return err
		}
	} else if o.verify && failed == 0 {
		fmt.Fprintf(e.stdout, "%d receipt(s) verified against %d operator key(s)\n", len(lines), len(keys))
	}
	if failed > 0 && o.verify {
		return fmt.Errorf("%d of %d receipt(s) failed verification", failed, len(lines))
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d receipt line(s) are not valid receipts", failed, len(lines))
	}
	return nil
}

func shortHash(h objects.BundleHash) string { return h.String()[:10] }
