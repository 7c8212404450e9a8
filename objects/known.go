package objects

import (
	"context"
	"sync"
	"sync/atomic"
)

// Known is a set of blocks known to be stored, filled in the background
// from the chunk lists of values already in the store: a new version of a
// chunked file shares most of its blocks with the previous one (a memory
// database with 1% of its pages changed shares 99% of its chunks), and a
// write of the new version through SkipKnown neither copies nor looks up
// again the blocks the previous version's lists name.
//
// A block enters the set only when a node naming it was read from the
// store and verified against its CID here (whatever the store's Get
// checks): the value's own file node, then its list nodes, level by level.
// The set is sound by the store's rule that blocks are written before the
// nodes that link them and that nothing deletes a value's blocks while a
// record still names the value: gc drops the stat cache records whose trees
// it does not keep, and a redaction every record, before deleting.
type Known struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.RWMutex
	set    map[CID]struct{}
	lists  map[CID]*versionLists // AddVersion's values
}

// versionLists is what AddVersion read of a value: its list nodes down to
// (not including) the bottom ones, the parents of its chunks, which are
// named here in order and read only when a write needs them
// (WriteVersion).
type versionLists struct {
	bs     BlockStore
	done   chan struct{}
	bottom []CID       // the bottom list nodes, in content order; nil if not found
	pos    map[CID]int // the index of each in bottom (the last, if repeated)
}

// NewKnown returns an empty set; Add starts filling it.
func NewKnown(ctx context.Context) *Known {
	ctx, cancel := context.WithCancel(ctx)
	return &Known{ctx: ctx, cancel: cancel, set: map[CID]struct{}{}}
}

// Add starts reading the chunk lists of value v from bs in the background;
// Wait returns when every read started is done. A value that is not chunked
// adds nothing (nothing below it to skip). On an error reading a node
// (missing, damaged, ctx ended) what it would have named is left out, and a
// write looks those blocks up as usual. Add must not be called once Wait has
// been.
func (k *Known) Add(bs BlockStore, v CID) {
	if v.Codec() != CodecDagCBOR {
		return
	}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		k.read(bs, v)
	}()
}

// AddVersion is Add for a value a new version is about to be written over
// with WriteVersion: only the list nodes above the bottom ones (some 45 of
// the 600 of a 32 MiB database) are read in the background; the bottom
// ones, each the parent of up to 64 chunks, are read by the write, and
// only those under a part of the content that changed (the others are
// known by their CIDs, which the new version's list nodes repeat).
func (k *Known) AddVersion(bs BlockStore, v CID) {
	if v.Codec() != CodecDagCBOR {
		return
	}
	vl := &versionLists{bs: bs, done: make(chan struct{})}
	k.mu.Lock()
	if k.lists == nil {
		k.lists = map[CID]*versionLists{}
	}
	if _, ok := k.lists[v]; ok {
		k.mu.Unlock()
		return
	}
	k.lists[v] = vl
	k.mu.Unlock()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		defer close(vl.done)
		if bottom := k.readUpper(bs, v); len(bottom) > 0 {
			vl.pos = make(map[CID]int, len(bottom))
			for i, c := range bottom {
				vl.pos[c] = i
			}
			vl.bottom = bottom
		}
	}()
}

// version returns what AddVersion read of v, once it has; nil if
// AddVersion was not called for v.
func (k *Known) version(v CID) *versionLists {
	k.mu.RLock()
	vl := k.lists[v]
	k.mu.RUnlock()
	if vl != nil {
		<-vl.done
	}
	return vl
}

// readUpper reads value v's list nodes level by level and returns its
// bottom level (the nodes whose links are chunks) unread but for its first
// node; nil when a node could not be read or v's file node links chunks
// itself.
func (k *Known) readUpper(bs BlockStore, v CID) []CID {
	ls, err := k.readNode(bs, v)
	if err != nil {
		return nil
	}
	for level := ls; ; {
		lists := level[:0:0]
		for _, l := range level {
			if l.Codec() == CodecDagCBOR {
				lists = append(lists, l)
			}
		}
		if len(lists) == 0 {
			return nil
		}
		// The depth is the same under every link (the writer groups each
		// level whole): the first node says whether this level is the
		// bottom one.
		first, err := k.readNode(bs, lists[0])
		if err != nil {
			return nil
		}
		if len(first) > 0 && first[0].Codec() == CodecRaw {
			return lists
		}
		links, ok := k.readLevel(bs, lists[1:])
		if !ok {
			return nil
		}
		level = first
		for _, l := range links {
			level = append(level, l...)
		}
	}
}

// readNodes reads chunk nodes side by side, adding them and their links to
// the set (errors leave those out).
func (k *Known) readNodes(bs BlockStore, nodes []CID) {
	k.readLevel(bs, nodes)
}

// Has reports whether c is known stored so far, without waiting.
func (k *Known) Has(c CID) bool {
	k.mu.RLock()
	_, ok := k.set[c]
	k.mu.RUnlock()
	return ok
}

// Wait returns once every read Add started is done.
func (k *Known) Wait() { k.wg.Wait() }

// Stop ends the reads still running and waits for them.
func (k *Known) Stop() {
	k.cancel()
	k.wg.Wait()
}

// Len is the number of blocks known so far.
func (k *Known) Len() int {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return len(k.set)
}

// StoredChunks returns the CIDs of the blocks of value v that its chunk
// lists name (v itself, its list nodes and its chunks), each read from bs
// and verified: what Known holds once Add(bs, v) is done.
func StoredChunks(ctx context.Context, bs BlockStore, v CID) map[CID]struct{} {
	k := NewKnown(ctx)
	defer k.Stop()
	k.Add(bs, v)
	k.Wait()
	return k.set
}

// storedReaders is how many list nodes of one value are read at once: a 32
// MiB database has some 600 of them at unrelated places in the store, each
// read a lookup and a table block's decompression of its own.
const storedReaders = 8

// read adds the blocks value v's lists name, one depth at a time, the nodes
// of a depth side by side and in order (so the first pages of the file are
// known first, while a write of its new version hashes them); each node's
// links are added as soon as it is read and verified, the node itself with
// them.
func (k *Known) read(bs BlockStore, v CID) {
	for level := []CID{v}; len(level) > 0; {
		links, ok := k.readLevel(bs, level)
		level = level[:0:0]
		for _, ls := range links {
			for _, l := range ls {
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

// readLevel reads the chunk nodes, several at once, adding each node and
// its links to the set once it is read and verified. ok is false when one
// could not be (or the reads were stopped); the links of those read are
// returned either way.
func (k *Known) readLevel(bs BlockStore, nodes []CID) (links [][]CID, ok bool) {
	links = make([][]CID, len(nodes))
	var next atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	for range min(storedReaders, len(nodes)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() && k.ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= len(nodes) {
					return
				}
				ls, err := k.readNode(bs, nodes[i])
				if err != nil {
					failed.Store(true)
					return
				}
				links[i] = ls
			}
			if k.ctx.Err() != nil {
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	return links, !failed.Load()
}

// readNode reads one chunk node, checks its bytes against its CID and its
// form, and adds it and its links to the set.
func (k *Known) readNode(bs BlockStore, c CID) ([]CID, error) {
	data, err := bs.Get(k.ctx, c)
	if err != nil {
		return nil, err
	}
	if err := Verify(c, data); err != nil {
		return nil, err
	}
	ls, err := ChunkLinks(data)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.set[c] = struct{}{}
	for _, l := range ls {
		k.set[l] = struct{}{}
	}
	k.mu.Unlock()
	return ls, nil
}

// SkipKnown wraps bs so that Put drops the blocks k names, and Has answers
// true for them, without asking bs. Both wait for k's reads first (Has only
// for a block not known yet), so a write that runs beside the reads gives
// the store only what k does not name once they are done. k must name only
// blocks bs holds (Known reads them from bs).
func SkipKnown(bs BlockStore, k *Known) BlockStore {
	if k == nil {
		return bs
	}
	return skipKnown{bs, k}
}

type skipKnown struct {
	BlockStore
	k *Known
}

// knownStore is a store that can say, without a lookup and without
// waiting, that a block is stored already (WriteValue then neither copies
// the chunk nor hands it to Put).
type knownStore interface {
	knownNow(c CID) bool
}

func (s skipKnown) knownNow(c CID) bool { return s.k.Has(c) }

func (s skipKnown) Has(ctx context.Context, c CID) (bool, error) {
	if s.k.Has(c) {
		return true, nil
	}
	s.k.Wait()
	if s.k.Has(c) {
		return true, nil
	}
	return s.BlockStore.Has(ctx, c)
}

func (s skipKnown) Put(ctx context.Context, blocks ...Block) error {
	s.k.Wait()
	out := blocks[:0:0]
	for _, b := range blocks {
		if !s.k.Has(b.CID) {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return s.BlockStore.Put(ctx, out...)
}
