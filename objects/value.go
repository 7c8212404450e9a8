package objects

import (
	"context"
	"fmt"
)

// ContentSHA256 returns the sha256 of the content a value CID names. For a raw
// value it is the CID's digest; no block is read.
func ContentSHA256(ctx context.Context, bs BlockStore, v CID) ([32]byte, error) {
	switch v.Codec() {
	case CodecRaw:
		return v.Digest(), nil
	default:
		return [32]byte{}, fmt.Errorf("%w: value %s has codec 0x%x; this build reads raw values only", ErrBadObject, v, v.Codec())
	}
}

// ReadValue returns the content of a value.
func ReadValue(ctx context.Context, bs BlockStore, v CID) ([]byte, error) {
	if v.Codec() != CodecRaw {
		return nil, fmt.Errorf("%w: value %s has codec 0x%x; this build reads raw values only", ErrBadObject, v, v.Codec())
	}
	return bs.Get(ctx, v)
}
