// Package history ships an agent's whole history to a blob store and back:
// encrypted packs (each a CARv1 of the blocks new since the previous pack)
// and a head manifest, signed with the operator's ed25519 key, that names
// the packs in order. A pointer (a file in the store, or an ENS text record)
// names the current manifest. docs/history.md specifies the formats.
package history

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/internal/atomicfile"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/walrus"
)

// Version is the manifest's "v".
const Version = 1

// SigningContext prefixes the bytes an operator signs.
const SigningContext = "agentstate-history-v1\n"

// MaxManifest bounds a manifest's bytes.
const MaxManifest = 4 << 20

var (
	// ErrBadManifest: a manifest that does not parse, is not canonical, or
	// contradicts itself.
	ErrBadManifest = errors.New("history: bad manifest")
	// ErrUntrusted: a manifest signed by a key not trusted, or not signed.
	ErrUntrusted = errors.New("history: manifest not signed by a trusted operator key")
	// ErrBadPack: a pack whose bytes or content contradict its manifest.
	ErrBadPack = errors.New("history: pack contradicts its manifest")
	// ErrNoHistory: no manifest is published for the agent.
	ErrNoHistory = errors.New("history: no history published")
)

// Pack is one pack blob: a CAR, encrypted, whose root is Head.
type Pack struct {
	Blob   walrus.BlobID `json:"blob"`
	SHA256 string        `json:"sha256"` // hex sha256 of the blob's bytes
	Size   int64         `json:"size"`   // the blob's bytes
	Head   objects.CID   `json:"head"`   // the CAR's root
	Blocks int           `json:"blocks"` // blocks in the CAR
}

// Manifest is an agent's history on a blob store.
type Manifest struct {
	V          int         `json:"v"`
	Agent      string      `json:"agent"`
	Head       objects.CID `json:"head"`
	Tree       objects.CID `json:"tree"`
	BundleHash string      `json:"bundleHash"`
	Packs      []Pack      `json:"packs"`
	Time       int64       `json:"time"`
	Operator   string      `json:"operator"`      // hex ed25519 public key of the signer
	Sig        string      `json:"sig,omitempty"` // hex signature over SigningContext + the manifest without sig
}

func (m *Manifest) signed() ([]byte, error) {
	c := *m
	c.Sig = ""
	body, err := json.Marshal(&c)
	if err != nil {
		return nil, err
	}
	return append([]byte(SigningContext), body...), nil
}

// Sign signs m with key (setting Operator).
func (m *Manifest) Sign(key ed25519.PrivateKey) error {
	m.Operator = hex.EncodeToString(key.Public().(ed25519.PublicKey))
	msg, err := m.signed()
	if err != nil {
		return err
	}
	m.Sig = hex.EncodeToString(ed25519.Sign(key, msg))
	return nil
}

// Verify checks that m is signed by one of trusted.
func (m *Manifest) Verify(trusted []ed25519.PublicKey) error {
	pub, err := hex.DecodeString(m.Operator)
	if err != nil || len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: operator %q is not an ed25519 public key", ErrBadManifest, m.Operator)
	}
	known := false
	for _, k := range trusted {
		if bytes.Equal(k, pub) {
			known = true
		}
	}
	if !known {
		return fmt.Errorf("%w: signed by %s…, which is not a trusted operator key", ErrUntrusted, m.Operator[:16])
	}
	sig, err := hex.DecodeString(m.Sig)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return fmt.Errorf("%w: no valid signature", ErrUntrusted)
	}
	msg, err := m.signed()
	if err != nil {
		return err
	}
	if !ed25519.Verify(pub, msg, sig) {
		return fmt.Errorf("%w: the signature does not verify (the manifest was changed or signed by another key)", ErrUntrusted)
	}
	return nil
}

// Parse reads a manifest strictly: known members only, in canonical form,
// version 1, a valid agent name, and packs that name distinct blobs.
func Parse(data []byte) (*Manifest, error) {
	if len(data) > MaxManifest {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrBadManifest, len(data), MaxManifest)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if again, err := json.Marshal(&m); err != nil || !bytes.Equal(again, bytes.TrimSuffix(data, []byte("\n"))) {
		return nil, fmt.Errorf("%w: not in canonical form", ErrBadManifest)
	}
	if m.V != Version {
		return nil, fmt.Errorf("%w: version %d (this build reads %d)", ErrBadManifest, m.V, Version)
	}
	if err := refs.ValidateAgent(m.Agent); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if len(m.Packs) == 0 || m.Packs[len(m.Packs)-1].Head != m.Head {
		return nil, fmt.Errorf("%w: the last pack must end at the head", ErrBadManifest)
	}
	seen := map[walrus.BlobID]bool{}
	for i, p := range m.Packs {
		if seen[p.Blob] || p.Size <= 0 || len(p.SHA256) != 64 || p.Head.IsZero() {
			return nil, fmt.Errorf("%w: pack %d is malformed or repeated", ErrBadManifest, i+1)
		}
		seen[p.Blob] = true
	}
	return &m, nil
}

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
	if len(f) != 3 || len(f[1]) != 64 {
		return Ref{}, fmt.Errorf("%w: pointer %q is not BLOB SHA256 SIZE", ErrBadManifest, s)
	}
	if _, err := hex.DecodeString(f[1]); err != nil {
		return Ref{}, fmt.Errorf("%w: pointer sha256: %v", ErrBadManifest, err)
	}
	n, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || n <= 0 || n > MaxManifest {
		return Ref{}, fmt.Errorf("%w: pointer size %q", ErrBadManifest, f[2])
	}
	return Ref{Blob: walrus.BlobID(f[0]), SHA256: f[1], Size: n}, nil
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
	data, err := os.ReadFile(p.path(agent))
	if errors.Is(err, os.ErrNotExist) {
		return Ref{}, fmt.Errorf("%w for %s (%s)", ErrNoHistory, agent, p.path(agent))
	}
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

// Shipper pushes and restores histories.
type Shipper struct {
	Repo    *repo.Repo
	Cipher  envelope.Cipher
	Blobs   walrus.Store
	Pointer Pointer
	Options walrus.StoreOptions
}

// getBlob reads a blob, checking its sha256 and size, at most max bytes.
func (s *Shipper) getBlob(ctx context.Context, id walrus.BlobID, sum string, size int64) ([]byte, error) {
	rc, err := s.Blobs.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, size+1))
	if err != nil {
		return nil, err
	}
	got := sha256.Sum256(data)
	if int64(len(data)) != size || hex.EncodeToString(got[:]) != sum {
		return nil, fmt.Errorf("%w: blob %s is %d bytes with sha256 %x, the manifest says %d bytes, %s", ErrBadPack, id, len(data), got, size, sum)
	}
	return data, nil
}

func (s *Shipper) putBlob(ctx context.Context, data []byte) (walrus.BlobID, string, error) {
	st, err := s.Blobs.Put(ctx, bytes.NewReader(data), int64(len(data)), s.Options)
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(data)
	return st.BlobID, hex.EncodeToString(sum[:]), nil
}

// Published returns the agent's current manifest, verified against trusted.
func (s *Shipper) Published(ctx context.Context, agent string, trusted []ed25519.PublicKey) (*Manifest, Ref, error) {
	ref, err := s.Pointer.ReadHistory(ctx, agent)
	if err != nil {
		return nil, ref, err
	}
	data, err := s.getBlob(ctx, ref.Blob, ref.SHA256, ref.Size)
	if err != nil {
		return nil, ref, fmt.Errorf("history manifest: %w", err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, ref, err
	}
	if err := m.Verify(trusted); err != nil {
		return nil, ref, err
	}
	if m.Agent != agent {
		return nil, ref, fmt.Errorf("%w: the manifest is agent %q's, not %q's", ErrBadManifest, m.Agent, agent)
	}
	return m, ref, nil
}

// Push ships the history of agent's HEAD: one pack of the blocks new since
// the packs of the published manifest (if its signer is key), then a new
// manifest naming every pack in order, signed with key, then the pointer.
func (s *Shipper) Push(ctx context.Context, agent string, key ed25519.PrivateKey) (*Manifest, error) {
	h, err := s.Repo.Refs.Head(ctx, agent)
	if err != nil {
		return nil, err
	}
	cm, err := s.Repo.Commit(ctx, h.Commit)
	if err != nil {
		return nil, err
	}
	bh, err := s.Repo.BundleHash(ctx, cm.Tree)
	if err != nil {
		return nil, err
	}
	m := &Manifest{V: Version, Agent: agent, Head: h.Commit, Tree: cm.Tree, BundleHash: bh.String(), Time: s.Repo.Now()}
	lo, _, err := s.Repo.LogOptions(ctx, agent)
	if err != nil {
		return nil, err
	}
	prev, _, err := s.Published(ctx, agent, []ed25519.PublicKey{key.Public().(ed25519.PublicKey)})
	switch {
	case errors.Is(err, ErrNoHistory):
	case err != nil:
		return nil, fmt.Errorf("the published history of %s: %w (push starts a new one only when there is none)", agent, err)
	default:
		if prev.Head == h.Commit {
			return prev, nil // nothing new
		}
		m.Packs = append(m.Packs, prev.Packs...)
	}
	// Blocks the earlier packs carry: everything their heads reach here.
	var heads []objects.CID
	for _, p := range m.Packs {
		heads = append(heads, p.Head)
	}
	had := dag.Reach{}
	if len(heads) > 0 {
		if had, _, err = dag.Walk(ctx, s.Repo.Blocks, heads, dag.WalkOptions{Cut: lo.Cut, Gone: lo.Gone}); err != nil {
			return nil, err
		}
	}
	var car bytes.Buffer
	st, err := snapshot.WriteCARSince(ctx, &car, s.Repo.Blocks, h.Commit, lo.Cut, func(c objects.CID) bool { _, ok := had[c]; return ok })
	if err != nil {
		return nil, err
	}
	var sealed bytes.Buffer
	if err := s.Cipher.Encrypt(ctx, &sealed, bytes.NewReader(car.Bytes()), sha256.Sum256(car.Bytes())); err != nil {
		return nil, err
	}
	id, sum, err := s.putBlob(ctx, sealed.Bytes())
	if err != nil {
		return nil, fmt.Errorf("storing the pack: %w", err)
	}
	m.Packs = append(m.Packs, Pack{Blob: id, SHA256: sum, Size: int64(sealed.Len()), Head: h.Commit, Blocks: st.Blocks})
	if err := m.Sign(key); err != nil {
		return nil, err
	}
	body, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	mid, msum, err := s.putBlob(ctx, body)
	if err != nil {
		return nil, fmt.Errorf("storing the manifest: %w", err)
	}
	if err := s.Pointer.WriteHistory(ctx, agent, Ref{Blob: mid, SHA256: msum, Size: int64(len(body))}); err != nil {
		return nil, fmt.Errorf("publishing the manifest: %w", err)
	}
	return m, nil
}

// Fetch reads agent's published history into the store, pack by pack in the
// manifest's order (each pack may use only blocks of the packs before it and
// of the store), and checks the result against the manifest: the head, its
// tree and bundle hash. It moves no HEAD; the caller does (Integrate).
func (s *Shipper) Fetch(ctx context.Context, agent string, trusted []ed25519.PublicKey) (*Manifest, error) {
	m, _, err := s.Published(ctx, agent, trusted)
	if err != nil {
		return nil, err
	}
	for i, p := range m.Packs {
		blob, err := s.getBlob(ctx, p.Blob, p.SHA256, p.Size)
		if err != nil {
			return nil, fmt.Errorf("pack %d: %w", i+1, err)
		}
		var car bytes.Buffer
		if err := s.Cipher.Decrypt(ctx, &car, bytes.NewReader(blob)); err != nil {
			return nil, fmt.Errorf("pack %d: %w", i+1, err)
		}
		imp, err := snapshot.ReadCAR(ctx, &car, s.Repo.Blocks, snapshot.CAROptions{})
		if err != nil {
			return nil, fmt.Errorf("pack %d (in the manifest's order): %w", i+1, err)
		}
		if imp.Root != p.Head || imp.Blocks != p.Blocks {
			return nil, fmt.Errorf("%w: pack %d holds %d blocks under %s, the manifest says %d under %s", ErrBadPack, i+1, imp.Blocks, imp.Root.Short(), p.Blocks, p.Head.Short())
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
	return m, nil
}
