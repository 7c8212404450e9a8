package repo

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

// ListSizeRebuilder is an optional ability of a Storage that keeps a size
// record beside every chunk list node (docs/format.md "List sizes"): drop
// them all and write them again from the nodes stored.
type ListSizeRebuilder interface {
	RebuildListSizes(ctx context.Context) (int, error)
}

// RebuildListSizes writes the list size records again (verify --repair);
// a storage that keeps none has nothing to rebuild.
func (r *Repo) RebuildListSizes(ctx context.Context) (int, error) {
	if lr, ok := r.Storage.(ListSizeRebuilder); ok {
		return lr.RebuildListSizes(ctx)
	}
	return 0, nil
}

// verifyListSizes checks every list size record against the node it
// names, read through bs (the scan's view, when verify scanned): the
// record must decode (its checksum binds it to the node's CID), and the
// node must be stored, be a chunk list node and record the same size. A
// list node with no record is no problem: a reader reads the node.
func (r *Repo) verifyListSizes(ctx context.Context, bs objects.BlockStore) (problems []string, records int, err error) {
	if _, ok := r.Storage.(ListSizeRebuilder); !ok {
		return nil, 0, nil
	}
	err = r.Storage.MetaPrefix(ctx, badger.ListSizePrefix, func(name string, v []byte) error {
		records++
		raw := name[len(badger.ListSizePrefix):]
		c, err := objects.CIDFromBytes([]byte(raw))
		if err != nil {
			problems = append(problems, fmt.Sprintf("list size record %x: its name holds no CID", raw))
			return nil
		}
		bad := func(format string, a ...any) {
			problems = append(problems, fmt.Sprintf("list size record of %s: ", c)+fmt.Sprintf(format, a...))
		}
		size, ok := badger.DecodeListSize(c, v)
		if !ok {
			bad("does not decode (%d bytes, or its checksum does not match)", len(v))
			return nil
		}
		data, err := bs.Get(ctx, c)
		var nf *objects.NotFoundError
		switch {
		case errors.As(err, &nf):
			bad("the node is not stored")
			return nil
		case err != nil:
			bad("reading the node: %v", err)
			return nil
		}
		got, isList := objects.ListNodeSize(data)
		switch {
		case !isList:
			bad("the block is no chunk list node")
		case got != size:
			bad("records %d bytes, the node %d", size, got)
		}
		return ctx.Err()
	})
	return problems, records, err
}
