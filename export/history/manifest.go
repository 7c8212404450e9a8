package history

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
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
