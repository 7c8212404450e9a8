package history

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentstate/agentstate/internal/atomicfile"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/walrus"
)

// Ref names a published manifest: its blob, and the sha256 and size its
// bytes must have.
type Ref struct {
	Blob   walrus.BlobID
	SHA256 string
	Size   int64
}

// String is the pointer's text form: "BLOB SHA256 SIZE".
func (r Ref) String() string { return fmt.Sprintf("%s %s %d", r.Blob, r.SHA256, r.Size) }

// ParseRef reads a pointer's text form.
func ParseRef(s string) (Ref, error) {
	f := strings.Fields(s)
	if len(f) != 3 || !isHex(f[1], 64) {
		return Ref{}, fmt.Errorf("%w: pointer %q is not BLOB SHA256 SIZE", ErrBadManifest, shortText(s))
	}
	if _, err := walrus.ParseBlobID(f[0]); err != nil {
		return Ref{}, fmt.Errorf("%w: pointer: %w", ErrBadManifest, err)
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || n <= 0 || n > MaxManifest {
		return Ref{}, fmt.Errorf("%w: pointer size %q", ErrBadManifest, f[2])
	}
	return Ref{Blob: walrus.BlobID(f[0]), SHA256: f[1], Size: n}, nil
}

// shortText quotes at most 80 bytes of s for an error message.
func shortText(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// Pointer publishes an agent's current manifest.
type Pointer interface {
	ReadHistory(ctx context.Context, agent string) (Ref, error) // ErrNoHistory when none
	WriteHistory(ctx context.Context, agent string, ref Ref) error
}

// FilePointer keeps pointers as files <Dir>/<agent>.history.
type FilePointer struct{ Dir string }

func (p FilePointer) path(agent string) string { return filepath.Join(p.Dir, agent+".history") }

// ReadHistory implements Pointer.
func (p FilePointer) ReadHistory(ctx context.Context, agent string) (Ref, error) {
	if err := refs.ValidateAgent(agent); err != nil {
		return Ref{}, err
	}
	f, err := os.Open(p.path(agent))
	if errors.Is(err, os.ErrNotExist) {
		return Ref{}, fmt.Errorf("%w for %s (%s)", ErrNoHistory, agent, p.path(agent))
	}
	if err != nil {
		return Ref{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, 1025)) // a pointer is one short line
	if err != nil {
		return Ref{}, err
	}
	if len(data) > 1024 {
		return Ref{}, fmt.Errorf("%w: pointer file over 1 KiB", ErrBadManifest)
	}
	return ParseRef(string(data))
}

// WriteHistory implements Pointer.
func (p FilePointer) WriteHistory(ctx context.Context, agent string, ref Ref) error {
	if err := refs.ValidateAgent(agent); err != nil {
		return err
	}
	if err := os.MkdirAll(p.Dir, 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(p.path(agent), []byte(ref.String()+"\n"), 0o600)
}
