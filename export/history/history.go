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
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/internal/atomicfile"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/tape"
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
	// ErrPackTooLarge: a push with a commit whose own pack would exceed
	// Shipper.MaxPack (a history of smaller commits is split).
	ErrPackTooLarge = errors.New("history: pack too large")
	// ErrNoHistory: no manifest is published for the agent.
	ErrNoHistory = errors.New("history: no history published")
	// ErrStale: a manifest older than the newest this store has seen for
	// the agent (a replayed one), or than RestoreOptions.MinSeq.
	ErrStale = errors.New("history: manifest older than one this store has seen")
)

// Pack is one pack blob: a CAR, encrypted, whose root is Head.
type Pack struct {
	Blob   walrus.BlobID `json:"blob"`
	SHA256 string        `json:"sha256"` // hex sha256 of the blob's bytes
	Size   int64         `json:"size"`   // the blob's bytes
	Head   objects.CID   `json:"head"`   // the CAR's root
	Blocks int           `json:"blocks"` // blocks in the CAR
	// Cuts are the parent links of this pack's commits that a forget cut
	// in the pushing store: the parents are in no pack, and a reader
	// records the links as cut instead of requiring the parents.
	Cuts []repo.CutLink `json:"cuts,omitempty"`
	// Receipts, when set, is a blob of the receipt lines new with this
	// pack (NDJSON, sealed as the packs are).
	Receipts *ReceiptBlob `json:"receipts,omitempty"`
}

// ReceiptBlob is a blob of receipt lines.
type ReceiptBlob struct {
	Blob   walrus.BlobID `json:"blob"`
	SHA256 string        `json:"sha256"` // hex sha256 of the blob's bytes
	Size   int64         `json:"size"`   // the blob's bytes
	Lines  int           `json:"lines"`  // receipt lines in it
}

// TapeState says which receipt lines the packs carry: the pushing store's
// first Lines tape lines, whose NDJSON has sha256 SHA256. The next push from
// a store whose tape begins with those lines ships only the lines after them.
type TapeState struct {
	Lines  int    `json:"lines"`
	SHA256 string `json:"sha256"`
}

// Manifest is an agent's history on a blob store.
type Manifest struct {
	V          int         `json:"v"`
	Agent      string      `json:"agent"`
	Head       objects.CID `json:"head"`
	Tree       objects.CID `json:"tree"`
	BundleHash string      `json:"bundleHash"`
	Packs      []Pack      `json:"packs"`
	Receipts   *TapeState  `json:"receipts,omitempty"`
	// Operators are the keys (hex ed25519) the pushing store trusts for
	// the agent's receipts; a reader records them as learned with the
	// agent's receipts (they verify them and sign nothing), as a clone
	// records the sender's.
	Operators []string `json:"operators,omitempty"`
	Time      int64    `json:"time"`
	// Seq numbers an agent's manifests: 1 for the first push, the
	// previous manifest's plus one after; 0 (left out) in a manifest from
	// before sequence numbers. Prev is the sha256 (hex) of the previous
	// manifest's bytes, left out in the first.
	Seq      uint64 `json:"seq,omitempty"`
	Prev     string `json:"prev,omitempty"`
	Operator string `json:"operator"`      // hex ed25519 public key of the signer
	Sig      string `json:"sig,omitempty"` // hex signature over SigningContext + the manifest without sig
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
	blob := func(id walrus.BlobID, sum string, size int64) bool {
		_, err := walrus.ParseBlobID(string(id))
		ok := err == nil && !seen[id] && size > 0 && isHex(sum, 64)
		seen[id] = true
		return ok
	}
	for i, p := range m.Packs {
		if !blob(p.Blob, p.SHA256, p.Size) || p.Head.IsZero() || p.Blocks < 0 {
			return nil, fmt.Errorf("%w: pack %d is malformed or repeated", ErrBadManifest, i+1)
		}
		if r := p.Receipts; r != nil && (!blob(r.Blob, r.SHA256, r.Size) || r.Lines <= 0) {
			return nil, fmt.Errorf("%w: the receipts of pack %d are malformed or repeat a blob", ErrBadManifest, i+1)
		}
		for _, l := range p.Cuts {
			if l.Commit.IsZero() || len(l.Parents) == 0 {
				return nil, fmt.Errorf("%w: pack %d: a malformed cut", ErrBadManifest, i+1)
			}
		}
	}
	if m.Prev != "" && (m.Seq == 0 || !isHex(m.Prev, 64)) {
		return nil, fmt.Errorf("%w: seq %d with prev %.70q (prev is 64 hex digits, in a numbered manifest)", ErrBadManifest, m.Seq, m.Prev)
	}
	if r := m.Receipts; r != nil && (r.Lines <= 0 || !isHex(r.SHA256, 64)) {
		return nil, fmt.Errorf("%w: malformed receipts state", ErrBadManifest)
	}
	for _, k := range m.Operators {
		if !isHex(k, 2*ed25519.PublicKeySize) {
			return nil, fmt.Errorf("%w: operator key %q is not 64 hex digits", ErrBadManifest, k)
		}
	}
	return &m, nil
}

// isHex: s is n lowercase hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
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

// Shipper pushes and restores histories.
type Shipper struct {
	Repo    *repo.Repo
	Cipher  envelope.Cipher
	Blobs   walrus.Store
	Pointer Pointer
	Options walrus.StoreOptions
	// MaxPack bounds what one pack's CAR counts against a reader's memory
	// (CARStats.Staged: its bytes and a per-block overhead; default
	// snapshot.DefaultCARMaxStaged, what a reader holds while it checks a
	// pack): a push whose new history is larger goes out in
	// several packs, and one with a single commit that alone is larger is
	// refused before anything is uploaded, rather than publishing a
	// history no reader takes.
	MaxPack int64
	// RecordKeys: a push names in the manifest the keys the store trusts
	// to verify the agent's receipts; a restore records the manifest's
	// signer as trusted for the agent (it may sign the agent's next
	// history) and those keys as learned with the agent's receipts (they
	// verify them and sign nothing; dag/repo/trust.go). False leaves keys
	// out of both.
	RecordKeys bool
}

// getBlob reads a blob, checking its sha256 and size, at most size bytes.
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

// sealedBound is the largest sealed blob whose plaintext can be n bytes
// (the envelope's headers and tags, generously).
func sealedBound(n int64) int64 { return n + n/16 + 1<<20 }

// getSealed reads a sealed blob (getBlob) and decrypts it.
func (s *Shipper) getSealed(ctx context.Context, id walrus.BlobID, sum string, size int64) ([]byte, error) {
	blob, err := s.getBlob(ctx, id, sum, size)
	if err != nil {
		return nil, err
	}
	var plain bytes.Buffer
	if err := s.Cipher.Decrypt(ctx, &plain, bytes.NewReader(blob)); err != nil {
		return nil, err
	}
	return plain.Bytes(), nil
}

func (s *Shipper) putBlob(ctx context.Context, data []byte) (walrus.BlobID, string, error) {
	st, err := s.Blobs.Put(ctx, bytes.NewReader(data), int64(len(data)), s.Options)
	if err != nil {
		return "", "", err
	}
	sum := sha256.Sum256(data)
	return st.BlobID, hex.EncodeToString(sum[:]), nil
}

// putSealed seals plain with the cipher and stores it.
func (s *Shipper) putSealed(ctx context.Context, plain []byte) (walrus.BlobID, string, int64, error) {
	var sealed bytes.Buffer
	if err := s.Cipher.Encrypt(ctx, &sealed, bytes.NewReader(plain), sha256.Sum256(plain)); err != nil {
		return "", "", 0, err
	}
	id, sum, err := s.putBlob(ctx, sealed.Bytes())
	return id, sum, int64(sealed.Len()), err
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

// ndjson joins tape lines, each with its newline.
func ndjson(lines [][]byte) []byte {
	var b []byte
	for _, l := range lines {
		b = append(append(b, l...), '\n')
	}
	return b
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Pushed is what a push left published.
type Pushed struct {
	*Manifest
	Ref   Ref  // the pointer's value: the manifest's blob, sha256 and size
	Added bool // a pack was added (false: nothing was new; the published manifest)
	// PacksAdded is how many: the last ones of Packs (more than one when
	// the new history did not fit in one pack).
	PacksAdded int
}

// Push ships the history of agent's HEAD: one pack of the blocks new since
// the packs of the published manifest (if its signer is key), or several
// when one would exceed MaxPack, with the receipt lines new since (with the
// last pack), then a new manifest naming every pack in order, signed with
// key, then the pointer. With nothing new it returns the published
// manifest and ships nothing.
func (s *Shipper) Push(ctx context.Context, agent string, key ed25519.PrivateKey) (*Pushed, error) {
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
	var tape [][]byte
	for l, err := range s.Repo.Tape.Lines(ctx, agent) {
		if err != nil {
			return nil, err
		}
		tape = append(tape, l)
	}
	if len(tape) > 0 {
		m.Receipts = &TapeState{Lines: len(tape), SHA256: sha256Hex(ndjson(tape))}
	}
	if s.RecordKeys {
		keys, err := s.Repo.TrustedKeys(ctx, agent, repo.KeyVerifiesReceipts)
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			m.Operators = append(m.Operators, repo.KeyHex(k))
		}
		slices.Sort(m.Operators)
	}
	lo, _, err := s.Repo.LogOptions(ctx, agent)
	if err != nil {
		return nil, err
	}
	prev, prevRef, err := s.Published(ctx, agent, []ed25519.PublicKey{key.Public().(ed25519.PublicKey)})
	switch {
	case errors.Is(err, ErrNoHistory):
	case err != nil:
		return nil, fmt.Errorf("the published history of %s: %w (push starts a new one only when there is none)", agent, err)
	default:
		// Never build on a manifest older than one this store saw: the
		// pointer was rolled back.
		if err := s.checkFresh(ctx, agent, prev, prevRef, 0); err != nil {
			return nil, fmt.Errorf("the published history of %s: %w", agent, err)
		}
		if prev.Head == h.Commit && reflect.DeepEqual(prev.Receipts, m.Receipts) && slices.Equal(prev.Operators, m.Operators) {
			return &Pushed{Manifest: prev, Ref: prevRef}, nil // nothing new
		}
		m.Packs = append(m.Packs, prev.Packs...)
		m.Seq, m.Prev = prev.Seq+1, prevRef.SHA256
	}
	if prev == nil {
		m.Seq = 1
		// A store that saw a history of this agent does not start a new
		// one from 1 when the pointer is gone: it would be refused as older.
		if seen, ok, err := s.Seen(ctx, agent); err != nil {
			return nil, err
		} else if ok {
			m.Seq = seen.Seq + 1
		}
	}
	// Receipt lines new since the published manifest: those after its
	// lines when this tape begins with them, else the whole tape (a reader
	// skips lines it already has).
	newLines := tape
	if prev != nil && prev.Receipts != nil && prev.Receipts.Lines <= len(tape) && sha256Hex(ndjson(tape[:prev.Receipts.Lines])) == prev.Receipts.SHA256 {
		newLines = tape[prev.Receipts.Lines:]
	}
	var heads []objects.CID
	for _, p := range m.Packs {
		heads = append(heads, p.Head)
	}
	base := &packBase{commits: map[objects.CID]bool{}, blocks: dag.Reach{}}
	if err := s.extendBase(ctx, base, heads, lo); err != nil {
		return nil, err
	}
	maxPack := s.MaxPack
	if maxPack <= 0 {
		maxPack = snapshot.DefaultCARMaxStaged
	}
	// The new history goes in one pack, or, when that would be larger than
	// a reader takes, in several (splitPacks).
	plan := []objects.CID{h.Commit}
	var car bytes.Buffer
	pack, st, err := s.writePack(ctx, &car, h.Commit, base, lo)
	if err != nil {
		return nil, err
	}
	if st.Staged() > maxPack {
		car = bytes.Buffer{}
		if plan, err = s.splitPacks(ctx, h.Commit, base, lo, maxPack); err != nil {
			return nil, err
		}
	}
	// A pointer that can check the record update first (ENS: the signer
	// may set the name's record) does so before anything is uploaded.
	if pf, ok := s.Pointer.(snapshot.Preflighter); ok {
		if err := pf.Preflight(ctx, agent); err != nil {
			return nil, fmt.Errorf("%w (nothing was uploaded)", err)
		}
	}
	for i, head := range plan {
		if len(plan) > 1 {
			car.Reset()
			if pack, st, err = s.writePack(ctx, &car, head, base, lo); err != nil {
				return nil, err
			}
			if st.Staged() > maxPack { // splitPacks measured it
				return nil, fmt.Errorf("history: pack %d of %d came to %d bytes to stage, over %d", i+1, len(plan), st.Staged(), maxPack)
			}
		}
		if pack.Blob, pack.SHA256, pack.Size, err = s.putSealed(ctx, car.Bytes()); err != nil {
			return nil, fmt.Errorf("storing the pack: %w", err)
		}
		if i == len(plan)-1 && len(newLines) > 0 {
			rb := &ReceiptBlob{Lines: len(newLines)}
			if rb.Blob, rb.SHA256, rb.Size, err = s.putSealed(ctx, ndjson(newLines)); err != nil {
				return nil, fmt.Errorf("storing the receipts: %w", err)
			}
			pack.Receipts = rb
		}
		m.Packs = append(m.Packs, pack)
		if i < len(plan)-1 {
			if err := s.extendBase(ctx, base, []objects.CID{head}, lo); err != nil {
				return nil, err
			}
		}
	}
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
	ref := Ref{Blob: mid, SHA256: msum, Size: int64(len(body))}
	if err := s.Pointer.WriteHistory(ctx, agent, ref); err != nil {
		return nil, fmt.Errorf("publishing the manifest: %w", err)
	}
	if err := s.see(ctx, agent, m, ref); err != nil {
		return nil, fmt.Errorf("history: manifest seq %d published; recording it: %w", m.Seq, err)
	}
	return &Pushed{Manifest: m, Ref: ref, Added: true, PacksAdded: len(plan)}, nil
}

// packBase is what the packs before a new one carry, found without walking
// the whole history's trees: the commits their heads reach (the commit
// graph only), where the new pack's walk stops, and the blocks of the
// heads' own trees, which it leaves out. (A block of an older tree that
// comes back is sent again: a reader stores it once.)
type packBase struct {
	commits map[objects.CID]bool
	blocks  dag.Reach
}

func (b *packBase) clone() *packBase {
	return &packBase{commits: maps.Clone(b.commits), blocks: maps.Clone(b.blocks)}
}

// extendBase adds the packs with these heads to b: the commits they reach,
// following the parent links the agent's history keeps (lo: not across its
// cuts, and not to a missing parent behind any checkpoint), and the blocks
// of their trees.
func (s *Shipper) extendBase(ctx context.Context, b *packBase, heads []objects.CID, lo dag.LogOptions) error {
	if len(heads) == 0 {
		return nil
	}
	stack := slices.Clone(heads)
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if b.commits[c] {
			continue
		}
		b.commits[c] = true
		cm, err := s.Repo.Commit(ctx, c)
		if err != nil {
			return err
		}
		for _, p := range cm.Parents {
			if lo.Cut != nil && lo.Cut(c, p) {
				continue
			}
			if lo.Gone != nil && lo.Gone(c, p) {
				if ok, err := s.Repo.Blocks.Has(ctx, p); err != nil {
					return err
				} else if !ok {
					continue
				}
			}
			stack = append(stack, p)
		}
	}
	all := func(objects.CID, objects.CID) bool { return true } // the heads and their trees
	trees, _, err := dag.Walk(ctx, s.Repo.Blocks, heads, dag.WalkOptions{Cut: all})
	if err != nil {
		return err
	}
	maps.Copy(b.blocks, trees)
	return nil
}

// writePack writes to w the pack ending at head that follows the packs of
// b: the CAR of what head reaches and b does not carry, with the parent
// links lo cuts named in the pack.
func (s *Shipper) writePack(ctx context.Context, w io.Writer, head objects.CID, b *packBase, lo dag.LogOptions) (Pack, snapshot.CARStats, error) {
	pack := Pack{Head: head}
	cut := func(child, parent objects.CID) bool {
		if lo.Cut != nil && lo.Cut(child, parent) {
			pack.Cuts = append(pack.Cuts, repo.CutLink{Commit: child, Parents: []objects.CID{parent}})
			return true
		}
		return b.commits[parent]
	}
	st, err := snapshot.WriteCARSince(ctx, w, s.Repo.Blocks, head, cut, func(c objects.CID) bool { _, ok := b.blocks[c]; return ok })
	pack.Blocks = st.Blocks
	return pack, st, err
}

// sizeText is n bytes in MiB, or KiB below one MiB.
func sizeText(n int64) string {
	if n < 1<<20 {
		return strconv.FormatInt((n+1023)>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n>>20, 10) + " MiB"
}

// splitPacks returns the heads of the packs that carry head's history past
// b when one pack would hold more than max bytes: commits of head's
// first-parent line, oldest first, each pack ending at the newest commit
// whose pack still fits (a pack grows along the line, so a binary search
// finds it; sizes are counted, not held). A commit that alone adds more
// than max is refused, and nothing is uploaded.
func (s *Shipper) splitPacks(ctx context.Context, head objects.CID, b *packBase, lo dag.LogOptions, max int64) ([]objects.CID, error) {
	var line []objects.CID // newest first, back to the packs before
	for c := head; ; {
		line = append(line, c)
		cm, err := s.Repo.Commit(ctx, c)
		if err != nil {
			return nil, err
		}
		if len(cm.Parents) == 0 {
			break
		}
		p := cm.Parents[0]
		if b.commits[p] || lo.Cut != nil && lo.Cut(c, p) {
			break
		}
		if lo.Gone != nil && lo.Gone(c, p) {
			if ok, err := s.Repo.Blocks.Has(ctx, p); err != nil {
				return nil, err
			} else if !ok {
				break
			}
		}
		c = p
	}
	slices.Reverse(line)
	b = b.clone()
	var plan []objects.CID
	for from := 0; from < len(line); {
		size := func(i int) (int64, error) {
			_, st, err := s.writePack(ctx, io.Discard, line[i], b, lo)
			return st.Staged(), err
		}
		best := -1
		for l, h := from, len(line)-1; l <= h; {
			mid := l + (h-l)/2
			n, err := size(mid)
			if err != nil {
				return nil, err
			}
			if n <= max {
				best, l = mid, mid+1
			} else {
				h = mid - 1
			}
		}
		if best < 0 {
			n, err := size(from)
			if err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("%w: commit %s alone adds %s, more than a reader takes in one pack (%s); nothing was uploaded", ErrPackTooLarge, line[from].Short(), sizeText(n), sizeText(max))
		}
		plan = append(plan, line[best])
		if err := s.extendBase(ctx, b, []objects.CID{line[best]}, lo); err != nil {
			return nil, err
		}
		from = best + 1
	}
	return plan, nil
}

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
			})
			if err != nil {
				return nil, fmt.Errorf("pack %d (in the manifest's order): %w", i+1, err)
			}
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
	return f, nil
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

// SeenPrefix prefixes the store's record of the newest manifest it has
// seen of each agent ("history/" + agent: JSON of Seen), written by a push
// and a restore; an older manifest is refused (ErrStale).
const SeenPrefix = repo.HistorySeenPrefix

// Seen is the newest manifest of an agent a store has pushed or restored.
type Seen = repo.HistorySeen

// Seen returns the newest manifest of agent the store has seen.
func (s *Shipper) Seen(ctx context.Context, agent string) (Seen, bool, error) {
	var seen Seen
	v, ok, err := s.Repo.Storage.GetMeta(ctx, SeenPrefix+agent)
	if err != nil || !ok {
		return seen, false, err
	}
	if err := json.Unmarshal(v, &seen); err != nil {
		return seen, false, fmt.Errorf("history: the record of %s's newest manifest is unreadable: %w", agent, err)
	}
	return seen, true, nil
}

// checkFresh refuses m (published as ref) when it is older than the newest
// manifest of agent the store has seen, another manifest with the same
// sequence number, or numbered below minSeq.
func (s *Shipper) checkFresh(ctx context.Context, agent string, m *Manifest, ref Ref, minSeq uint64) error {
	if m.Seq < minSeq {
		return fmt.Errorf("%w: manifest %s is seq %d, below the %d asked for", ErrStale, ref.Blob, m.Seq, minSeq)
	}
	seen, ok, err := s.Seen(ctx, agent)
	if err != nil || !ok {
		return err
	}
	switch {
	case m.Seq < seen.Seq:
		return fmt.Errorf("%w: manifest %s is seq %d of %s, this store has seen seq %d (%s, %s): the pointer names an older history",
			ErrStale, ref.Blob, m.Seq, time.Unix(m.Time, 0).UTC().Format(time.RFC3339), seen.Seq, seen.Blob, time.Unix(seen.Time, 0).UTC().Format(time.RFC3339))
	case m.Seq == seen.Seq && m.Seq > 0 && ref.SHA256 != seen.SHA256,
		m.Seq == seen.Seq+1 && seen.Seq > 0 && m.Prev != "" && m.Prev != seen.SHA256:
		return fmt.Errorf("%w: manifest %s is seq %d, but does not follow seq %d (%s) this store has seen: the history forked", ErrStale, ref.Blob, m.Seq, seen.Seq, seen.Blob)
	}
	return nil
}

// see records m as the newest manifest of agent the store has seen, unless
// it has seen a newer one.
func (s *Shipper) see(ctx context.Context, agent string, m *Manifest, ref Ref) error {
	if seen, ok, err := s.Seen(ctx, agent); err != nil {
		return err
	} else if ok && seen.Seq > m.Seq {
		return nil
	}
	v, err := json.Marshal(Seen{Seq: m.Seq, SHA256: ref.SHA256, Blob: string(ref.Blob), Time: m.Time})
	if err != nil {
		return err
	}
	return s.Repo.Storage.SetMeta(ctx, SeenPrefix+agent, v)
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
