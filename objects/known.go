package objects

import "context"

// StoredChunks returns the CIDs of the blocks of value v that its chunk
// lists name (v itself, its list nodes and its chunks), reading only the
// list nodes. A new version of a chunked file shares most of them with the
// previous one (a memory database with 1% of its pages changed shares 99%
// of its chunks), and SkipStored lets a write of the new version skip
// looking each of them up again. A value that is not chunked gives only
// itself. On an error reading the lists it returns what it found: the
// caller then looks up the rest as usual.
func StoredChunks(ctx context.Context, bs BlockStore, v CID) map[CID]struct{} {
	stored := map[CID]struct{}{}
	AddStoredChunks(ctx, bs, v, stored)
	return stored
}

// AddStoredChunks adds StoredChunks(ctx, bs, v) to stored.
func AddStoredChunks(ctx context.Context, bs BlockStore, v CID, stored map[CID]struct{}) {
	stored[v] = struct{}{}
	if v.Codec() != CodecDagCBOR {
		return
	}
	nodes := []CID{v}
	for len(nodes) > 0 {
		n := nodes[len(nodes)-1]
		nodes = nodes[:len(nodes)-1]
		data, err := bs.Get(ctx, n)
		if err != nil {
			return
		}
		links, err := ChunkLinks(data)
		if err != nil {
			return
		}
		for _, l := range links {
			stored[l] = struct{}{}
			if l.Codec() == CodecDagCBOR {
				nodes = append(nodes, l)
			}
		}
	}
}

// SkipStored wraps bs so that Put drops the blocks whose CIDs are in
// stored, and Has answers true for them, without asking bs: stored must
// name only blocks bs holds (StoredChunks of a value in bs).
func SkipStored(bs BlockStore, stored map[CID]struct{}) BlockStore {
	if len(stored) == 0 {
		return bs
	}
	return skipStored{bs, stored}
}

type skipStored struct {
	BlockStore
	stored map[CID]struct{}
}

func (s skipStored) Has(ctx context.Context, c CID) (bool, error) {
	if _, ok := s.stored[c]; ok {
		return true, nil
	}
	return s.BlockStore.Has(ctx, c)
}

func (s skipStored) Put(ctx context.Context, blocks ...Block) error {
	out := blocks[:0:0]
	for _, b := range blocks {
		if _, ok := s.stored[b.CID]; !ok {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return s.BlockStore.Put(ctx, out...)
}
