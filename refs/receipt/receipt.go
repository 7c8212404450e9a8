// Package receipt is the signed statement of one task landing: its one
// encoding (a line on an agent's receipt tape, refs/tape), its parsing and
// its verification. Reading or checking a receipt needs nothing else: not
// the runtime that writes them (runtime.Receipt is this type).
package receipt

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/agentstate/agentstate/objects"
)

var (
	// ErrMalformed: a line that is not a receipt in its canonical encoding,
	// or a receipt whose stateDeltaHash is not what its bundle hashes give.
	ErrMalformed = errors.New("receipt: malformed")
	// ErrBadSignature: the signature does not verify by the key given, or
	// the operator is not a trusted key.
	ErrBadSignature = errors.New("receipt: the signature does not verify")
)

// Version is the "v" field of the receipts this package writes.
const Version = 1

// SigningContext prefixes the bytes an operator signs, so a receipt
// signature can never be mistaken for a signature over anything else.
const SigningContext = "agentstate-receipt-v1\n"

// Receipt is the signed statement of one task landing.
//
// Its one encoding is a single line of compact JSON with exactly these
// members, in this order, all always present (empty strings for absent
// values):
//
//	{"v":1,"agent":…,"task":…,"attempt":…,"model":…,"adapter":…,
//	 "parent":CID,"from":CID,"commit":CID,"taskCommit":CID,"writes":N,
//	 "bundleBefore":"0x…","bundleAfter":"0x…","stateDeltaHash":"0x…",
//	 "time":N,"operator":"<64 hex>","sig":"<128 hex>"}
//
// Strings are encoded as Go's encoding/json encodes them. The signature is
// ed25519 by the operator key over SigningContext followed by the line with
// its final `,"sig":"…"` member removed (that is, the line up to the comma
// before "sig", then "}").
type Receipt struct {
	Agent   string
	Task    string
	Attempt string
	Model   string
	Adapter string
	// Parent is the commit the task started at (zero for an agent that had
	// no state yet).
	Parent objects.CID
	// From is the commit HEAD moved from when the task landed. It equals
	// Parent unless other tasks landed in between, in which case the task
	// landed as a merge.
	From objects.CID
	// Commit is the commit HEAD moved to.
	Commit objects.CID
	// TaskCommit is the task's own last commit; it equals Commit unless the
	// task landed as a merge (then Commit is the merge, with parents From and
	// TaskCommit).
	TaskCommit objects.CID
	// Writes counts the commits the task wrote itself.
	Writes int
	// BundleBefore and BundleAfter are the bundle hashes of From and Commit
	// (the empty brain's hash when From is zero).
	BundleBefore objects.BundleHash
	BundleAfter  objects.BundleHash
	// StateDeltaHash is keccak256(BundleBefore || BundleAfter).
	StateDeltaHash objects.BundleHash
	// Time is when the task landed, in seconds since the Unix epoch
	// (SOURCE_DATE_EPOCH when set).
	Time int64
	// Operator is the public key that signed the receipt.
	Operator ed25519.PublicKey
	// Signature is the ed25519 signature (see the type's documentation).
	Signature []byte
	// line is the exact encoding, kept when parsed or signed.
	line []byte
}

// Merged reports whether the task landed as a merge commit.
func (r *Receipt) Merged() bool { return r.Commit != r.TaskCommit }

func appendJSONString(b []byte, s string) []byte {
	// Printable ASCII that encoding/json writes as it is (no quote,
	// backslash or HTML character, which it escapes) is quoted directly:
	// the common case, and every CID and hash; anything else is what
	// encoding/json writes.
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // strings always marshal
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func cidText(c objects.CID) string { return c.String() }

// body returns the canonical encoding without the signature member, ending in "}".
func (r *Receipt) body() []byte {
	b := make([]byte, 0, 768)
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, Version, 10)
	field := func(name, v string) {
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		b = appendJSONString(b, v)
	}
	field("agent", r.Agent)
	field("task", r.Task)
	field("attempt", r.Attempt)
	field("model", r.Model)
	field("adapter", r.Adapter)
	field("parent", cidText(r.Parent))
	field("from", cidText(r.From))
	field("commit", cidText(r.Commit))
	field("taskCommit", cidText(r.TaskCommit))
	b = append(b, `,"writes":`...)
	b = strconv.AppendInt(b, int64(r.Writes), 10)
	field("bundleBefore", r.BundleBefore.String())
	field("bundleAfter", r.BundleAfter.String())
	field("stateDeltaHash", r.StateDeltaHash.String())
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, r.Time, 10)
	field("operator", hex.EncodeToString(r.Operator))
	return append(b, '}')
}

// signedMessage returns SigningContext || body.
func signedMessage(body []byte) []byte {
	return append([]byte(SigningContext), body...)
}

// Sign fills Operator and Signature, signing with key, and keeps the
// encoded line.
func (r *Receipt) Sign(key ed25519.PrivateKey) {
	r.Operator = key.Public().(ed25519.PublicKey)
	body := r.body()
	r.Signature = ed25519.Sign(key, signedMessage(body))
	r.line = withSig(body, r.Signature)
}

func withSig(body, sig []byte) []byte {
	line := make([]byte, 0, len(body)+140)
	line = append(line, body[:len(body)-1]...)
	line = append(line, `,"sig":"`...)
	line = hex.AppendEncode(line, sig)
	return append(line, '"', '}')
}

// MarshalJSON returns the receipt's canonical line.
func (r *Receipt) MarshalJSON() ([]byte, error) { return r.Line(), nil }

// Line returns the receipt's canonical encoding: one line of JSON, without
// a trailing newline. It is the exact form stored on the receipt tape.
func (r *Receipt) Line() []byte {
	if r.line != nil {
		return bytes.Clone(r.line)
	}
	return withSig(r.body(), r.Signature)
}

// Verify checks the receipt's signature against pub (the operator key the
// verifier trusts) and its internal consistency: Operator must be pub and
// StateDeltaHash must be keccak256(BundleBefore || BundleAfter).
func (r *Receipt) Verify(pub ed25519.PublicKey) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: the verifying key is %d bytes, want %d", ErrBadSignature, len(pub), ed25519.PublicKeySize)
	}
	if !bytes.Equal(r.Operator, pub) {
		return fmt.Errorf("%w: receipt of task %q is signed by operator %x, not by the trusted key %x", ErrBadSignature, r.Task, []byte(r.Operator), []byte(pub))
	}
	if len(r.Signature) != ed25519.SignatureSize || !ed25519.Verify(pub, signedMessage(r.body()), r.Signature) {
		return fmt.Errorf("%w: receipt of task %q of agent %q (commit %s)", ErrBadSignature, r.Task, r.Agent, short(r.Commit))
	}
	if want := objects.StateDeltaHash(r.BundleBefore, r.BundleAfter); want != r.StateDeltaHash {
		return fmt.Errorf("%w: receipt of task %q: stateDeltaHash %s is not keccak256(before || after) = %s", ErrMalformed, r.Task, r.StateDeltaHash, want)
	}
	return nil
}

// VerifyAny verifies the receipt against whichever of keys signed it.
func (r *Receipt) VerifyAny(keys []ed25519.PublicKey) error {
	for _, k := range keys {
		if bytes.Equal(k, r.Operator) {
			return r.Verify(k)
		}
	}
	if len(keys) == 0 {
		return fmt.Errorf("%w: no trusted operator key to verify against", ErrBadSignature)
	}
	return fmt.Errorf("%w: receipt of task %q is signed by operator %x, which is not a trusted key", ErrBadSignature, r.Task, []byte(r.Operator))
}

// receiptJSON mirrors the encoding for strict decoding.
type receiptJSON struct {
	V              *int    `json:"v"`
	Agent          *string `json:"agent"`
	Task           *string `json:"task"`
	Attempt        *string `json:"attempt"`
	Model          *string `json:"model"`
	Adapter        *string `json:"adapter"`
	Parent         *string `json:"parent"`
	From           *string `json:"from"`
	Commit         *string `json:"commit"`
	TaskCommit     *string `json:"taskCommit"`
	Writes         *int    `json:"writes"`
	BundleBefore   *string `json:"bundleBefore"`
	BundleAfter    *string `json:"bundleAfter"`
	StateDeltaHash *string `json:"stateDeltaHash"`
	Time           *int64  `json:"time"`
	Operator       *string `json:"operator"`
	Sig            *string `json:"sig"`
}

// MaxLen bounds one receipt line.
const MaxLen = 64 << 10

// Parse decodes one receipt line. It accepts only the canonical
// encoding (the line must re-encode to exactly the same bytes), so the
// fields returned are exactly what was signed. It does not check the
// signature; call Verify.
func Parse(line []byte) (*Receipt, error) {
	line = bytes.TrimRight(line, "\r\n")
	if len(line) == 0 {
		return nil, fmt.Errorf("%w: empty line", ErrMalformed)
	}
	if len(line) > MaxLen {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrMalformed, len(line), MaxLen)
	}
	j, ok := scanCanonical(line)
	if !ok {
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&j); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrMalformed)
		}
	}
	missing := []string{}
	req := map[string]bool{"v": j.V != nil, "agent": j.Agent != nil, "task": j.Task != nil, "attempt": j.Attempt != nil,
		"model": j.Model != nil, "adapter": j.Adapter != nil, "parent": j.Parent != nil, "from": j.From != nil,
		"commit": j.Commit != nil, "taskCommit": j.TaskCommit != nil, "writes": j.Writes != nil,
		"bundleBefore": j.BundleBefore != nil, "bundleAfter": j.BundleAfter != nil, "stateDeltaHash": j.StateDeltaHash != nil,
		"time": j.Time != nil, "operator": j.Operator != nil, "sig": j.Sig != nil}
	for k, ok := range req {
		if !ok {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: missing member(s) %s", ErrMalformed, strings.Join(sorted(missing), ", "))
	}
	if *j.V != Version {
		return nil, fmt.Errorf("%w: version %d, this agentstate understands %d", ErrMalformed, *j.V, Version)
	}
	r := &Receipt{Agent: *j.Agent, Task: *j.Task, Attempt: *j.Attempt, Model: *j.Model, Adapter: *j.Adapter, Writes: *j.Writes, Time: *j.Time}
	var err error
	for _, c := range []struct {
		name string
		s    string
		dst  *objects.CID
	}{{"parent", *j.Parent, &r.Parent}, {"from", *j.From, &r.From}, {"commit", *j.Commit, &r.Commit}, {"taskCommit", *j.TaskCommit, &r.TaskCommit}} {
		if c.s == "" {
			continue
		}
		if *c.dst, err = objects.ParseCID(c.s); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, c.name, err)
		}
	}
	for _, h := range []struct {
		name string
		s    string
		dst  *objects.BundleHash
	}{{"bundleBefore", *j.BundleBefore, &r.BundleBefore}, {"bundleAfter", *j.BundleAfter, &r.BundleAfter}, {"stateDeltaHash", *j.StateDeltaHash, &r.StateDeltaHash}} {
		if *h.dst, err = objects.ParseBundleHash(h.s); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrMalformed, h.name, err)
		}
	}
	if r.Operator, err = hex.DecodeString(*j.Operator); err != nil || len(r.Operator) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: operator: want %d bytes as lowercase hex", ErrMalformed, ed25519.PublicKeySize)
	}
	if r.Signature, err = hex.DecodeString(*j.Sig); err != nil || len(r.Signature) != ed25519.SignatureSize {
		return nil, fmt.Errorf("%w: sig: want %d bytes as lowercase hex", ErrMalformed, ed25519.SignatureSize)
	}
	enc := withSig(r.body(), r.Signature)
	if !bytes.Equal(enc, line) {
		return nil, fmt.Errorf("%w: not in canonical form (members out of order, extra spaces, upper-case hex or a different string escaping)", ErrMalformed)
	}
	r.line = bytes.Clone(line)
	return r, nil
}

// scanCanonical reads a line laid out as the canonical encoding is (every
// member in order, strings with no escape): the common case, read without
// reflection. It only finds the members' text: Parse re-encodes what it
// reads and refuses a line that is not byte for byte its encoding, so a
// line this reads wrongly is refused, never misread. ok is false for any
// other line (then encoding/json reads it, and says what is wrong).
func scanCanonical(line []byte) (j receiptJSON, ok bool) {
	p := line
	lit := func(s string) bool {
		if !bytes.HasPrefix(p, []byte(s)) {
			return false
		}
		p = p[len(s):]
		return true
	}
	str := func(name string, dst **string) bool {
		if !lit(`"` + name + `":"`) {
			return false
		}
		i := bytes.IndexByte(p, '"')
		if i < 0 || bytes.IndexByte(p[:i], '\\') >= 0 {
			return false
		}
		s := string(p[:i])
		*dst, p = &s, p[i+1:]
		return lit(",") || len(p) > 0 && p[0] == '}'
	}
	num := func(name string, end byte) (int64, bool) {
		if !lit(`"` + name + `":`) {
			return 0, false
		}
		i := bytes.IndexByte(p, end)
		if i <= 0 {
			return 0, false
		}
		n, err := strconv.ParseInt(string(p[:i]), 10, 64)
		p = p[i+1:]
		return n, err == nil
	}
	if !lit(`{"v":1,`) {
		return receiptJSON{}, false
	}
	v := 1
	j.V = &v
	for _, m := range []struct {
		name string
		dst  **string
	}{{"agent", &j.Agent}, {"task", &j.Task}, {"attempt", &j.Attempt}, {"model", &j.Model}, {"adapter", &j.Adapter},
		{"parent", &j.Parent}, {"from", &j.From}, {"commit", &j.Commit}, {"taskCommit", &j.TaskCommit}} {
		if !str(m.name, m.dst) {
			return receiptJSON{}, false
		}
	}
	w, ok := num("writes", ',')
	if !ok || w != int64(int(w)) {
		return receiptJSON{}, false
	}
	writes := int(w)
	j.Writes = &writes
	for _, m := range []struct {
		name string
		dst  **string
	}{{"bundleBefore", &j.BundleBefore}, {"bundleAfter", &j.BundleAfter}, {"stateDeltaHash", &j.StateDeltaHash}} {
		if !str(m.name, m.dst) {
			return receiptJSON{}, false
		}
	}
	t, ok := num("time", ',')
	if !ok {
		return receiptJSON{}, false
	}
	j.Time = &t
	if !str("operator", &j.Operator) || !str("sig", &j.Sig) || string(p) != "}" {
		return receiptJSON{}, false
	}
	return j, true
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}

func short(c objects.CID) string {
	if c.IsZero() {
		return "(no commit)"
	}
	return c.Short()
}

// ParsePublicKey parses an operator's ed25519 public key written as 64 hex
// digits or as standard or URL-safe base64 (with or without padding).
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == ed25519.PublicKeySize {
		return ed25519.PublicKey(b), nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == ed25519.PublicKeySize {
			return ed25519.PublicKey(b), nil
		}
	}
	return nil, fmt.Errorf("%w: want an ed25519 public key as 64 hex digits or base64 of 32 bytes", ErrBadSignature)
}
