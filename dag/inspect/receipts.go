package inspect

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs/receipt"
)

// ReceiptOptions select how an agent's receipts are read.
type ReceiptOptions struct {
	// Verify checks each receipt's signature and stateDeltaHash, and,
	// when its commit is in the store, its bundleAfter.
	Verify bool
	// Keys, when set, are the operator keys verified against instead of
	// those the store trusts for the agent's receipts.
	Keys []ed25519.PublicKey
}

// ReceiptsWith returns an agent's receipts, oldest first, read as o says.
func (v *View) ReceiptsWith(ctx context.Context, agent string, o ReceiptOptions) ([]Receipt, error) {
	if _, err := v.checkAgent(ctx, agent); err != nil {
		return nil, err
	}
	keys := o.Keys
	if o.Verify && len(keys) == 0 {
		var err error
		if keys, err = v.R.TrustedKeys(ctx, agent, repo.KeyVerifiesReceipts); err != nil {
			return nil, classify(err)
		}
	}
	var lines [][]byte
	for l, err := range v.R.Tape.Lines(ctx, agent) {
		if err != nil {
			return nil, fmt.Errorf("reading the receipt tape of %q: %w", agent, err)
		}
		lines = append(lines, l)
	}
	return readReceipts(lines, o.Verify, func(rc *receipt.Receipt) (string, error) { return v.checkReceipt(ctx, rc, keys) }), nil
}

// ReadReceipts reads receipt lines that are not in a store (a
// receipts.ndjson, e.g. from an extracted snapshot), oldest first; with
// verify, each receipt's signature and stateDeltaHash are checked against
// keys (its bundleAfter cannot be: there is no commit to hash).
func ReadReceipts(lines [][]byte, verify bool, keys []ed25519.PublicKey) []Receipt {
	return readReceipts(lines, verify, func(rc *receipt.Receipt) (string, error) {
		if len(keys) == 0 {
			return "", errors.New("no operator key to verify against")
		}
		return "", rc.VerifyAny(keys)
	})
}

// readReceipts is every window's one reading of a tape's lines: a line that
// does not parse is kept as it is, unverified, with the parse error.
func readReceipts(lines [][]byte, verify bool, check func(*receipt.Receipt) (string, error)) []Receipt {
	out := make([]Receipt, 0, len(lines))
	for i, l := range lines {
		j := Receipt{N: i + 1}
		rc, perr := receipt.Parse(l)
		if perr != nil {
			j.Line = string(l)
			f := false
			j.Verified, j.Error = &f, perr.Error()
			out = append(out, j)
			continue
		}
		j.Receipt = rc
		if verify {
			note, verr := check(rc)
			ok := verr == nil
			j.Verified, j.Note = &ok, note
			if verr != nil {
				j.Error = verr.Error()
			}
		}
		out = append(out, j)
	}
	return out
}

// checkReceipt verifies one receipt of the store's against keys; the note
// says what could not be checked (its commit is gone).
func (v *View) checkReceipt(ctx context.Context, rc *receipt.Receipt, keys []ed25519.PublicKey) (string, error) {
	if len(keys) == 0 {
		return "", errors.New("the store records no operator key")
	}
	if err := rc.VerifyAny(keys); err != nil {
		return "", err
	}
	gone := func() string {
		if cp, cut, _ := v.R.CheckpointOf(ctx, rc.Agent); cut {
			return fmt.Sprintf("commit forgotten (history cut by forget at %s); the receipt stays as the audit trail",
				time.Unix(cp.Time, 0).UTC().Format(TimeLayout))
		}
		return "commit not in this store (restored from a snapshot)"
	}
	if has, _ := v.R.Blocks.Has(ctx, rc.Commit); !has {
		return gone(), nil
	}
	h, err := v.R.CommitBundleHash(ctx, rc.Commit)
	if errors.Is(err, objects.ErrNotFound) || errors.Is(err, dag.ErrUnknown) {
		return gone(), nil // collected while this ran
	}
	if err != nil {
		return "", fmt.Errorf("bundle hash of %s: %w", rc.Commit.Short(), err)
	}
	if h != rc.BundleAfter {
		return "", fmt.Errorf("bundleAfter %s, but commit %s hashes to %s", rc.BundleAfter, rc.Commit.Short(), h)
	}
	return "", nil
}
