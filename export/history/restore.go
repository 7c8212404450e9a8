package history

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/tape"
)

// Fetched is a history Fetch read into the store.
type Fetched struct {
	Manifest *Manifest
	Ref      Ref
	Receipts []byte // the packs' receipt lines, NDJSON, in the manifest's order
	Lines    int    // receipt lines
	Skipped  int    // packs not fetched: the store held their heads already
}

// Fetch reads agent's published history into the store, pack by pack in the
// manifest's order (each pack may use only blocks of the packs before it and
// of the store, and may leave out only the parents its manifest entry names
// as cut), reads and checks the packs' receipt lines, checks the result
// against the manifest (the head, its tree and bundle hash), and records the
// cut links in the agent's checkpoint. It moves no HEAD and writes no
// receipt; Restore does both. A pack whose head the store already holds is
// not fetched (its receipts are). A refused pack leaves the blocks of the packs
// before it stored but unreferenced (gc removes them).
func (s *Shipper) Fetch(ctx context.Context, agent string, trusted []ed25519.PublicKey) (*Fetched, error) {
	m, ref, err := s.Published(ctx, agent, trusted)
	if err != nil {
		return nil, err
	}
	return s.fetch(ctx, agent, m, ref)
}

// fetch is Fetch of a published manifest already read and verified.
func (s *Shipper) fetch(ctx context.Context, agent string, m *Manifest, ref Ref) (*Fetched, error) {
	f := &Fetched{Manifest: m, Ref: ref}
	var redactions [][]byte // the records the packs carried
	cuts := map[[2]objects.CID]bool{}
	var links []repo.CutLink
	for i, p := range m.Packs {
		for _, l := range p.Cuts {
			for _, par := range l.Parents {
				cuts[[2]objects.CID{l.Commit, par}] = true
				links = append(links, repo.CutLink{Commit: l.Commit, Parents: []objects.CID{par}})
			}
		}
		// A pack whose head the store holds is not fetched: a store that
		// holds a commit holds its history, so a restore over an earlier
		// one reads only the packs pushed since.
		if have, err := s.Repo.Blocks.Has(ctx, p.Head); err != nil {
			return nil, err
		} else if have {
			f.Skipped++
		} else {
			if p.Size > sealedBound(snapshot.DefaultCARMaxStaged) {
				return nil, fmt.Errorf("%w: pack %d is %d bytes, more than a reader takes (%s)", ErrBadPack, i+1, p.Size, sizeText(snapshot.DefaultCARMaxStaged))
			}
			car, err := s.getSealed(ctx, p.Blob, p.SHA256, p.Size)
			if err != nil {
				return nil, fmt.Errorf("pack %d: %w", i+1, err)
			}
			imp, err := snapshot.ReadCAR(ctx, bytes.NewReader(car), s.Repo.Blocks, snapshot.CAROptions{
				Cut: func(child, parent objects.CID) bool { return cuts[[2]objects.CID{child, parent}] },
				// Records signed by a key trusted here or by the manifest's
				// (verified) signer cover the pack's redacted blocks.
				Redactions: func(lines [][]byte) (func(v, c objects.CID) bool, error) {
					return s.Repo.JudgeRedactions(ctx, append(slices.Clone(redactions), lines...), m.Operator)
				},
			})
			if err != nil {
				return nil, fmt.Errorf("pack %d (in the manifest's order): %w", i+1, err)
			}
			redactions = append(redactions, imp.Redactions...)
			if imp.Root != p.Head || imp.Blocks != p.Blocks {
				return nil, fmt.Errorf("%w: pack %d holds %d blocks under %s, the manifest says %d under %s", ErrBadPack, i+1, imp.Blocks, imp.Root.Short(), p.Blocks, p.Head.Short())
			}
		}
		if rb := p.Receipts; rb != nil {
			if rb.Size > sealedBound(repo.MaxReceiptBytes) {
				return nil, fmt.Errorf("%w: the receipts of pack %d are %d bytes, more than a reader takes (%s)", ErrBadPack, i+1, rb.Size, sizeText(repo.MaxReceiptBytes))
			}
			nd, err := s.getSealed(ctx, rb.Blob, rb.SHA256, rb.Size)
			if err != nil {
				return nil, fmt.Errorf("receipts of pack %d: %w", i+1, err)
			}
			lines, err := tape.SplitNDJSON(nd)
			if err != nil {
				return nil, fmt.Errorf("%w: receipts of pack %d: %w", ErrBadPack, i+1, err)
			}
			if len(lines) != rb.Lines {
				return nil, fmt.Errorf("%w: receipts of pack %d hold %d lines, the manifest says %d", ErrBadPack, i+1, len(lines), rb.Lines)
			}
			f.Receipts = append(f.Receipts, ndjson(lines)...)
			f.Lines += len(lines)
		}
	}
	cm, err := s.Repo.Commit(ctx, m.Head)
	if err != nil {
		return nil, err
	}
	bh, err := s.Repo.BundleHash(ctx, cm.Tree)
	if err != nil {
		return nil, err
	}
	if cm.Tree != m.Tree || bh.String() != m.BundleHash {
		return nil, fmt.Errorf("%w: the head's tree %s and bundle hash %s are not the manifest's %s and %s", ErrBadPack, cm.Tree.Short(), bh, m.Tree.Short(), m.BundleHash)
	}
	if err := s.Repo.AdoptCuts(ctx, agent, links); err != nil {
		return nil, fmt.Errorf("recording the history's cuts: %w", err)
	}
	if _, err := s.Repo.AddRedactions(ctx, dedupLines(redactions), m.Operator); err != nil {
		return nil, fmt.Errorf("recording the history's redactions: %w", err)
	}
	return f, nil
}

// dedupLines drops repeated lines (every pack carries the agent's records).
func dedupLines(lines [][]byte) [][]byte {
	seen := map[string]bool{}
	var out [][]byte
	for _, l := range lines {
		if !seen[string(l)] {
			seen[string(l)] = true
			out = append(out, l)
		}
	}
	return out
}

// recordKeys records, after a restore of agent from m, m's signer as
// trusted for agent (unless it is already) and m's operators as learned
// with agent's receipts, and returns how many records it added.
func (s *Shipper) recordKeys(ctx context.Context, agent string, m *Manifest, ref Ref) (int, error) {
	signers, err := s.Repo.TrustedKeys(ctx, agent, repo.KeySignsHistory)
	if err != nil {
		return 0, err
	}
	n := 0
	learn := m.Operators
	if !slices.ContainsFunc(signers, func(k ed25519.PublicKey) bool { return repo.KeyHex(k) == m.Operator }) {
		n, err = s.Repo.ApplyKeyOp(ctx, repo.KeyOp{Op: repo.KeyOpTrust, Agent: agent, Keys: []string{m.Operator},
			Source: "signer of history manifest " + string(ref.Blob)})
		switch {
		case errors.Is(err, repo.ErrNotOperator):
			// A served store's client with a token: the signer it gave
			// verifies the agent's receipts there, and signs nothing
			// until the store's operator trusts it.
			learn = append([]string{m.Operator}, learn...)
		case err != nil:
			return n, err
		}
	}
	if len(learn) > 0 {
		l, err := s.Repo.ApplyKeyOp(ctx, repo.KeyOp{Op: repo.KeyOpLearn, Agent: agent, Keys: learn,
			Source: "history manifest " + string(ref.Blob)})
		n += l
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// RestoreOptions tune Restore.
type RestoreOptions struct {
	FFOnly bool   // refuse to merge with a HEAD the history does not contain
	Expect string // when set, the manifest's bundle hash must be this
	// MinSeq, when set, refuses a manifest numbered below it (ErrStale):
	// a fresh store has seen no manifest to compare with.
	MinSeq uint64
}

// Restored says what Restore did.
type Restored struct {
	Manifest    *Manifest
	Ref         Ref
	Integration repo.Integration
	Receipts    int // receipt lines added to the tape
	Operators   int // key records added: the signer trusted for the agent, keys learned with its receipts
	Fetched     int // packs fetched (the others' heads were in the store)
}

// Restore rebuilds agent's history from its published manifest (Fetch),
// moves HEAD to the manifest's head as a pull does (created, fast-forward,
// or a merge; op restore), appends the receipt lines the tape lacks and, with
// RecordKeys, records the manifest's signer as trusted for agent and its
// operators as learned with agent's receipts. Nothing moves unless every pack was read and checked.
func (s *Shipper) Restore(ctx context.Context, agent string, trusted []ed25519.PublicKey, o RestoreOptions) (*Restored, error) {
	m, ref, err := s.Published(ctx, agent, trusted)
	if err != nil {
		return nil, err
	}
	if o.Expect != "" && !strings.EqualFold(o.Expect, m.BundleHash) { // before any pack is fetched
		return nil, fmt.Errorf("history: refusing manifest %s: its bundle hash is %s, expected %s", ref.Blob, m.BundleHash, o.Expect)
	}
	if err := s.checkFresh(ctx, agent, m, ref, o.MinSeq); err != nil { // before any pack is fetched
		return nil, err
	}
	f, err := s.fetch(ctx, agent, m, ref)
	if err != nil {
		return nil, err
	}
	res := &Restored{Manifest: m, Ref: f.Ref, Fetched: len(m.Packs) - f.Skipped}
	if res.Integration, err = s.Repo.Integrate(ctx, agent, m.Head, o.FFOnly, refs.OpRestore, "restore --history "+string(f.Ref.Blob)); err != nil {
		return res, err
	}
	if f.Lines > 0 {
		if res.Receipts, err = s.Repo.Tape.Import(ctx, agent, f.Receipts); err != nil {
			return res, fmt.Errorf("history: HEAD of %q restored to %s, but re-ingesting its receipts failed: %w", agent, m.Head.Short(), err)
		}
	}
	if err := s.see(ctx, agent, m, f.Ref); err != nil {
		return res, fmt.Errorf("history: HEAD of %q restored to %s, but recording manifest seq %d failed: %w", agent, m.Head.Short(), m.Seq, err)
	}
	if s.RecordKeys {
		n, err := s.recordKeys(ctx, agent, m, f.Ref)
		res.Operators = n
		if err != nil {
			return res, fmt.Errorf("history: HEAD of %q restored to %s, but recording its keys failed: %w", agent, m.Head.Short(), err)
		}
	}
	return res, nil
}
