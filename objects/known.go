package objects

import (
	"context"
	"sync"
	"sync/atomic"
)

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

// AddStoredChunks adds StoredChunks(ctx, bs, v) to stored. The list nodes
// of one depth are read side by side (storedReaders at a time): a 32 MiB
// database has some 600 of them at unrelated places in the store, each
// read a lookup and a table block's decompression of its own, which one
// after another took twice as long as reading and hashing the whole file.
func AddStoredChunks(ctx context.Context, bs BlockStore, v CID, stored map[CID]struct{}) {
	stored[v] = struct{}{}
	if v.Codec() != CodecDagCBOR {
		return
	}
	for level := []CID{v}; len(level) > 0; {
		links, ok := readChunkLinks(ctx, bs, level)
		level = level[:0:0]
		for _, ls := range links {
			for _, l := range ls {
				stored[l] = struct{}{}
				if l.Codec() == CodecDagCBOR {
					level = append(level, l)
				}
			}
		}
		if !ok {
			return
		}
	}
}

// storedReaders is how many list nodes AddStoredChunks reads at once.
const storedReaders = 8

// readChunkLinks reads the links of the chunk list nodes, several at once.
// ok is false when one could not be read (or ctx ended); the links of
// those read are returned either way.
func readChunkLinks(ctx context.Context, bs BlockStore, nodes []CID) (links [][]CID, ok bool) {
	links = make([][]CID, len(nodes))
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(storedReaders, len(nodes)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1)) - 1
				if i >= len(nodes) {
					return
				}
				data, err := bs.Get(ctx, nodes[i])
				var ls []CID
				if err == nil {
					ls, err = ChunkLinks(data)
				}
				if err != nil {
					failed.Store(true)
					return
				}
				links[i] = ls
			}
		}()
	}
	wg.Wait()
	return links, !failed.Load()
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
