package repo

import (
	"context"
	"errors"
	"runtime"
	"sync"

	"github.com/agentstate/agentstate/objects"
)

// scanned is a store's blocks read in one pass (objects.BlockScanner) for
// the commands that read all of them (du, verify): the size of every block
// and the bytes of every dag-cbor block (commits, tree nodes, chunk nodes:
// what the walks decode), each re-hashed as it came in, so the walks that
// follow read no block of those again. Raw blocks' bytes are not kept; with
// hashRaw the scan re-hashes them too and remembers only whether they
// matched. A block the scan did not see (written since) is read from the
// store itself.
//
// It is a read-only objects.BlockStore.
type scanned struct {
	bs      objects.BlockStore
	index   map[blockID]uint32 // every block seen: its place in sizes
	sizes   []int64
	nodes   map[blockID][]byte
	bad     map[blockID]error // blocks whose bytes do not match their CID
	hashRaw bool
	bytes   int64 // every block's bytes, as the scan read them
	hashed  int64 // the bytes the scan re-hashed
}

// errScannedView: the scanned view takes no writes.
var errScannedView = errors.New("repo: a scanned view of the store is read-only")

// scanStore reads every block of sc once (see scanned); bs serves what
// the scan did not see. The re-hashing runs on every core beside the scan.
func scanStore(ctx context.Context, sc objects.BlockScanner, bs objects.BlockStore, hashRaw bool) (*scanned, error) {
	s := &scanned{bs: bs, index: map[blockID]uint32{}, nodes: map[blockID][]byte{}, bad: map[blockID]error{}, hashRaw: hashRaw}
	type result struct {
		id   blockID
		data []byte // kept (a dag-cbor block), nil otherwise
		err  error
	}
	const batch = 256
	work := make(chan []objects.Block, runtime.GOMAXPROCS(0)*2)
	results := make(chan []result, runtime.GOMAXPROCS(0)*2)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for bl := range work {
				out := make([]result, 0, len(bl))
				for _, b := range bl {
					r := result{id: idOf(b.CID), err: objects.Verify(b.CID, b.Data)}
					if r.err == nil && b.CID.Codec() == objects.CodecDagCBOR {
						r.data = b.Data
					}
					out = append(out, r)
				}
				results <- out
			}
		}()
	}
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for rs := range results {
			for _, r := range rs {
				if r.err != nil {
					s.bad[r.id] = r.err
				} else if r.data != nil {
					s.nodes[r.id] = r.data
				}
			}
		}
	}()
	want := func(c objects.CID) bool { return hashRaw || c.Codec() == objects.CodecDagCBOR }
	var pending []objects.Block
	err := sc.ScanBlocks(ctx, want, func(c objects.CID, size int64, data []byte) error {
		s.index[idOf(c)] = uint32(len(s.sizes))
		s.sizes = append(s.sizes, size)
		s.bytes += size
		if data == nil {
			return nil
		}
		s.hashed += size
		pending = append(pending, objects.Block{CID: c, Data: data})
		if len(pending) == batch {
			work <- pending
			pending = nil
		}
		return nil
	})
	if len(pending) > 0 && err == nil {
		work <- pending
	}
	close(work)
	wg.Wait()
	close(results)
	<-collected
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Get returns block c: a kept block from memory, a raw one from the store.
func (s *scanned) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	id := idOf(c)
	if err, ok := s.bad[id]; ok {
		return nil, err
	}
	if d, ok := s.nodes[id]; ok {
		return d, nil
	}
	return s.bs.Get(ctx, c)
}

// Has reports whether c is stored; a block whose bytes do not match its
// CID is reported with that error.
func (s *scanned) Has(ctx context.Context, c objects.CID) (bool, error) {
	id := idOf(c)
	if err, ok := s.bad[id]; ok {
		return false, err
	}
	if _, ok := s.index[id]; ok {
		return true, nil
	}
	return s.bs.Has(ctx, c)
}

// Put refuses: the view is read-only.
func (s *scanned) Put(ctx context.Context, blocks ...objects.Block) error { return errScannedView }

// rawHashed reports whether c is a raw block the scan re-hashed and found
// whole (hashRaw).
func (s *scanned) rawHashed(c objects.CID) bool {
	if !s.hashRaw || c.Codec() != objects.CodecRaw {
		return false
	}
	id := idOf(c)
	if _, bad := s.bad[id]; bad {
		return false
	}
	_, ok := s.index[id]
	return ok
}
