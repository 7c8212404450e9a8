package objects

import (
	"context"
	"fmt"
)

// ContentSHA256 returns the sha256 of the content a value CID names. For a raw
// value it is the CID's digest and no block is read; for a chunked file node
// it is the node's "sha256" field (one block read).
func ContentSHA256(ctx context.Context, bs BlockStore, v CID) ([32]byte, error) {
	switch v.Codec() {
	case CodecRaw:
		return v.Digest(), nil
	case CodecDagCBOR:
		cn, err := readFileNode(ctx, bs, v)
		if err != nil {
			return [32]byte{}, err
		}
		return [32]byte(cn.SHA256), nil
	default:
		return [32]byte{}, fmt.Errorf("%w: value %s has codec 0x%x, want raw or a chunked file node", ErrBadObject, v, v.Codec())
	}
}

// ContentSize returns the length of the content a value names, reading at
// most the chunked file node (a raw value is read whole).
func ContentSize(ctx context.Context, bs BlockStore, v CID) (uint64, error) {
	if v.Codec() == CodecDagCBOR {
		cn, err := readFileNode(ctx, bs, v)
		if err != nil {
			return 0, err
		}
		return cn.Size, nil
	}
	data, err := ReadValue(ctx, bs, v)
	return uint64(len(data)), err
}

// ReadValue returns the content of a value: a raw block, or the chunks of a
// chunked file node joined and checked against the node's size and sha256.
func ReadValue(ctx context.Context, bs BlockStore, v CID) ([]byte, error) {
	switch v.Codec() {
	case CodecRaw:
		return bs.Get(ctx, v)
	case CodecDagCBOR:
		cn, err := readFileNode(ctx, bs, v)
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, min(cn.Size, 1<<30))
		err = forChunks(ctx, bs, v, cn, nil, func(p []byte) error { out = append(out, p...); return nil })
		if err != nil {
			return nil, fmt.Errorf("chunked value %s: %w", v, err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("%w: value %s has codec 0x%x, want raw or a chunked file node", ErrBadObject, v, v.Codec())
	}
}
