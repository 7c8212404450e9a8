package snapshot

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentstate/agentstate/internal/atomicfile"
	"io"
	"os"
	"path/filepath"

	"github.com/agentstate/agentstate/refs"
)

// ErrNoPointer reports an agent with no published snapshot.
var ErrNoPointer = errors.New("snapshot: no snapshot pointer")

// Pointer publishes an agent's current snapshot: the blob id and the binding
// that ties it to its content.
type Pointer interface {
	// Read returns the published binding: ErrNoPointer when there is none,
	// an *UnboundError for a pointer with a blob id but no binding (older
	// format), a *TornPointerError when the two disagree.
	Read(ctx context.Context, agent string) (Binding, error)
	Write(ctx context.Context, agent string, b Binding) error
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

// Read reads and strictly parses the agent's pointer file (see
// ParsePointerFile; at most MaxBindingLen+1 bytes are read).
func (p FilePointer) Read(ctx context.Context, agent string) (Binding, error) {
	if err := refs.ValidateAgent(agent); err != nil {
		return Binding{}, err
	}
	f, err := os.Open(p.path(agent))
	if errors.Is(err, os.ErrNotExist) {
		return Binding{}, fmt.Errorf("%w for agent %q in %s", ErrNoPointer, agent, p.Dir)
	}
	if err != nil {
		return Binding{}, fmt.Errorf("snapshot: reading pointer: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxBindingLen+2))
	if err != nil {
		return Binding{}, fmt.Errorf("snapshot: reading pointer %s: %w", p.path(agent), err)
	}
	b, err := ParsePointerFile(data)
	var ue *UnboundError
	if errors.As(err, &ue) {
		ue.Where = p.path(agent)
		return Binding{}, ue
	}
	if err != nil {
		return Binding{}, fmt.Errorf("snapshot: pointer file %s: %w", p.path(agent), err)
	}
	return b, nil
}

// Write replaces the agent's pointer file atomically (internal/atomicfile:
// temporary file, fsync, rename, fsync the directory) with the binding's
// encoding.
func (p FilePointer) Write(ctx context.Context, agent string, b Binding) error {
	if err := refs.ValidateAgent(agent); err != nil {
		return err
	}
	if err := os.MkdirAll(p.Dir, 0o755); err != nil {
		return fmt.Errorf("snapshot: pointer directory: %w", err)
	}
	if err := atomicfile.WriteFile(p.path(agent), EncodePointerFile(b), 0o644); err != nil {
		return fmt.Errorf("snapshot: writing pointer: %w", err)
	}
	return nil
}
