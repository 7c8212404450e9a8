package snapshot

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentstate/agentstate/ens"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/walrus"
)

// ErrNoPointer reports an agent with no published snapshot.
var ErrNoPointer = errors.New("snapshot: no snapshot pointer")

// Pointer publishes the blob id of an agent's current snapshot.
type Pointer interface {
	Read(ctx context.Context, agent string) (walrus.BlobID, error) // ErrNoPointer when there is none
	Write(ctx context.Context, agent string, id walrus.BlobID) error
	// Where names the pointer for messages (a file path, an ENS name).
	Where(agent string) string
}

// Preflighter is an optional ability of a Pointer: check, before anything is
// uploaded, that a Write for the agent would be accepted.
type Preflighter interface {
	Preflight(ctx context.Context, agent string) error
}

// FilePointer keeps one file per agent in a directory: the embedded default
// (the directory is "pointers" inside the store unless configured).
type FilePointer struct{ Dir string }

func (p FilePointer) path(agent string) string { return filepath.Join(p.Dir, agent) }

func (p FilePointer) Where(agent string) string { return p.path(agent) }

func (p FilePointer) Read(ctx context.Context, agent string) (walrus.BlobID, error) {
	if err := refs.ValidateAgent(agent); err != nil {
		return "", err
	}
	data, err := os.ReadFile(p.path(agent))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w for agent %q in %s", ErrNoPointer, agent, p.Dir)
	}
	if err != nil {
		return "", fmt.Errorf("snapshot: reading pointer: %w", err)
	}
	id, err := walrus.ParseBlobID(strings.TrimSpace(string(data)))
	if err != nil {
		return "", fmt.Errorf("snapshot: pointer file %s: %w", p.path(agent), err)
	}
	return id, nil
}

func (p FilePointer) Write(ctx context.Context, agent string, id walrus.BlobID) error {
	if err := refs.ValidateAgent(agent); err != nil {
		return err
	}
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return fmt.Errorf("snapshot: pointer directory: %w", err)
	}
	tmp, err := os.CreateTemp(p.Dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("snapshot: writing pointer: %w", err)
	}
	_, err = tmp.WriteString(string(id) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), p.path(agent))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("snapshot: writing pointer: %w", err)
	}
	return nil
}

// ENSPointer keeps the pointer in the agent-snapshot text record of an ENS
// name. Names maps an agent to its ENS name; Signer signs writes (nil makes
// the pointer read-only).
type ENSPointer struct {
	Client *ens.Client
	Names  func(agent string) (string, error)
	Signer *ecdsa.PrivateKey
}

func (p ENSPointer) Where(agent string) string {
	n, err := p.Names(agent)
	if err != nil {
		return "ENS (" + err.Error() + ")"
	}
	return "ENS " + n
}

func (p ENSPointer) Read(ctx context.Context, agent string) (walrus.BlobID, error) {
	name, err := p.Names(agent)
	if err != nil {
		return "", err
	}
	v, err := p.Client.ReadPointer(ctx, name)
	if errors.Is(err, ens.ErrNoRecord) {
		return "", fmt.Errorf("%w: %v", ErrNoPointer, err)
	}
	if err != nil {
		return "", err
	}
	id, err := walrus.ParseBlobID(v)
	if err != nil {
		return "", fmt.Errorf("snapshot: ENS %s record %s holds %q: %w", name, ens.PointerKey, v, err)
	}
	return id, nil
}

// Preflight simulates the record update (no transaction): a missing resolver
// or a signer the resolver does not authorise is reported before a push
// uploads anything.
func (p ENSPointer) Preflight(ctx context.Context, agent string) error {
	if p.Signer == nil {
		return fmt.Errorf("snapshot: writing the ENS pointer needs a signing key (--eth-key FILE)")
	}
	name, err := p.Names(agent)
	if err != nil {
		return err
	}
	// Any well-formed blob id: the resolver authorises by node, not by value.
	return p.Client.CheckSetText(ctx, name, ens.PointerKey, strings.Repeat("A", walrus.BlobIDLen), p.Signer)
}

func (p ENSPointer) Write(ctx context.Context, agent string, id walrus.BlobID) error {
	if p.Signer == nil {
		return fmt.Errorf("snapshot: writing the ENS pointer needs a signing key (--eth-key FILE)")
	}
	name, err := p.Names(agent)
	if err != nil {
		return err
	}
	_, err = p.Client.WritePointer(ctx, name, string(id), p.Signer)
	return err
}
