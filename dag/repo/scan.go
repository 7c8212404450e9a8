package repo

import (
	"context"
	"errors"
	"maps"
	"runtime"
	"slices"
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
// It is a read-only objects.BlockStore, read by one goroutine at a time
// (a walk: see placeLast).
type scanned struct {
	bs      objects.BlockStore
	index   blockIndex // every block seen: its place in sizes
	sizes   []int64
	nodes   [][]byte         // by place: the bytes of a dag-cbor block, nil for any other
	bad     map[uint32]error // by place: blocks whose bytes do not match their CID
	hashRaw bool
	bytes   int64 // every block's bytes, as the scan read them
	hashed  int64 // the bytes the scan re-hashed
	// last is the walk's last look-up (placeLast): a walk asks about the
	// block it is at several times over (is it marked, mark it, was it
	// hashed).
	last struct {
		key string
		i   uint32
		ok  bool
	}
}

// errScannedView: the scanned view takes no writes.
var errScannedView = errors.New("repo: a scanned view of the store is read-only")

// scanStore reads every block of sc once (see scanned); bs serves what
// the scan did not see. The re-hashing runs on every core beside the scan.
func scanStore(ctx context.Context, sc objects.BlockScanner, bs objects.BlockStore, hashRaw bool) (*scanned, error) {
	s := &scanned{bs: bs, bad: map[uint32]error{}, hashRaw: hashRaw}
	type result struct {
		i    uint32
		data []byte // kept (a dag-cbor block), nil otherwise
		err  error
	}
	type job struct {
		at     []uint32 // the places of blocks
		blocks []objects.Block
	}
	const batch = 256
	work := make(chan job, runtime.GOMAXPROCS(0)*2)
	results := make(chan []result, runtime.GOMAXPROCS(0)*2)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				out := make([]result, 0, len(j.blocks))
				for k, b := range j.blocks {
					r := result{i: j.at[k], err: objects.Verify(b.CID, b.Data)}
					if r.err == nil && b.CID.Codec() == objects.CodecDagCBOR {
						r.data = b.Data
					}
					if r.err != nil || r.data != nil {
						out = append(out, r)
					}
				}
				results <- out
			}
		}()
	}
	kept := map[uint32][]byte{}
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for rs := range results {
			for _, r := range rs {
				if r.err != nil {
					s.bad[r.i] = r.err
				} else {
					kept[r.i] = r.data
				}
			}
		}
	}()
	want := func(c objects.CID) bool { return hashRaw || c.Codec() == objects.CodecDagCBOR }
	var pending []objects.Block
	var pendingAt []uint32
	flush := func() {
		if len(pending) > 0 {
			work <- job{at: pendingAt, blocks: pending}
		}
		pending, pendingAt = nil, nil
	}
	err := sc.ScanBlocks(ctx, want, func(c objects.CID, size int64, data []byte) error {
		if len(c.KeyString()) != len(blockID{}) {
			return nil // not a CID of this store's (a blockID could not hold it): read from the store
		}
		i := s.index.add(idOf(c))
		s.sizes = append(s.sizes, size)
		s.bytes += size
		if data == nil {
			return nil
		}
		s.hashed += size
		pending = append(pending, objects.Block{CID: c, Data: data})
		pendingAt = append(pendingAt, i)
		if len(pending) == batch {
			flush()
		}
		return nil
	})
	if err == nil {
		flush()
	}
	close(work)
	wg.Wait()
	close(results)
	<-collected
	if err != nil {
		return nil, err
	}
	s.index.seal()
	s.nodes = make([][]byte, len(s.sizes))
	for i, d := range kept {
		s.nodes[i] = d
	}
	return s, nil
}

// cid is the CID of the block at place i.
func (s *scanned) cid(i uint32) (objects.CID, error) {
	return objects.CIDFromBytes(s.index.ids[i][:])
}

// isRaw reports whether the block at place i is a raw block (a value or a
// chunk: its size is all du needs of it).
func (s *scanned) isRaw(i uint32) bool { return s.index.ids[i][1] == objects.CodecRaw }

// placeLast is place for a walk (one goroutine): the block looked up last
// is not looked up again.
func (s *scanned) placeLast(c objects.CID) (uint32, bool) {
	k := c.KeyString()
	if k != s.last.key || k == "" {
		s.last.i, s.last.ok = s.place(c)
		s.last.key = k
	}
	return s.last.i, s.last.ok
}

// place is block c's place in the scan.
func (s *scanned) place(c objects.CID) (uint32, bool) { return s.index.find(idOf(c)) }

// Get returns block c: a kept block from memory, a raw one from the store.
func (s *scanned) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	if i, ok := s.placeLast(c); ok {
		if err, bad := s.bad[i]; bad {
			return nil, err
		}
		if d := s.nodes[i]; d != nil {
			return d, nil
		}
	}
	return s.bs.Get(ctx, c)
}

// Has reports whether c is stored; a block whose bytes do not match its
// CID is reported with that error.
func (s *scanned) Has(ctx context.Context, c objects.CID) (bool, error) {
	if i, ok := s.placeLast(c); ok {
		if err, bad := s.bad[i]; bad {
			return false, err
		}
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
	i, ok := s.placeLast(c)
	if !ok {
		return false
	}
	_, bad := s.bad[i]
	return !bad
}

// blockIndex finds a scanned block's place by its CID: an open-addressed
// table of CIDs and places keyed by the CID's digest (whose bits are
// already uniform, so it is hashed no further), beside the CIDs in place
// order. A look-up is one read of memory more often than not; a map of a
// store's many blocks costs more memory and a hash of every CID.
type blockIndex struct {
	ids   []blockID
	slots []indexSlot
}

type indexSlot struct {
	id blockID
	p  uint32 // place + 1; 0 is an empty slot
}

// slotOf is where id's search starts in a table of mask+1 slots.
func slotOf(id *blockID, mask uint64) uint64 {
	// The digest follows the CID's 4-byte prefix; the codec (byte 1) is
	// mixed in, a raw block and a node may share a digest.
	h := uint64(id[4]) | uint64(id[5])<<8 | uint64(id[6])<<16 | uint64(id[7])<<24 |
		uint64(id[8])<<32 | uint64(id[9])<<40 | uint64(id[10])<<48 | uint64(id[11])<<56
	return (h ^ uint64(id[1])*0x9e3779b97f4a7c15) & mask
}

// add puts id at the next place and returns that place (id is not in x).
// The table is built once, by seal, when every block is in.
func (x *blockIndex) add(id blockID) uint32 {
	x.ids = append(x.ids, id)
	return uint32(len(x.ids) - 1)
}

// seal builds the table of every block added: at most three quarters
// full, its size a power of two.
func (x *blockIndex) seal() {
	n := 1024
	for 3*n < 4*len(x.ids) {
		n *= 2
	}
	x.slots = make([]indexSlot, n)
	mask := uint64(n - 1)
	for i := range x.ids {
		for h := slotOf(&x.ids[i], mask); ; h = (h + 1) & mask {
			if x.slots[h].p == 0 {
				x.slots[h] = indexSlot{id: x.ids[i], p: uint32(i) + 1}
				break
			}
		}
	}
}

// find returns id's place.
func (x *blockIndex) find(id blockID) (uint32, bool) {
	if len(x.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(x.slots) - 1)
	for h := slotOf(&id, mask); ; h = (h + 1) & mask {
		sl := &x.slots[h]
		if sl.p == 0 {
			return 0, false
		}
		if sl.id == id {
			return sl.p - 1, true
		}
	}
}

// scanSet is a set of blocks (dag.ReachSet) held as one bit for each block
// of a scan, and a map for the few the scan did not see (written since):
// what a walk over a scanned store marks, at a bit a block where a set of
// CIDs costs a map entry each.
type scanSet struct {
	view  *scanned
	bits  []uint64
	extra map[objects.CID]struct{}
}

func newScanSet(view *scanned) *scanSet {
	return &scanSet{view: view, bits: make([]uint64, (len(view.sizes)+63)/64)}
}

// Has reports whether c is in s.
func (s *scanSet) Has(c objects.CID) bool {
	if i, ok := s.view.placeLast(c); ok {
		return s.has(i)
	}
	_, ok := s.extra[c]
	return ok
}

// Add puts c in s.
func (s *scanSet) Add(c objects.CID) {
	if i, ok := s.view.placeLast(c); ok {
		s.bits[i/64] |= 1 << (i % 64)
		return
	}
	if s.extra == nil {
		s.extra = map[objects.CID]struct{}{}
	}
	s.extra[c] = struct{}{}
}

// has reports whether the scan's block i is in s.
func (s *scanSet) has(i uint32) bool { return s.bits[i/64]&(1<<(i%64)) != 0 }

// clone is a copy of s.
func (s *scanSet) clone() *scanSet {
	out := &scanSet{view: s.view, bits: slices.Clone(s.bits)}
	if len(s.extra) > 0 {
		out.extra = maps.Clone(s.extra)
	}
	return out
}

// union adds every block of o to s.
func (s *scanSet) union(o *scanSet) {
	for i, w := range o.bits {
		s.bits[i] |= w
	}
	for c := range o.extra {
		s.Add(c)
	}
}

// count is how many of the scan's blocks s holds and their bytes (the
// blocks in extra are not counted).
func (s *scanSet) count() (n int, bytes int64) {
	for i, size := range s.view.sizes {
		if s.has(uint32(i)) {
			n++
			bytes += size
		}
	}
	return n, bytes
}
