package ens

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/walrus"
)

// SnapshotPointer is the snapshot.Pointer that keeps an agent's snapshot pointer in two text records of an ENS name:
// agent-snapshot (PointerKey) holds the blob id, as the seeds define it,
// and agent-snapshot-binding (BindingKey) holds the binding's encoding,
// which repeats the blob id. Names maps an agent to its ENS name; Signer
// signs writes (nil makes the pointer read-only).
type SnapshotPointer struct {
	Client *Client
	Names  func(agent string) (string, error)
	Signer *ecdsa.PrivateKey
}

func (p SnapshotPointer) Where(agent string) string {
	n, err := p.Names(agent)
	if err != nil {
		return "ENS (" + err.Error() + ")"
	}
	return "ENS " + n
}

// Read reads both records. A blob id without a binding is an
// *UnboundError; a binding for another blob is a *TornPointerError.
func (p SnapshotPointer) Read(ctx context.Context, agent string) (snapshot.Binding, error) {
	name, err := p.Names(agent)
	if err != nil {
		return snapshot.Binding{}, err
	}
	v, bv, err := p.Client.ReadPointerPair(ctx, name)
	if errors.Is(err, ErrNoRecord) {
		return snapshot.Binding{}, fmt.Errorf("%w: %w", snapshot.ErrNoPointer, err)
	}
	if err != nil {
		return snapshot.Binding{}, err
	}
	where := "ENS " + name
	id, err := walrus.ParseBlobID(v)
	if err != nil {
		return snapshot.Binding{}, fmt.Errorf("ens: %s record %s holds %q: %w", where, PointerKey, shortText(v), err)
	}
	if bv == "" {
		return snapshot.Binding{}, &snapshot.UnboundError{Where: where + " (no " + BindingKey + " record)", Blob: id}
	}
	b, err := snapshot.ParseBinding(bv)
	if err != nil {
		return snapshot.Binding{}, fmt.Errorf("ens: %s record %s: %w", where, BindingKey, err)
	}
	if b.Blob != id {
		return snapshot.Binding{}, &snapshot.TornPointerError{Where: where + " (records " + PointerKey + " and " + BindingKey + ")", Blob: id, Binding: b.Blob}
	}
	return b, nil
}

// Preflight simulates the record update (no transaction): a missing resolver
// or a signer the resolver does not authorise is reported before a push
// uploads anything.
func (p SnapshotPointer) Preflight(ctx context.Context, agent string) error {
	if p.Signer == nil {
		return fmt.Errorf("ens: writing the snapshot pointer needs a signing key (--eth-key FILE)")
	}
	name, err := p.Names(agent)
	if err != nil {
		return err
	}
	// Any well-formed blob id: the resolver authorises by node, not by value.
	return p.Client.CheckSetText(ctx, name, PointerKey, strings.Repeat("A", walrus.BlobIDLen), p.Signer)
}

// Write sets both records (see Client.WritePointerPair: one multicall
// transaction where the resolver has it, else the binding first).
func (p SnapshotPointer) Write(ctx context.Context, agent string, b snapshot.Binding) error {
	if p.Signer == nil {
		return fmt.Errorf("ens: writing the snapshot pointer needs a signing key (--eth-key FILE)")
	}
	name, err := p.Names(agent)
	if err != nil {
		return err
	}
	_, err = p.Client.WritePointerPair(ctx, name, string(b.Blob), b.String(), p.Signer)
	return err
}

var _ snapshot.Pointer = SnapshotPointer{}

// shortText quotes at most 80 bytes of a record for an error message.
func shortText(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
