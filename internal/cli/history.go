//go:build !lean

package cli

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/ens"
	"github.com/agentstate/agentstate/export/history"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/runtime"
	"github.com/urfave/cli/v2"
)

// historyShipper builds the history shipper beside a snapshot pipeline: the
// same cipher and blob store; its pointer lives where the snapshot's does
// (the agent-history record of the same ENS name, or
// <pointer dir>/<agent>.history).
func historyShipper(p *snapshot.Pipeline) (*history.Shipper, error) {
	s := &history.Shipper{Repo: p.Repo, Cipher: p.Cipher, Blobs: p.Blobs, Options: p.Options, RecordKeys: true}
	switch ptr := p.Pointer.(type) {
	case ens.SnapshotPointer:
		s.Pointer = ens.HistoryPointer{Client: ptr.Client, Names: ptr.Names, Signer: ptr.Signer}
	case snapshot.FilePointer:
		s.Pointer = history.FilePointer{Dir: ptr.Dir}
	default:
		return nil, fmt.Errorf("history: no history pointer beside the snapshot pointer %T", p.Pointer)
	}
	return s, nil
}

// historyPushed is push --history's report.
type historyPushed struct {
	Manifest string        `json:"manifest"` // the pointer's text: BLOB SHA256 SIZE
	Pointer  string        `json:"pointer"`
	Head     string        `json:"head"`
	Packs    int           `json:"packs"`
	Pack     *history.Pack `json:"pack,omitempty"` // the (last) pack this push added
	Added    int           `json:"added"`          // packs this push added (more than one: a history too large for one)
	Blocks   int           `json:"blocks"`         // blocks in them
	Signer   string        `json:"signer"`
	// Rebuilt: redacted since the last push, the history was published
	// anew; the packs pushed before stay where they were stored.
	Rebuilt bool `json:"rebuilt,omitempty"`
}

// pushHistory runs after the snapshot push: one pack of what is new since
// the published manifest, a new signed manifest, the pointer.
func (e *env) pushHistory(c *cli.Context, r *repo.Repo, p *snapshot.Pipeline) (*historyPushed, error) {
	keyFile := e.path(c.String("sign-key"))
	_, statErr := os.Stat(keyFile)
	key, err := runtime.LoadOrCreateKey(e.ctx, keyFile)
	if err != nil {
		return nil, err
	}
	if errors.Is(statErr, os.ErrNotExist) {
		fmt.Fprintf(e.stderr, "created operator key %s (public key in %s.pub)\n", keyFile, keyFile)
	}
	s, err := historyShipper(p)
	if err != nil {
		return nil, err
	}
	m, err := s.Push(e.ctx, e.agent, key)
	if err != nil {
		return nil, fmt.Errorf("push --history: %w", err)
	}
	out := &historyPushed{Manifest: m.Ref.String(), Head: m.Head.String(), Packs: len(m.Packs), Signer: m.Operator, Rebuilt: m.Rebuilt}
	if m.Added {
		out.Pack = &m.Packs[len(m.Packs)-1]
		out.Added = m.PacksAdded
		for _, p := range m.Packs[len(m.Packs)-m.PacksAdded:] {
			out.Blocks += p.Blocks
		}
	}
	switch ptr := s.Pointer.(type) {
	case ens.HistoryPointer:
		name, _ := ptr.Names(e.agent)
		out.Pointer = "ENS " + name + " " + ens.HistoryKey
	case history.FilePointer:
		out.Pointer = ptr.Dir + "/" + e.agent + ".history"
	}
	return out, nil
}

func (e *env) printHistoryPushed(h *historyPushed) {
	if h.Pack == nil {
		fmt.Fprintf(e.stdout, "history: up to date (%d packs up to %s)\n", h.Packs, h.Head[:12])
	} else {
		receipts := 0
		if h.Pack.Receipts != nil {
			receipts = h.Pack.Receipts.Lines
		}
		if h.Added > 1 {
			fmt.Fprintf(e.stdout, "history: packs %d–%d (%d packs: the new history is larger than one pack takes) of %d blocks and %d receipts, the last as blob %s; manifest signed by %s…\n",
				h.Packs-h.Added+1, h.Packs, h.Added, h.Blocks, receipts, termsafe.Line(string(h.Pack.Blob)), termsafe.Line(h.Signer[:16]))
		} else {
			fmt.Fprintf(e.stdout, "history: pack %d of %d blocks and %d receipts as blob %s; manifest signed by %s…\n",
				h.Packs, h.Pack.Blocks, receipts, termsafe.Line(string(h.Pack.Blob)), termsafe.Line(h.Signer[:16]))
		}
	}
	fmt.Fprintf(e.stdout, "history pointer: %s = %s\n", termsafe.Line(h.Pointer), termsafe.Line(h.Manifest))
	if h.Rebuilt {
		fmt.Fprintln(e.stdout, "history: published anew without the redacted content; the history pushed before cannot be unpublished: its packs stay where they were stored, and whoever holds its manifest can still read them")
	}
}

// restoreHistory is restore --history: the packs of the published manifest
// (signed by a trusted key) into the store, HEAD moved as a pull moves it,
// the receipts and operator keys recorded.
func (e *env) restoreHistory(c *cli.Context, r *repo.Repo, p *snapshot.Pipeline) error {
	keys, err := parseKeyArgs(e, c.StringSlice("pub"))
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		// The keys this store trusts to sign the agent's history: never
		// one it only learned from another store.
		if keys, err = r.TrustedKeys(e.ctx, e.agent, repo.KeySignsHistory); err != nil {
			return err
		}
	}
	if len(keys) == 0 {
		return usagef("restore --history needs --pub KEY: the operator public key (64 hex digits or its .pub file) that signed the history manifest (this store trusts no key to sign %s's history: see agentstate trust)", e.agent)
	}
	s, err := historyShipper(p)
	if err != nil {
		return err
	}
	res, err := s.Restore(e.ctx, e.agent, keys, history.RestoreOptions{FFOnly: c.Bool("ff-only"), Expect: c.String("expect"), MinSeq: uint64(c.Int64("min-seq"))})
	if err != nil {
		var mc *repo.MergeConflictError
		if errors.Is(err, history.ErrStale) {
			return fmt.Errorf("restore --history: %w (nothing fetched, HEAD unchanged)", err)
		}
		if errors.As(err, &mc) || errors.Is(err, repo.ErrNotFastForward) {
			return fmt.Errorf("restore --history: %w (HEAD unchanged; the history's blocks are stored)", err)
		}
		return err
	}
	if c.Bool("json") {
		return e.writeJSON(res)
	}
	m := res.Manifest
	fmt.Fprintf(e.stdout, "manifest %s: seq %d, pushed %s, signed by %s…\n", termsafe.Line(string(res.Ref.Blob)), m.Seq, time.Unix(m.Time, 0).UTC().Format(time.RFC3339), m.Operator[:16])
	fmt.Fprintf(e.stdout, "restored %s's history from manifest %s: %d packs (%d fetched), HEAD %s (%s), tree %s, bundle %s, %d receipts re-ingested, %d key records added\n",
		e.agent, termsafe.Line(string(res.Ref.Blob)), len(m.Packs), res.Fetched, m.Head.Short(), termsafe.Line(string(res.Integration.Outcome)), m.Tree, m.BundleHash, res.Receipts, res.Operators)
	return nil
}
