package snapshot

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/walrus"
)

// BindingVersion is the version tag every encoded binding starts with.
const BindingVersion = "agentstate-binding/1"

// MaxBindingLen bounds an encoded binding; longer input is refused unread.
const MaxBindingLen = 1024

var (
	// ErrBadBinding reports a pointer or binding record that does not parse.
	ErrBadBinding = errors.New("snapshot: malformed pointer binding")
	// ErrUnbound reports a pointer that names a blob but carries no binding
	// (written before bindings existed): restore refuses it.
	ErrUnbound = errors.New("snapshot: pointer has no content binding")
	// ErrTornPointer reports a pointer whose blob id and binding disagree
	// (an ENS record pair written half-way, or tampered with).
	ErrTornPointer = errors.New("snapshot: pointer and its binding disagree")
	// ErrBindingMismatch reports fetched content that is not what the
	// pointer's binding names: the blob store answered other bytes.
	ErrBindingMismatch = errors.New("snapshot: blob does not match the pointer's binding")
)

// Binding is what a pointer publishes: the blob id and what the blob must
// hold. Walrus blob ids cannot be recomputed locally, so the binding ties the
// id to the content: restore refuses any bytes whose sha256 and size are not
// these, and any snapshot whose tree and bundle hash are not these.
type Binding struct {
	Blob   walrus.BlobID      // the blob id
	SHA256 [32]byte           // sha256 of the blob's bytes as stored (the envelope)
	Size   int64              // their length
	Commit objects.CID        // the commit that was pushed
	Tree   objects.CID        // its tree
	Bundle objects.BundleHash // its bundle hash
}

// String returns the binding's canonical one-line encoding (no newline):
//
//	agentstate-binding/1 blob=ID sha256=HEX size=N commit=CID tree=CID bundle=0xHEX
func (b Binding) String() string {
	return fmt.Sprintf("%s blob=%s sha256=%s size=%d commit=%s tree=%s bundle=%s",
		BindingVersion, b.Blob, hex.EncodeToString(b.SHA256[:]), b.Size, b.Commit, b.Tree, b.Bundle)
}

// bindingFields are the keys of an encoded binding, in their only order.
var bindingFields = [...]string{"blob", "sha256", "size", "commit", "tree", "bundle"}

// ParseBinding parses the canonical encoding String returns, and nothing
// else: the exact version tag, the six fields in order separated by single
// spaces, each value in its canonical printed form (lowercase hex, decimal
// without sign or leading zeros, base32 CIDv1), no other bytes. Errors match
// ErrBadBinding.
func ParseBinding(s string) (Binding, error) {
	var b Binding
	bad := func(format string, args ...any) (Binding, error) {
		return Binding{}, fmt.Errorf("%w: %s", ErrBadBinding, fmt.Sprintf(format, args...))
	}
	if len(s) > MaxBindingLen {
		return bad("%d bytes, more than %d", len(s), MaxBindingLen)
	}
	parts := strings.Split(s, " ")
	if len(parts) != 1+len(bindingFields) {
		return bad("want %q and %d space-separated fields, got %d parts", BindingVersion, len(bindingFields), len(parts))
	}
	if parts[0] != BindingVersion {
		return bad("starts with %s, want %q", strconv.Quote(short(parts[0])), BindingVersion)
	}
	var vals [len(bindingFields)]string
	for i, f := range bindingFields {
		k, v, ok := strings.Cut(parts[1+i], "=")
		if !ok || k != f {
			return bad("field %d is %s, want %s=…", i+1, strconv.Quote(short(parts[1+i])), f)
		}
		vals[i] = v
	}
	var err error
	if b.Blob, err = walrus.ParseBlobID(vals[0]); err != nil {
		return bad("blob: %v", err)
	}
	if len(vals[1]) != 64 || strings.ToLower(vals[1]) != vals[1] {
		return bad("sha256: want 64 lowercase hex digits")
	}
	if _, err := hex.Decode(b.SHA256[:], []byte(vals[1])); err != nil {
		return bad("sha256: want 64 lowercase hex digits")
	}
	if b.Size, err = strconv.ParseInt(vals[2], 10, 64); err != nil || b.Size < 0 || strconv.FormatInt(b.Size, 10) != vals[2] {
		return bad("size %s: want a decimal number of bytes", strconv.Quote(short(vals[2])))
	}
	for i, dst := range []*objects.CID{&b.Commit, &b.Tree} {
		name := bindingFields[3+i]
		c, err := objects.ParseCID(vals[3+i])
		if err != nil {
			return bad("%s: %v", name, err)
		}
		if c.String() != vals[3+i] {
			return bad("%s: %s is not the canonical form %s", name, strconv.Quote(short(vals[3+i])), c)
		}
		*dst = c
	}
	if b.Bundle, err = objects.ParseBundleHash(vals[5]); err != nil || b.Bundle.String() != vals[5] {
		return bad("bundle: want 0x followed by 64 lowercase hex digits")
	}
	return b, nil
}

// EncodePointerFile returns the content of a pointer file: the binding's
// encoding and a newline.
func EncodePointerFile(b Binding) []byte { return []byte(b.String() + "\n") }

// ParsePointerFile parses the content of a pointer file: exactly one
// encoded binding followed by one newline. A file that holds only a blob id
// (the format before bindings) is an *UnboundError naming it; anything else
// that does not parse matches ErrBadBinding.
func ParsePointerFile(data []byte) (Binding, error) {
	s := string(data)
	line, ok := strings.CutSuffix(s, "\n")
	if !ok || strings.ContainsAny(line, "\n\r") {
		if id, err := walrus.ParseBlobID(strings.TrimSpace(s)); err == nil && len(s) <= MaxBindingLen {
			return Binding{}, &UnboundError{Blob: id}
		}
		return Binding{}, fmt.Errorf("%w: want one line ending in a newline", ErrBadBinding)
	}
	if id, err := walrus.ParseBlobID(strings.TrimSpace(line)); err == nil {
		return Binding{}, &UnboundError{Blob: id}
	}
	return ParseBinding(line)
}

// short cuts outside input for an error message.
func short(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// UnboundError is a pointer that names a blob without a binding.
type UnboundError struct {
	Where string // the pointer (file path, ENS name), if known
	Blob  walrus.BlobID
}

func (e *UnboundError) Error() string {
	where := "pointer"
	if e.Where != "" {
		where += " " + e.Where
	}
	return fmt.Sprintf("snapshot: %s names blob %s but carries no content binding (it was written by an older agentstate), "+
		"so nothing proves that blob is the snapshot that was pushed: push again to rebind it, "+
		"or restore exactly that blob by its id (then only the lineage inside the snapshot is checked)", where, e.Blob)
}

func (e *UnboundError) Is(t error) bool { return t == ErrUnbound }

// TornPointerError is a pointer whose blob id and binding name different
// blobs.
type TornPointerError struct {
	Where         string
	Blob, Binding walrus.BlobID // what the pointer names, what the binding is for
}

func (e *TornPointerError) Error() string {
	return fmt.Sprintf("snapshot: pointer %s names blob %s but its binding is for blob %s; refusing both "+
		"(an update that is in progress or was interrupted, or tampering): retry, or push again", e.Where, e.Blob, e.Binding)
}

func (e *TornPointerError) Is(t error) bool { return t == ErrTornPointer }

// MismatchError reports content that differs from the binding.
type MismatchError struct {
	Blob      walrus.BlobID
	What      string // "sha256 of the blob", "size of the blob", "bundle hash", "tree", ...
	Want, Got string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("snapshot: refusing blob %s: it is not the snapshot the pointer names (the blob store answered other content): %s: expected %s, got %s",
		e.Blob, e.What, e.Want, e.Got)
}

func (e *MismatchError) Is(t error) bool { return t == ErrBindingMismatch }
