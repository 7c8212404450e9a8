package objectstest

import (
	"context"

	"github.com/agentstate/agentstate/objects"
)

// OneBigValue stores a tree holding data under key, as a chunked value when
// data is over the chunking threshold, and returns the tree's root and the
// CID of the value's last raw chunk (zero if it has none).
func OneBigValue(ctx context.Context, bs objects.BlockStore, key string, data []byte) (root, lastChunk objects.CID, err error) {
	v, blocks := objects.NewFileValue(data)
	if err := bs.Put(ctx, blocks...); err != nil {
		return objects.CID{}, objects.CID{}, err
	}
	tr := objects.NewTree(bs)
	if _, err := tr.Put(ctx, key, v); err != nil {
		return objects.CID{}, objects.CID{}, err
	}
	root, nodes := tr.Flush()
	if err := bs.Put(ctx, nodes...); err != nil {
		return objects.CID{}, objects.CID{}, err
	}
	for _, b := range blocks {
		if b.CID.Codec() == objects.CodecRaw {
			lastChunk = b.CID
		}
	}
	return root, lastChunk, nil
}

// Liar is a block store that returns the block Lie with its first byte
// changed after the store's own hash check: a store that lies.
type Liar struct {
	objects.BlockStore
	Lie objects.CID
}

func (s Liar) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	data, err := s.BlockStore.Get(ctx, c)
	if err == nil && c == s.Lie {
		data = append([]byte(nil), data...)
		data[0] ^= 1
	}
	return data, err
}
