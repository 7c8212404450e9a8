// Package redaction is the signed record of one redaction: the content of
// some values removed from a store on purpose, while every commit, tree,
// bundle hash and receipt that names them stays valid (docs/format.md §10).
// It holds the record's one encoding, its parsing and its verification;
// dag/repo keeps, applies and checks records.
package redaction

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

var (
	// ErrMalformed: bytes that are not a record in its canonical encoding,
	// or a record that breaks a rule of its own (a block that is no raw
	// block, a key that is no key, a list not sorted...).
	ErrMalformed = errors.New("redaction: malformed record")
	// ErrBadSignature: the signature does not verify by the key it names.
	ErrBadSignature = errors.New("redaction: the signature does not verify")
)

// Version is the "v" field of the records this package writes.
const Version = 1

// SigningContext prefixes the bytes a key signs, so a redaction's signature
// can never be taken for a signature over anything else (a receipt, a
// history manifest).
const SigningContext = "agentstate-redaction-v1\n"

// Bounds of one record.
const (
	MaxLen     = 4 << 20 // bytes of the encoding
	MaxReason  = 1024    // bytes of the reason
	MaxEntries = 1 << 16 // keys, values, blocks, commits: each at most
)

// Record is one redaction.
//
// Its one encoding is a single line of compact JSON with exactly these
// members, in this order, all always present:
//
//	{"v":1,"agent":…,"keys":[…],"values":[CID…],"blocks":[CID…],
//	 "commits":[CID…],"reason":…,"time":N,"prev":"<64 hex>"|"",
//	 "signer":"<64 hex>","sig":"<128 hex>"}
//
// Strings are encoded as Go's encoding/json encodes them; the four lists are
// sorted (keys bytewise, CIDs by their text) without duplicates. Values are
// the redacted values' CIDs as trees name them (a raw value or a chunked
// value's file node); Blocks are the raw blocks removed from the store (the
// raw values themselves, and the chunks no unredacted value uses): only raw
// blocks, never a commit, a tree node or a chunk node. Commits are the
// commits of Agent's history where a redacted value first appears at one of
// Keys. Prev is the ID of the agent's previous record in the store that
// wrote this one ("" for the first): records chain as operation-log entries
// do. The signature is ed25519 by Signer over SigningContext followed by the
// line with its final `,"sig":"…"` member removed (the line up to the comma
// before "sig", then "}"). A record's ID is the hex sha256 of its line.
type Record struct {
	Agent   string
	Keys    []string
	Values  []objects.CID
	Blocks  []objects.CID
	Commits []objects.CID
	Reason  string
	Time    int64
	Prev    string
	Signer  ed25519.PublicKey
	Sig     []byte
	line    []byte
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // strings always marshal
	return append(b, q...)
}

func appendCIDs(b []byte, cs []objects.CID) []byte {
	b = append(b, '[')
	for i, c := range cs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, c.String())
	}
	return append(b, ']')
}

// body is the encoding without the signature member, ending in "}".
func (r *Record) body() []byte {
	b := make([]byte, 0, 512+100*(len(r.Values)+len(r.Blocks)+len(r.Commits)))
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, `,"agent":`...)
	b = appendString(b, r.Agent)
	b = append(b, `,"keys":[`...)
	for i, k := range r.Keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
	}
	b = append(b, `],"values":`...)
	b = appendCIDs(b, r.Values)
	b = append(b, `,"blocks":`...)
	b = appendCIDs(b, r.Blocks)
	b = append(b, `,"commits":`...)
	b = appendCIDs(b, r.Commits)
	b = append(b, `,"reason":`...)
	b = appendString(b, r.Reason)
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, r.Time, 10)
	b = append(b, `,"prev":`...)
	b = appendString(b, r.Prev)
	b = append(b, `,"signer":`...)
	b = appendString(b, hex.EncodeToString(r.Signer))
	return append(b, '}')
}

func signed(body []byte) []byte { return append([]byte(SigningContext), body...) }

// Normalize sorts the record's lists and drops duplicates, as the encoding
// requires.
func (r *Record) Normalize() {
	slices.Sort(r.Keys)
	r.Keys = slices.Compact(r.Keys)
	for _, l := range []*[]objects.CID{&r.Values, &r.Blocks, &r.Commits} {
		slices.SortFunc(*l, func(a, b objects.CID) int { return strings.Compare(a.String(), b.String()) })
		*l = slices.Compact(*l)
	}
}

// Sign normalizes the record, checks it, and signs it with key.
func (r *Record) Sign(key ed25519.PrivateKey) error {
	r.Normalize()
	r.Signer = key.Public().(ed25519.PublicKey)
	if err := r.check(); err != nil {
		return err
	}
	body := r.body()
	r.Sig = ed25519.Sign(key, signed(body))
	r.line = withSig(body, r.Sig)
	return nil
}

func withSig(body, sig []byte) []byte {
	line := make([]byte, 0, len(body)+140)
	line = append(line, body[:len(body)-1]...)
	line = append(line, `,"sig":"`...)
	line = hex.AppendEncode(line, sig)
	return append(line, '"', '}')
}

// Line is the record's canonical encoding (no trailing newline).
func (r *Record) Line() []byte {
	if r.line == nil {
		r.line = withSig(r.body(), r.Sig)
	}
	return bytes.Clone(r.line)
}

// MarshalJSON returns the record's canonical line.
func (r *Record) MarshalJSON() ([]byte, error) { return r.Line(), nil }

// ID is the hex sha256 of the record's line.
func (r *Record) ID() string {
	sum := sha256.Sum256(r.Line())
	return hex.EncodeToString(sum[:])
}

// Verify checks the signature by the key the record names. Whether that
// key may redact the agent's values is the store's question (dag/repo).
func (r *Record) Verify() error {
	if len(r.Signer) != ed25519.PublicKeySize || len(r.Sig) != ed25519.SignatureSize ||
		!ed25519.Verify(r.Signer, signed(r.body()), r.Sig) {
		return fmt.Errorf("%w: redaction of %s's %s", ErrBadSignature, r.Agent, r.What())
	}
	return nil
}

// What names what the record redacts, for messages.
func (r *Record) What() string {
	switch {
	case len(r.Keys) == 1:
		return strconv.Quote(r.Keys[0])
	case len(r.Keys) > 1:
		return fmt.Sprintf("%q and %d more keys", r.Keys[0], len(r.Keys)-1)
	case len(r.Values) > 0:
		return "value " + r.Values[0].Short()
	}
	return "values"
}

// Redacts reports whether the record names v among its values.
func (r *Record) Redacts(v objects.CID) bool {
	_, ok := slices.BinarySearchFunc(r.Values, v, cmpCID)
	return ok
}

// Removes reports whether the record names the raw block c as removed.
func (r *Record) Removes(c objects.CID) bool {
	_, ok := slices.BinarySearchFunc(r.Blocks, c, cmpCID)
	return ok
}

func cmpCID(a, b objects.CID) int { return strings.Compare(a.String(), b.String()) }

func isHex(s string, n int) bool {
	if len(s) != 2*n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// check applies the record's own rules.
func (r *Record) check() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, a...))
	}
	if err := refs.ValidateAgent(r.Agent); err != nil {
		return bad("agent: %v", err)
	}
	if len(r.Values) == 0 {
		return bad("it names no value")
	}
	for _, n := range []int{len(r.Keys), len(r.Values), len(r.Blocks), len(r.Commits)} {
		if n > MaxEntries {
			return bad("a list of %d entries, more than %d", n, MaxEntries)
		}
	}
	for _, k := range r.Keys {
		if err := objects.ValidateKey(k); err != nil {
			return bad("key: %v", err)
		}
	}
	sorted := func(name string, l []objects.CID) error {
		for i := 1; i < len(l); i++ {
			if cmpCID(l[i-1], l[i]) >= 0 {
				return bad("%s are not sorted without duplicates", name)
			}
		}
		return nil
	}
	for i := 1; i < len(r.Keys); i++ {
		if r.Keys[i-1] >= r.Keys[i] {
			return bad("keys are not sorted without duplicates")
		}
	}
	for _, l := range []struct {
		name string
		l    []objects.CID
	}{{"values", r.Values}, {"blocks", r.Blocks}, {"commits", r.Commits}} {
		if err := sorted(l.name, l.l); err != nil {
			return err
		}
	}
	for _, v := range r.Values {
		if c := v.Codec(); c != objects.CodecRaw && c != objects.CodecDagCBOR {
			return bad("value %s is neither raw nor dag-cbor", v.Short())
		}
	}
	for _, b := range r.Blocks {
		if b.Codec() != objects.CodecRaw {
			// Commits, tree nodes and chunk nodes hold what proves the
			// history: only value content can be redacted.
			return bad("block %s is not a raw block: only value content can be redacted, never a commit, tree node or chunk node", b.Short())
		}
	}
	for _, c := range r.Commits {
		if c.Codec() != objects.CodecDagCBOR {
			return bad("commit %s is not a dag-cbor CID", c.Short())
		}
	}
	if len(r.Reason) == 0 || len(r.Reason) > MaxReason || !utf8.ValidString(r.Reason) {
		return bad("a reason of 1 to %d bytes of UTF-8 is required", MaxReason)
	}
	if r.Time < 0 {
		return bad("negative time")
	}
	if r.Prev != "" && !isHex(r.Prev, sha256.Size) {
		return bad("prev is not 64 lowercase hex digits")
	}
	return nil
}

type recordJSON struct {
	V       *int      `json:"v"`
	Agent   *string   `json:"agent"`
	Keys    *[]string `json:"keys"`
	Values  *[]string `json:"values"`
	Blocks  *[]string `json:"blocks"`
	Commits *[]string `json:"commits"`
	Reason  *string   `json:"reason"`
	Time    *int64    `json:"time"`
	Prev    *string   `json:"prev"`
	Signer  *string   `json:"signer"`
	Sig     *string   `json:"sig"`
}

// Parse decodes one record. It accepts only the canonical encoding (the
// line must re-encode to the same bytes) of a record that keeps its own
// rules; it does not check the signature (Verify).
func Parse(line []byte) (*Record, error) {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) == 0 || len(line) > MaxLen {
		return nil, fmt.Errorf("%w: %d bytes (want 1 to %d)", ErrMalformed, len(line), MaxLen)
	}
	var j recordJSON
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrMalformed)
	}
	if j.V == nil || j.Agent == nil || j.Keys == nil || j.Values == nil || j.Blocks == nil || j.Commits == nil ||
		j.Reason == nil || j.Time == nil || j.Prev == nil || j.Signer == nil || j.Sig == nil {
		return nil, fmt.Errorf("%w: a member is missing", ErrMalformed)
	}
	if *j.V != Version {
		return nil, fmt.Errorf("%w: version %d, this agentstate understands %d", ErrMalformed, *j.V, Version)
	}
	r := &Record{Agent: *j.Agent, Keys: *j.Keys, Reason: *j.Reason, Time: *j.Time, Prev: *j.Prev}
	if r.Keys == nil {
		r.Keys = []string{}
	}
	for _, l := range []struct {
		name string
		in   []string
		out  *[]objects.CID
	}{{"values", *j.Values, &r.Values}, {"blocks", *j.Blocks, &r.Blocks}, {"commits", *j.Commits, &r.Commits}} {
		if len(l.in) > MaxEntries {
			return nil, fmt.Errorf("%w: %d %s, more than %d", ErrMalformed, len(l.in), l.name, MaxEntries)
		}
		for _, s := range l.in {
			c, err := objects.ParseCID(s)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, l.name, err)
			}
			*l.out = append(*l.out, c)
		}
	}
	if !isHex(*j.Signer, ed25519.PublicKeySize) {
		return nil, fmt.Errorf("%w: signer is not 64 lowercase hex digits", ErrMalformed)
	}
	if !isHex(*j.Sig, ed25519.SignatureSize) {
		return nil, fmt.Errorf("%w: sig is not 128 lowercase hex digits", ErrMalformed)
	}
	r.Signer, _ = hex.DecodeString(*j.Signer)
	r.Sig, _ = hex.DecodeString(*j.Sig)
	if err := r.check(); err != nil {
		return nil, err
	}
	if !bytes.Equal(withSig(r.body(), r.Sig), line) {
		return nil, fmt.Errorf("%w: not the canonical encoding", ErrMalformed)
	}
	r.line = bytes.Clone(line)
	return r, nil
}
