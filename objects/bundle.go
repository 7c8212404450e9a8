package objects

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	"golang.org/x/crypto/sha3"
)

// Top-level brain files that travel in snapshots but are excluded from the
// lineage bundle hash.
const (
	LockFile     = "bundle.lock.json"
	ReceiptsFile = "receipts.ndjson"
)

// ExcludedFromBundle reports whether key is left out of the bundle hash.
func ExcludedFromBundle(key string) bool { return IsDerived(key) }

// IsDerived reports whether key is one of the two top-level files agentstate
// derives rather than stores: bundle.lock.json (generated from the tree on
// export) and receipts.ndjson (generated from the agent's receipt tape).
// Trees never hold them; they ride along in tars and snapshots only.
func IsDerived(key string) bool { return key == LockFile || key == ReceiptsFile }

// BundleHash is the lineage bundle hash of a brain (DESIGN §3).
type BundleHash [32]byte

// String returns 0x followed by 64 lowercase hex digits.
func (h BundleHash) String() string { return "0x" + hex.EncodeToString(h[:]) }

// MarshalText implements encoding.TextMarshaler.
func (h BundleHash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// ParseBundleHash parses the 0x-prefixed hex form.
func ParseBundleHash(s string) (BundleHash, error) {
	var h BundleHash
	if !strings.HasPrefix(s, "0x") || len(s) != 66 {
		return h, fmt.Errorf("objects: bundle hash %q: want 0x followed by 64 hex digits", s)
	}
	if _, err := hex.Decode(h[:], []byte(s[2:])); err != nil {
		return h, fmt.Errorf("objects: bundle hash %q: %v", s, err)
	}
	return h, nil
}

// BundleHasher accumulates leaves in increasing path order.
type BundleHasher struct {
	outer sha3hash
	prev  string
	n     int
	err   error
}

type sha3hash interface {
	Write([]byte) (int, error)
	Sum([]byte) []byte
	Reset()
}

// NewBundleHasher starts a bundle hash.
func NewBundleHasher() *BundleHasher { return &BundleHasher{outer: sha3.NewLegacyKeccak256()} }

// Add adds one file: its path and the sha256 of its content. Paths must come
// in strictly increasing bytewise order; excluded files are ignored.
func (b *BundleHasher) Add(path string, contentSHA256 [32]byte) error {
	if b.err != nil {
		return b.err
	}
	if ExcludedFromBundle(path) {
		return nil
	}
	if b.n > 0 && path <= b.prev {
		b.err = fmt.Errorf("objects: bundle hash: path %q after %q is out of order", path, b.prev)
		return b.err
	}
	leaf := BundleLeaf(path, contentSHA256)
	b.outer.Write(leaf[:])
	b.prev, b.n = path, b.n+1
	return nil
}

// BundleLeaf is one file's leaf: keccak256(utf8(path) || 0x00 || sha256(content)).
func BundleLeaf(path string, contentSHA256 [32]byte) [32]byte {
	k := sha3.NewLegacyKeccak256()
	k.Write([]byte(path))
	k.Write([]byte{0})
	k.Write(contentSHA256[:])
	var leaf [32]byte
	copy(leaf[:], k.Sum(nil))
	return leaf
}

// HashLeaves is keccak256 over the concatenated leaves (given in path order).
func HashLeaves(leaves [][32]byte) BundleHash {
	k := sha3.NewLegacyKeccak256()
	for i := range leaves {
		k.Write(leaves[i][:])
	}
	var h BundleHash
	copy(h[:], k.Sum(nil))
	return h
}

// Sum returns the bundle hash of the files added so far.
func (b *BundleHasher) Sum() (BundleHash, error) {
	var h BundleHash
	if b.err != nil {
		return h, b.err
	}
	copy(h[:], b.outer.Sum(nil))
	return h, nil
}

// TreeBundleHash derives the bundle hash of a tree from its entries alone:
// a raw value's CID digest is sha256(content), so no content is read. A
// chunked file value contributes the whole-content sha256 its node records.
func TreeBundleHash(ctx context.Context, bs BlockStore, root CID) (BundleHash, error) {
	t, err := LoadTree(ctx, bs, root)
	if err != nil {
		return BundleHash{}, err
	}
	h := NewBundleHasher()
	for e, err := range t.Entries(ctx, "") {
		if err != nil {
			return BundleHash{}, err
		}
		sum, err := ContentSHA256(ctx, bs, e.Value)
		if err != nil {
			return BundleHash{}, fmt.Errorf("objects: bundle hash of %q: %w", e.Key, err)
		}
		if err := h.Add(e.Key, sum); err != nil {
			return BundleHash{}, err
		}
	}
	return h.Sum()
}

// StateDeltaHash is keccak256(before || after), the proof of transition a
// task receipt carries.
func StateDeltaHash(before, after BundleHash) BundleHash {
	k := sha3.NewLegacyKeccak256()
	k.Write(before[:])
	k.Write(after[:])
	var h BundleHash
	copy(h[:], k.Sum(nil))
	return h
}
