package ens

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/export/history"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/walrus"
)

// HistoryKey is the text record that names an agent's history manifest
// (docs/history.md): "BLOB-ID SHA256 SIZE", the manifest blob's id, the hex
// sha256 of its bytes and its size. The agent-snapshot record keeps naming
// the tar snapshot; the two are independent.
const HistoryKey = "agent-history"

// HistoryPointer is the history.Pointer that keeps an agent's history
// pointer in the HistoryKey text record of its ENS name. Names maps an agent
// to its name; Signer signs writes (nil makes the pointer read-only).
type HistoryPointer struct {
	Client *Client
	Names  func(agent string) (string, error)
	Signer *ecdsa.PrivateKey
}

// ReadHistory implements history.Pointer: an unset record is
// history.ErrNoHistory, a record that does not parse history.ErrBadManifest.
func (p HistoryPointer) ReadHistory(ctx context.Context, agent string) (history.Ref, error) {
	name, err := p.Names(agent)
	if err != nil {
		return history.Ref{}, err
	}
	v, err := p.Client.Text(ctx, name, HistoryKey)
	if err != nil {
		return history.Ref{}, err
	}
	if v == "" {
		return history.Ref{}, fmt.Errorf("%w for %s (ENS %s has no %s record)", history.ErrNoHistory, agent, name, HistoryKey)
	}
	ref, err := history.ParseRef(v)
	if err != nil {
		return history.Ref{}, fmt.Errorf("ens: %s record %s: %w", name, HistoryKey, err)
	}
	return ref, nil
}

// WriteHistory implements history.Pointer: one setText, none when the
// record already holds ref.
func (p HistoryPointer) WriteHistory(ctx context.Context, agent string, ref history.Ref) error {
	if p.Signer == nil {
		return fmt.Errorf("ens: writing the history pointer needs a signing key (--eth-key FILE)")
	}
	name, err := p.Names(agent)
	if err != nil {
		return err
	}
	cur, err := p.Client.Text(ctx, name, HistoryKey)
	if err != nil {
		return err
	}
	if cur == ref.String() {
		return nil
	}
	_, err = p.Client.SetText(ctx, name, HistoryKey, ref.String(), p.Signer)
	return err
}

// Preflight simulates the record update (no transaction), so that a push
// learns of a missing resolver or an unauthorised signer before it uploads.
func (p HistoryPointer) Preflight(ctx context.Context, agent string) error {
	if p.Signer == nil {
		return fmt.Errorf("ens: writing the history pointer needs a signing key (--eth-key FILE)")
	}
	name, err := p.Names(agent)
	if err != nil {
		return err
	}
	probe := history.Ref{Blob: walrus.BlobID(strings.Repeat("A", walrus.BlobIDLen)), SHA256: strings.Repeat("0", 64), Size: 1}
	return p.Client.CheckSetText(ctx, name, HistoryKey, probe.String(), p.Signer)
}

var (
	_ history.Pointer      = HistoryPointer{}
	_ snapshot.Preflighter = HistoryPointer{} // history.Shipper.Push calls it before uploading
)
