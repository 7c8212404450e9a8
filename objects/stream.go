package objects

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"slices"
	"sync"
	"sync/atomic"
)

// Streaming values. WriteValue and OpenValue are NewFileValue and ReadValue
// for content of any size: they hold a bounded window of it (a few MiB), not
// the whole. WriteValue cuts exactly the chunks and list nodes NewFileValue
// cuts for the same bytes, so a value has one CID however it was written.

// writeBatch is how many bytes of blocks WriteValue gathers into one Put.
const writeBatch = 4 << 20

// readWindow is WriteValue's read-ahead: enough for a whole content-defined
// chunk (cdcMax) or SQLite page (64 KiB at most) past the cut point.
const readWindow = 2 << 20

// WriteValue reads content from r to its end, stores its blocks in bs as it
// goes (children before parents, in batches) and returns the value's CID and
// the content's length. The CID is the one NewFileValue gives the same
// bytes. A failure part-way may leave some blocks stored and unreferenced;
// gc removes them.
func WriteValue(ctx context.Context, bs BlockStore, r io.Reader) (CID, uint64, error) {
	return writeValue(ctx, bs, r, true, nil)
}

// WriteVersion is WriteValue for content that is a new version of the value
// prev, whose list nodes k is reading (k.AddVersion(bs, prev)): the blocks
// of prev are not handed to the store again, and of prev's bottom list
// nodes only those under content that changed are read. A chunk waits
// until the list node that will link it is cut: if that node is one of
// prev's (its CID is among prev's bottom nodes), the chunks under it are
// stored already; the chunks of a node that is new wait, in order with
// the nodes above them, until the next node found among prev's says which
// of prev's bottom nodes lie between, and those are read. What is handed
// to the store is then only what those nodes do not name, children still
// before their parents. Without k, or when prev's lists could not be read,
// it is WriteValue through SkipKnown(bs, k).
func WriteVersion(ctx context.Context, bs BlockStore, r io.Reader, k *Known, prev CID) (CID, uint64, error) {
	if k == nil {
		return WriteValue(ctx, bs, r)
	}
	return writeValue(ctx, SkipKnown(bs, k), r, true, &prevWrite{k: k, prev: prev, last: -1})
}

func writeValue(ctx context.Context, bs BlockStore, r io.Reader, sqlite bool, prev *prevWrite) (CID, uint64, error) {
	buf := make([]byte, ChunkThreshold+1, readWindow)
	n, err := io.ReadFull(r, buf)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		b := NewValue(buf[:n:n])
		if err := bs.Put(ctx, b); err != nil {
			return CID{}, 0, err
		}
		return b.CID, uint64(n), nil
	}
	if err != nil {
		return CID{}, 0, err
	}
	// The content's sha256 is computed beside the chunks' (their CIDs), on
	// another core: each range of the window is handed to it as it is read,
	// and the window's bytes are not moved until it is done with them.
	whole := startHasher()
	defer whole.stop()
	whole.add(buf)
	w := &valueWriter{ctx: ctx, bs: bs, whole: whole, prev: prev}
	// A database is cut at its pages when its whole length turns out a whole
	// number of pages (SQLitePageSize); that is known only at the end, so the
	// pages are cut as they come and, should the length not fit, read back
	// from the store and cut again as other content.
	page := 0
	if sqlite {
		page = headerPageSize(buf)
	}
	eof := false
	off := 0 // buf[off:] is the content not yet cut
	for {
		// Top the window up to a whole chunk's worth past the cut point.
		if !eof && len(buf)-off < cdcMax {
			whole.wait()
			w.detach()
			buf = buf[:copy(buf, buf[off:])]
			off = 0
			from := len(buf)
			for !eof && len(buf) < readWindow {
				m, err := r.Read(buf[len(buf):readWindow])
				buf = buf[:len(buf)+m]
				if err == io.EOF {
					eof = true
				} else if err != nil {
					return CID{}, 0, err
				}
			}
			whole.add(buf[from:])
		}
		rest := buf[off:]
		if len(rest) == 0 {
			break
		}
		var end int
		if page > 0 {
			if len(rest) < page {
				// The end, short of a whole page: not a database after all.
				top, err := w.links()
				if err != nil {
					return CID{}, 0, err
				}
				again := io.MultiReader(&chunkReader{ctx: ctx, bs: bs, stack: []chunkFrame{{links: cidsOf(top), want: sumSizes(top)}}},
					bytes.NewReader(rest))
				return writeValue(ctx, bs, again, false, nil)
			}
			end = page
		} else {
			end = cdcCut(rest)
		}
		if err := w.chunk(rest[:end]); err != nil {
			return CID{}, 0, err
		}
		off += end
	}
	c, err := w.finish()
	return c, w.size, err
}

// hasher computes a sha256 in a goroutine of its own, over byte ranges
// given in order (add); a range must not change until wait (or sum) has
// returned. stop ends the goroutine.
type hasher struct {
	h       hash.Hash
	work    chan []byte
	done    chan struct{}
	pending bool
}

func startHasher() *hasher {
	hs := &hasher{h: sha256.New(), work: make(chan []byte), done: make(chan struct{})}
	go func() {
		for b := range hs.work {
			hs.h.Write(b)
			hs.done <- struct{}{}
		}
	}()
	return hs
}

// add hands b to the goroutine after the range before it is hashed.
func (hs *hasher) add(b []byte) {
	hs.wait()
	hs.work <- b
	hs.pending = true
}

// wait returns once every range added is hashed.
func (hs *hasher) wait() {
	if hs.pending {
		<-hs.done
		hs.pending = false
	}
}

// sum is the sha256 of every range added.
func (hs *hasher) sum() []byte {
	hs.wait()
	return hs.h.Sum(nil)
}

func (hs *hasher) stop() {
	if hs.work != nil {
		hs.wait()
		close(hs.work)
		hs.work = nil
	}
}

// cdcCut returns the end of the first content-defined chunk of b, where b
// holds at least cdcMax bytes or all that is left (chunkBounds' rule).
func cdcCut(b []byte) int {
	end := min(cdcMax, len(b))
	if end > cdcMin {
		var h uint64
		for i := cdcMin; i < end; i++ {
			h = h<<1 + gear[b[i]]
			if h&cdcMask == 0 {
				return i + 1
			}
		}
	}
	return end
}

func cidsOf(ls []chunkLink) []CID {
	out := make([]CID, len(ls))
	for i, l := range ls {
		out[i] = l.cid
	}
	return out
}

// valueWriter builds a chunked file node as chunks arrive. Each level of
// links is grouped into list nodes exactly as NewFileValue groups it; since
// a level is grouped only when it ends up with more than MaxChunkLinks
// links, its first links wait until that is known, and afterwards at most
// one group's worth waits.
type valueWriter struct {
	ctx    context.Context
	bs     BlockStore
	whole  *hasher // the whole content's sha256
	size   uint64
	levels []*linkLevel
	batch  []Block
	bytes  int

	// With a previous version (WriteVersion): the chunks of level 0 not
	// yet linked by a list node, in step with levels[0].pending (Data nil
	// for a chunk known stored); the first owned of them hold copies, the
	// others the window's bytes (detach copies them before it moves).
	prev  *prevWrite
	held  []Block
	owned int
}

type linkLevel struct {
	pending []chunkLink
	total   int
}

func (w *valueWriter) chunk(b []byte) error {
	w.size += uint64(len(b))
	blk := NewValue(b)
	known := false
	if s, ok := w.bs.(knownStore); ok && s.knownNow(blk.CID) { // stored already: no copy, no write
		known = true
	}
	if w.prev != nil && w.prev.on() {
		if known {
			blk.Data = nil
		}
		w.held = append(w.held, blk) // decided when its list node is cut
		return w.add(0, chunkLink{blk.CID, uint64(len(b))})
	}
	if known {
		return w.add(0, chunkLink{blk.CID, uint64(len(b))})
	}
	blk.Data = bytes.Clone(b) // the batch outlives the window
	if err := w.emit(blk); err != nil {
		return err
	}
	return w.add(0, chunkLink{blk.CID, uint64(len(b))})
}

// detach copies the chunks held or waiting that still point into the
// window.
func (w *valueWriter) detach() {
	for i := w.owned; i < len(w.held); i++ {
		if w.held[i].Data != nil {
			w.held[i].Data = bytes.Clone(w.held[i].Data)
		}
	}
	w.owned = len(w.held)
	if w.prev != nil {
		w.prev.detach()
	}
}

// emit hands b to the store's batch, after whatever waits on a previous
// version's nodes (so parents never go before their children).
func (w *valueWriter) emit(b Block) error {
	if w.prev != nil && len(w.prev.queue) > 0 {
		return w.prev.wait(w, b)
	}
	return w.emitNow(b)
}

func (w *valueWriter) emitNow(b Block) error {
	w.batch = append(w.batch, b)
	w.bytes += len(b.Data)
	if w.bytes >= writeBatch {
		return w.flush()
	}
	return nil
}

func (w *valueWriter) flush() error {
	if len(w.batch) == 0 {
		return nil
	}
	if err := w.ctx.Err(); err != nil {
		return err
	}
	err := w.bs.Put(w.ctx, w.batch...)
	w.batch, w.bytes = nil, 0
	return err
}

func (w *valueWriter) add(k int, l chunkLink) error {
	if k == len(w.levels) {
		w.levels = append(w.levels, &linkLevel{})
	}
	lv := w.levels[k]
	lv.pending = append(lv.pending, l)
	lv.total++
	if lv.total <= MaxChunkLinks {
		return nil
	}
	return w.group(k, false)
}

// group turns level k's waiting links into list nodes, each ending where
// NewFileValue's would; at the end (last) what is left is one group more.
func (w *valueWriter) group(k int, last bool) error {
	lv := w.levels[k]
	for len(lv.pending) > 0 {
		end := 0
		for i, l := range lv.pending {
			d := l.cid.Digest()
			if size := i + 1; size == MaxChunkLinks || (size >= 2 && d[31]&groupMask == 0) {
				end = i + 1
				break
			}
		}
		if end == 0 {
			if !last {
				return nil
			}
			end = len(lv.pending)
		}
		data := encodeChunkNode(lv.pending[:end], nil)
		nb := Block{CID: Sum(CodecDagCBOR, data), Data: data}
		up := chunkLink{nb.CID, sumSizes(lv.pending[:end])}
		lv.pending = append(lv.pending[:0], lv.pending[end:]...)
		if k == 0 && len(w.held) > 0 {
			err := w.prev.cut(w, nb.CID, w.held[:end])
			w.held = append(w.held[:0], w.held[end:]...)
			w.owned = max(w.owned-end, 0)
			if err != nil {
				return err
			}
		}
		if s, ok := w.bs.(knownStore); !ok || !s.knownNow(nb.CID) {
			if err := w.emit(nb); err != nil {
				return err
			}
		}
		if err := w.add(k+1, up); err != nil {
			return err
		}
	}
	return nil
}

// links closes every level and returns the top one's links (at most
// MaxChunkLinks), every block under them stored.
func (w *valueWriter) links() ([]chunkLink, error) {
	for k := 0; ; k++ {
		if lv := w.levels[k]; lv.total <= MaxChunkLinks {
			if w.prev != nil && w.prev.on() {
				// Chunks the file node links itself, then whatever waits.
				for _, b := range w.held {
					w.prev.hold(b)
				}
				w.held, w.owned = nil, 0
				if err := w.prev.settle(w, -1); err != nil {
					return nil, err
				}
			}
			return lv.pending, w.flush()
		}
		if err := w.group(k, true); err != nil {
			return nil, err
		}
	}
}

func (w *valueWriter) finish() (CID, error) {
	top, err := w.links()
	if err != nil {
		return CID{}, err
	}
	data := encodeChunkNode(top, w.whole.sum())
	root := Block{CID: Sum(CodecDagCBOR, data), Data: data}
	return root.CID, w.bs.Put(w.ctx, root)
}

// OpenValue returns a reader of a value's content and the content's length,
// reading one chunk at a time. A chunked value's list node sizes are checked
// as they are read, and its sha256 at the end: the reader returns an error
// wrapping ErrHashMismatch instead of io.EOF when the content is not what
// the file node records, so a consumer must not treat bytes as good before
// it has seen io.EOF.
func OpenValue(ctx context.Context, bs BlockStore, v CID) (io.Reader, uint64, error) {
	switch v.Codec() {
	case CodecRaw:
		data, err := bs.Get(ctx, v)
		if err != nil {
			return nil, 0, err
		}
		return bytes.NewReader(data), uint64(len(data)), nil
	case CodecDagCBOR:
		cn, err := readFileNode(ctx, bs, v)
		if err != nil {
			return nil, 0, err
		}
		return &chunkReader{ctx: ctx, bs: bs, v: v, h: sha256.New(), sum: cn.SHA256,
			stack: []chunkFrame{{links: cn.Chunks, want: cn.Size}}}, cn.Size, nil
	default:
		return nil, 0, fmt.Errorf("%w: value %s has codec 0x%x, want raw or a chunked file node", ErrBadObject, v, v.Codec())
	}
}

// OpenValueAhead is OpenValue reading up to ahead chunks of a chunked value
// past the one being read, each on its own goroutine, so that fetching them
// (a store lookup, decompression, the check of each against its CID) runs
// on every core while the caller consumes the content. The content and its
// checks are OpenValue's. The caller must Close the reader, which waits for
// the reads under way (so none outlives the caller's use of bs).
func OpenValueAhead(ctx context.Context, bs BlockStore, v CID, ahead int) (io.ReadCloser, uint64, error) {
	rd, size, err := OpenValue(ctx, bs, v)
	if err != nil {
		return nil, 0, err
	}
	cr, ok := rd.(*chunkReader)
	if !ok {
		return io.NopCloser(rd), size, nil
	}
	cr.ahead = ahead
	return cr, size, nil
}

// chunkReader reads the chunks under a list of links in order, without
// recursion: one frame per list node on the path to the current chunk.
type chunkReader struct {
	ctx   context.Context
	bs    BlockStore
	v     CID       // the file node, for errors
	h     hash.Hash // nil: no sha256 to check
	sum   []byte
	stack []chunkFrame
	cur   []byte
	err   error

	// Read-ahead (OpenValueAhead): queue holds the reads started of the
	// raw chunks that come next in the current list node, in order.
	ahead int
	queue []*chunkRead
	wg    sync.WaitGroup
}

type chunkRead struct {
	c     CID
	taken atomic.Bool // by its goroutine or the reader, which then reads it
	data  []byte
	err   error
	done  chan struct{}
}

func (cr *chunkRead) run(ctx context.Context, bs BlockStore) {
	defer close(cr.done)
	cr.data, cr.err = bs.Get(ctx, cr.c)
}

// Close waits for the chunk reads under way and drops them.
func (r *chunkReader) Close() error {
	r.wg.Wait()
	r.queue = nil
	return nil
}

func (r *chunkReader) startRead(c CID) *chunkRead {
	cr := &chunkRead{c: c, done: make(chan struct{})}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if cr.taken.CompareAndSwap(false, true) {
			cr.run(r.ctx, r.bs)
		}
	}()
	return cr
}

// getChunk returns raw chunk c's content; rest are the links that follow
// c in its list node. With read-ahead, the raw chunks among the first of
// rest are read meanwhile.
func (r *chunkReader) getChunk(c CID, rest []CID) ([]byte, error) {
	if r.ahead <= 0 {
		return r.bs.Get(r.ctx, c)
	}
	if len(r.queue) == 0 || r.queue[0].c != c {
		r.Close() // not what is next: cannot happen, but never use a read for another chunk
		r.queue = append(r.queue, r.startRead(c))
	}
	for k := len(r.queue) - 1; k < len(rest) && len(r.queue) <= r.ahead && rest[k].Codec() == CodecRaw; k++ {
		r.queue = append(r.queue, r.startRead(rest[k]))
	}
	// The reader reads the chunk itself when its goroutine has not begun
	// (on a busy machine it may get no core for a while), or a later one
	// while it waits for that goroutine.
	cr := r.queue[0]
	r.queue = r.queue[1:]
	for {
		select {
		case <-cr.done:
			return cr.data, cr.err
		default:
		}
		if cr.taken.CompareAndSwap(false, true) {
			cr.run(r.ctx, r.bs)
			break
		}
		i := slices.IndexFunc(r.queue, func(l *chunkRead) bool { return l.taken.CompareAndSwap(false, true) })
		if i < 0 {
			<-cr.done
			break
		}
		r.queue[i].run(r.ctx, r.bs)
	}
	return cr.data, cr.err
}

type chunkFrame struct {
	links []CID
	want  uint64 // the bytes the node records it covers
	got   uint64
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.cur) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.err = r.next()
	}
	n := copy(p, r.cur)
	r.cur = r.cur[n:]
	return n, nil
}

func (r *chunkReader) fail(err error) error {
	if r.v.IsZero() {
		return err
	}
	return fmt.Errorf("chunked value %s: %w", r.v, err)
}

// next reads the next chunk into cur, or returns the error that ends the read.
func (r *chunkReader) next() error {
	for {
		if err := r.ctx.Err(); err != nil {
			return err
		}
		top := &r.stack[len(r.stack)-1]
		if len(top.links) == 0 {
			if top.got != top.want {
				return r.fail(fmt.Errorf("%w: chunks hold %d bytes, their node records %d", ErrBadObject, top.got, top.want))
			}
			r.stack = r.stack[:len(r.stack)-1]
			if len(r.stack) > 0 {
				continue
			}
			if r.h != nil {
				if got := r.h.Sum(nil); !bytes.Equal(got, r.sum) {
					return fmt.Errorf("%w: chunked value %s: content hashes to %x, its node records %x", ErrHashMismatch, r.v, got, r.sum)
				}
			}
			return io.EOF
		}
		c := top.links[0]
		top.links = top.links[1:]
		if c.Codec() == CodecRaw {
			data, err := r.getChunk(c, top.links)
			if err != nil {
				return r.fail(fmt.Errorf("objects: reading chunk %s: %w", c, err))
			}
			for i := range r.stack {
				f := &r.stack[i]
				if f.got += uint64(len(data)); f.got > f.want {
					return r.fail(fmt.Errorf("%w: chunks hold more than the %d bytes their node records", ErrBadObject, f.want))
				}
			}
			if r.h != nil {
				r.h.Write(data)
			}
			if len(data) == 0 {
				continue
			}
			r.cur = data
			return nil
		}
		if len(r.stack)-1 >= 8 {
			return r.fail(fmt.Errorf("%w: chunk list nodes nested deeper than 8 at %s", ErrBadObject, c))
		}
		data, err := r.bs.Get(r.ctx, c)
		if err != nil {
			return r.fail(fmt.Errorf("objects: reading chunk list %s: %w", c, err))
		}
		cn, err := DecodeChunkNode(data)
		if err != nil {
			return r.fail(fmt.Errorf("chunk list %s: %w", c, err))
		}
		if cn.SHA256 != nil {
			return r.fail(fmt.Errorf("%w: %s: a chunked file node cannot be nested in another", ErrBadObject, c))
		}
		r.stack = append(r.stack, chunkFrame{links: cn.Chunks, want: cn.Size})
	}
}

// ValueTooLargeError reports a value longer than a reader's cap.
type ValueTooLargeError struct {
	CID  CID
	Size uint64
	Max  uint64
}

func (e *ValueTooLargeError) Error() string {
	return fmt.Sprintf("value %s is %d bytes, more than the %d read whole here", e.CID, e.Size, e.Max)
}

// ReadValueMax is ReadValue for content of at most max bytes: the length is
// taken from the chunked file node before any chunk is read, and a longer
// value is a *ValueTooLargeError with no chunk read.
func ReadValueMax(ctx context.Context, bs BlockStore, v CID, max uint64) ([]byte, error) {
	rd, size, err := OpenValue(ctx, bs, v)
	if err != nil {
		return nil, err
	}
	if size > max {
		return nil, &ValueTooLargeError{CID: v, Size: size, Max: max}
	}
	return ReadContent(rd, size)
}

// ReadContent reads the whole of a reader OpenValue returned for content of
// size bytes, with the reader's checks at its end.
func ReadContent(rd io.Reader, size uint64) ([]byte, error) {
	out := make([]byte, size)
	if _, err := io.ReadFull(rd, out); err != nil {
		return nil, err
	}
	var one [1]byte
	if _, err := rd.Read(one[:]); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("%w: a value holds more than its %d bytes", ErrBadObject, size)
		}
		return nil, err
	}
	return out, nil
}

// CopyValue copies a reader OpenValue returned to w, holding the last piece
// read back until the reader has ended cleanly: when a chunked value's
// content fails its checks at the end, w has not received all of it, so a
// consumer that counts the bytes it was promised never takes it for whole.
func CopyValue(w io.Writer, rd io.Reader) (int64, error) {
	if br, ok := rd.(*bytes.Reader); ok {
		// A value held whole (OpenValue of a raw block, already checked):
		// nothing can fail at its end, so nothing is held back, and no
		// buffer is made (a served get of a small value is mostly this).
		return br.WriteTo(w)
	}
	cur, next := make([]byte, 64<<10), make([]byte, 64<<10)
	held := 0 // bytes of cur not yet written
	var n int64
	for {
		m, err := rd.Read(next)
		if m > 0 {
			if held > 0 {
				k, werr := w.Write(cur[:held])
				n += int64(k)
				if werr != nil {
					return n, werr
				}
			}
			cur, next = next, cur
			held = m
		}
		if err == io.EOF {
			k, werr := w.Write(cur[:held])
			return n + int64(k), werr
		}
		if err != nil {
			return n, err
		}
	}
}

// prevQueueMax bounds the bytes WriteVersion holds waiting for a previous
// version's node; past it they go to the store (which looks them up).
const prevQueueMax = 8 << 20

// prevWrite is WriteVersion's state: the previous version's bottom list
// nodes (versionLists), the last of them found in the new version, and the
// blocks waiting to learn which of them lie between.
type prevWrite struct {
	k      *Known
	prev   CID
	vl     *versionLists
	inited bool
	off    bool
	last   int // index in vl.bottom of the last node found again
	queue  []Block
	bytes  int
	owned  int // the first owned of queue are copies; the rest may point into the window
}

// on reports whether the previous version's bottom nodes are known (once
// the read AddVersion started is done).
func (p *prevWrite) on() bool {
	if !p.inited {
		p.inited = true
		p.vl = p.k.version(p.prev)
		p.off = p.vl == nil || len(p.vl.bottom) == 0
	}
	return !p.off
}

// hold queues a chunk that is not known stored. It may point into the
// window: detach copies it before the window moves (most wait only until
// the next node is cut, and are then found stored and dropped).
func (p *prevWrite) hold(b Block) {
	if b.Data != nil {
		p.queue = append(p.queue, b)
		p.bytes += len(b.Data)
	}
}

// detach copies the waiting chunks that still point into the window.
func (p *prevWrite) detach() {
	for i := p.owned; i < len(p.queue); i++ {
		if p.queue[i].CID.Codec() == CodecRaw { // list nodes are the writer's own
			p.queue[i].Data = bytes.Clone(p.queue[i].Data)
		}
	}
	p.owned = len(p.queue)
}

// wait queues b, a list node (its bytes its own), behind the blocks
// waiting.
func (p *prevWrite) wait(w *valueWriter, b Block) error {
	p.queue = append(p.queue, b)
	p.bytes += len(b.Data)
	if p.bytes >= prevQueueMax {
		return p.release(w)
	}
	return nil
}

// cut is called when the list node node is cut over the chunks held. A
// node of the previous version (named by a node read and verified) has its
// chunks stored: they are dropped, and the previous version's nodes since
// the last one found are read so that what waits is decided. Otherwise the
// chunks not known stored wait.
func (p *prevWrite) cut(w *valueWriter, node CID, held []Block) error {
	if q, ok := p.vl.pos[node]; ok {
		if q <= p.last {
			return nil
		}
		return p.settle(w, q)
	}
	for _, b := range held {
		p.hold(b)
	}
	if p.bytes >= prevQueueMax {
		return p.release(w)
	}
	return nil
}

// settle reads the previous version's bottom nodes after the last one found
// and before index end (-1: to the last), when anything waits, then hands
// on what waits and they do not name.
func (p *prevWrite) settle(w *valueWriter, end int) error {
	if end < 0 {
		end = len(p.vl.bottom)
	}
	if len(p.queue) > 0 && end > p.last+1 {
		p.k.readNodes(p.vl.bs, p.vl.bottom[p.last+1:end])
	}
	if end > p.last {
		p.last = end
	}
	return p.release(w)
}

// release hands the waiting blocks on, in order, but those known stored.
func (p *prevWrite) release(w *valueWriter) error {
	q, owned := p.queue, p.owned
	p.queue, p.bytes, p.owned = nil, 0, 0
	for i, b := range q {
		if p.k.Has(b.CID) {
			continue
		}
		if i >= owned && b.CID.Codec() == CodecRaw {
			b.Data = bytes.Clone(b.Data) // the batch outlives the window
		}
		if err := w.emitNow(b); err != nil {
			return err
		}
	}
	return nil
}
