package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs/redaction"
)

// Reading a CARv1 file back into a store (docs/snapshot.md, "CAR import").
// The input is hostile until proven otherwise: every length is bounded
// before anything is allocated, every CID is parsed strictly, every block is
// re-hashed and decoded, the whole graph under the root is checked, and only
// then is anything written to the store.

var (
	// ErrBadCAR marks a CAR that ReadCAR refused for its content: malformed
	// framing, a header other than the canonical one, a block that does not
	// hash to its CID or is not one of the store's objects, a link to a
	// block that is in neither the CAR nor the store, a block the root does
	// not reach, truncation, or a limit exceeded. Errors of the reader or
	// the store, and a cancelled context, are not ErrBadCAR.
	ErrBadCAR = errors.New("snapshot: CAR refused")
	// ErrCARLimit marks a CAR refused because it exceeds one of CAROptions'
	// limits (it is also ErrBadCAR).
	ErrCARLimit = errors.New("snapshot: CAR exceeds a limit")
)

// Defaults of CAROptions.
const (
	DefaultCARMaxBlock  = 2 << 20   // bytes of one block
	DefaultCARMaxStaged = 512 << 20 // bytes of blocks held in memory before the store is written
)

// carMaxHeader bounds the header's length. The only header accepted,
// objects.CARHeader of one CID, is 58 bytes.
const carMaxHeader = 1 << 10

// carPutBatch bounds the bytes of one Put into the store.
const carPutBatch = 4 << 20

// CAROptions bound what ReadCAR accepts. Zero values take the defaults.
type CAROptions struct {
	// MaxBlock is the largest block (its bytes, the CID not counted);
	// default DefaultCARMaxBlock. A frame longer than MaxBlock plus the
	// CID's 36 bytes is refused before it is read.
	MaxBlock int
	// MaxBytes, when positive, is the largest input: reading stops with an
	// error at the first byte beyond it. Zero means no limit (MaxStaged
	// still bounds memory).
	MaxBytes int64
	// MaxStaged bounds the bytes of distinct blocks held in memory until the
	// CAR has been checked whole; default DefaultCARMaxStaged.
	MaxStaged int64
	// Cut, when set, names parent links the caller knows were cut by a
	// forget where the CAR was written (a history pack's manifest lists
	// them): such a parent, in neither the CAR nor the store, is not
	// required.
	Cut func(child, parent objects.CID) bool
	// Redactions, when set, judges the redaction records the CAR carries
	// (raw blocks no link reaches that parse as records, refs/redaction;
	// WriteCARWith writes them): it returns which raw blocks of which
	// values may then be missing (dag.WalkOptions.Absent), or an error that
	// refuses the CAR (a record forged, unsigned, or signed by a key the
	// receiver does not trust). Without it such blocks are refused as
	// unreachable.
	Redactions func(lines [][]byte) (absent func(v, c objects.CID) bool, err error)
}

// CARImport says what ReadCAR read and stored.
type CARImport struct {
	Root   objects.CID // the CAR's root, a commit
	Blocks int         // distinct blocks in the CAR (a repeated block counts once)
	New    int         // of those, blocks the store did not hold before (written)
	Bytes  int64       // bytes of the CAR read (header and frames)
	// Redactions are the records the CAR carried (not stored as blocks:
	// the caller keeps them, as a store keeps its records).
	Redactions [][]byte
}

// ReadCAR reads a CARv1 file (the format WriteCAR writes) into bs. It
// accepts exactly one root, a commit, in the canonical header
// objects.CARHeader(root); every frame's length is bounded, its CID parsed
// strictly and its bytes re-hashed; dag-cbor blocks must be a commit, a tree
// node or a chunk node in canonical form, raw blocks are values; every
// block the root reaches must be in the CAR or already in bs (an
// incremental CAR carries only what the receiver lacks), and every block of
// the CAR must be reached from the root. A block repeated in the CAR is
// stored once. Blocks are held in memory (at most o.MaxStaged bytes) and
// written to bs, children before parents, only once all of that holds: a
// refused CAR writes nothing. Refusals wrap ErrBadCAR and, where they apply,
// objects.ErrHashMismatch, objects.ErrNonCanonical, objects.ErrBadObject,
// objects.ErrBadCID, objects.ErrNotFound, ErrCARLimit and
// io.ErrUnexpectedEOF.
//
// A block already in bs is taken to be whole there, as everywhere in a
// store: a commit's parents are not walked (a forget may have cut them), a
// tree node is checked to fit where the CAR's tree links it (its layer, the
// range of its keys) and a value is not read again. Every block of the CAR
// is checked as the store's readers check it, where it sits
// (objects.CheckTreeNode, objects.CheckValue), with explicit stacks.
func ReadCAR(ctx context.Context, r io.Reader, bs objects.BlockStore, o CAROptions) (CARImport, error) {
	var imp CARImport
	if o.MaxBlock <= 0 {
		o.MaxBlock = DefaultCARMaxBlock
	}
	if o.MaxStaged <= 0 {
		o.MaxStaged = DefaultCARMaxStaged
	}
	cr := &carReader{br: bufio.NewReaderSize(r, 64<<10), max: o.MaxBytes}

	// Header.
	n, err := cr.uvarint(carMaxHeader, "header length")
	if err == io.EOF {
		return imp, badCAR(0, "empty input: %w", io.ErrUnexpectedEOF)
	}
	if err != nil {
		return imp, err
	}
	if n == 0 {
		return imp, badCAR(0, "header length is 0")
	}
	hdr, err := cr.full(int(n), "header")
	if err != nil {
		return imp, err
	}
	root, err := parseCARHeader(hdr)
	if err != nil {
		return imp, err
	}
	imp.Root = root

	// Frames.
	st := newCARStage()
	records := map[objects.CID][]byte{} // blocks that parse as redaction records
	maxFrame := uint64(o.MaxBlock) + 36
	for {
		if err := ctx.Err(); err != nil {
			return imp, err
		}
		at := cr.n
		n, err := cr.uvarint(maxFrame, "frame length")
		if err == io.EOF {
			break // a clean end, between frames
		}
		if err != nil {
			return imp, err
		}
		if n == 0 {
			return imp, badCAR(at, "empty frame")
		}
		frame, err := cr.full(int(n), "frame")
		if err != nil {
			return imp, err
		}
		c, data, err := parseFrame(frame, at, o.MaxBlock)
		if err != nil {
			return imp, err
		}
		if st.has(c) {
			continue // same CID, verified: same bytes; stored once
		}
		if cost := st.cost + blockCost(len(data)); cost > o.MaxStaged {
			return imp, limitCAR(at, "the CAR's blocks would take %d bytes of memory (%d blocks and %d bytes of them, at %d bytes per block beside its bytes), more than %d (MaxStaged), the most held before they are checked", cost, st.len()+1, st.data+int64(len(data)), CARBlockOverhead, o.MaxStaged)
		}
		kind, err := classify(c, data, at)
		if err != nil {
			return imp, err
		}
		st.add(c, frame, kind)
		if o.Redactions != nil && kind == kindValue && bytes.HasPrefix(data, []byte(`{"v":1,"agent":`)) {
			if _, err := redaction.Parse(data); err == nil {
				records[c] = bytes.Clone(data) // the frame's buffer is reused
			}
		}
	}
	imp.Bytes = cr.n
	imp.Blocks = st.len()

	// The root: a commit.
	if m := st.meta(root); m != nil && m.kind != kindCommit {
		return imp, badCAR(-1, "root %s is a %s, not a commit: %w", root, m.kind, objects.ErrBadObject)
	}

	// The graph: everything the root reaches is in the CAR or in bs, and is
	// what its link says it is (Walk decodes commits as commits, tree
	// nodes as tree nodes, chunked values as chunk nodes).
	var absent func(v, c objects.CID) bool
	if len(records) > 0 {
		lines := make([][]byte, 0, len(records))
		for _, l := range records {
			lines = append(lines, l)
		}
		if absent, err = o.Redactions(lines); err != nil {
			return imp, err
		}
	}
	view := &carView{st: st, bs: bs}
	_, problems, err := dag.Walk(ctx, view, []objects.CID{root}, dag.WalkOptions{
		Absent:       absent,
		Reached:      st,
		VerifyValues: true, // chunked values read as the reader reads them
		// What bs holds is whole and checked there: a tree node of it must
		// fit where the CAR links it, a value of it is not read again.
		Held: func(c objects.CID) bool {
			if st.has(c) {
				return false
			}
			ok, err := bs.Has(ctx, c)
			return err == nil && ok
		},
		Cut: func(child, parent objects.CID) bool {
			if st.has(parent) {
				return false
			}
			if o.Cut != nil && o.Cut(child, parent) {
				return true
			}
			ok, err := bs.Has(ctx, parent)
			return err == nil && ok // a commit the store holds is whole there
		},
	})
	if err != nil {
		return imp, fmt.Errorf("snapshot: CAR: checking the graph: %w", err)
	}
	if len(problems) > 0 {
		p := problems[0]
		more := ""
		if len(problems) > 1 {
			more = fmt.Sprintf(" (and %d more problems)", len(problems)-1)
		}
		if errors.Is(p.Err, objects.ErrNotFound) || errors.Is(p.Err, dag.ErrUnknown) {
			return imp, fmt.Errorf("%w: block %s (reached via %s from root %s) is in neither the CAR nor the store%s: %w (%w)", ErrBadCAR, p.CID, p.Via, root, more, objects.ErrNotFound, p.Err)
		}
		var ste storeError
		if errors.As(p.Err, &ste) {
			return imp, fmt.Errorf("snapshot: CAR: reading %s from the store: %w", p.CID, ste.err)
		}
		return imp, fmt.Errorf("%w: block %s (reached via %s from root %s)%s: %w", ErrBadCAR, p.CID, p.Via, root, more, p.Err)
	}
	for i := range st.len() {
		if !st.at(i).reached {
			if line, ok := records[st.cid(i)]; ok {
				imp.Redactions = append(imp.Redactions, line)
				continue
			}
			return imp, badCAR(-1, "block %s is not reachable from the root %s", st.cid(i), root)
		}
	}

	// Store, children before parents, what bs lacks.
	var batch []objects.Block
	batchBytes := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := bs.Put(ctx, batch...); err != nil {
			return fmt.Errorf("snapshot: CAR: storing blocks: %w", err)
		}
		batch, batchBytes = batch[:0], 0
		return nil
	}
	err = st.postorder(root, func(c objects.CID, data []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		ok, err := bs.Has(ctx, c)
		if err != nil {
			return fmt.Errorf("snapshot: CAR: %w", err)
		}
		if ok {
			return nil
		}
		batch = append(batch, objects.Block{CID: c, Data: data})
		batchBytes += len(data)
		imp.New++
		if batchBytes >= carPutBatch {
			return flush()
		}
		return nil
	})
	if err != nil {
		return imp, err
	}
	return imp, flush()
}

// badCAR returns an ErrBadCAR error; at is the input offset (-1: none).
func badCAR(at int64, format string, a ...any) error {
	msg := fmt.Errorf(format, a...)
	if at < 0 {
		return fmt.Errorf("%w: %w", ErrBadCAR, msg)
	}
	return fmt.Errorf("%w: at byte %d: %w", ErrBadCAR, at, msg)
}

// limitCAR returns an error that is both ErrCARLimit and ErrBadCAR.
func limitCAR(at int64, format string, a ...any) error {
	return fmt.Errorf("%w: %w: at byte %d: %s", ErrBadCAR, ErrCARLimit, at, fmt.Sprintf(format, a...))
}

// carReader reads the input, counting and bounding the bytes consumed.
type carReader struct {
	br  *bufio.Reader
	n   int64 // bytes consumed
	max int64 // > 0: at most this many
	buf []byte
}

// uvarint reads an unsigned varint as multiformats defines it (at most 9
// bytes, minimal encoding) whose value must not exceed limit. It returns
// io.EOF, alone, only when the input ends before its first byte.
func (cr *carReader) uvarint(limit uint64, what string) (uint64, error) {
	start := cr.n
	var v uint64
	for i := 0; ; i++ {
		if cr.max > 0 && cr.n >= cr.max {
			if _, err := cr.br.Peek(1); err == io.EOF && i == 0 {
				return 0, io.EOF
			} else if err == nil {
				return 0, limitCAR(cr.n, "the input is longer than %d bytes (MaxBytes)", cr.max)
			}
		}
		b, err := cr.br.ReadByte()
		if err == io.EOF {
			if i == 0 {
				return 0, io.EOF
			}
			return 0, badCAR(start, "truncated in the %s varint: %w", what, io.ErrUnexpectedEOF)
		}
		if err != nil {
			return 0, fmt.Errorf("snapshot: CAR: reading: %w", err)
		}
		cr.n++
		if i == 8 && b&0x80 != 0 {
			return 0, badCAR(start, "%s varint is longer than 9 bytes", what)
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b&0x80 == 0 {
			if b == 0 && i > 0 {
				return 0, badCAR(start, "%s varint is not minimally encoded", what)
			}
			break
		}
		if v > limit {
			break // refused below without reading the rest
		}
	}
	if v > limit {
		if what == "header length" {
			return 0, badCAR(start, "header length %d exceeds %d bytes (not a CARv1 file?)", v, carMaxHeader)
		}
		return 0, limitCAR(start, "%s %d exceeds %d bytes (MaxBlock plus the CID)", what, v, limit)
	}
	return v, nil
}

// full reads exactly n bytes (n is already bounded by the caller) into a
// buffer it reuses at the next call.
func (cr *carReader) full(n int, what string) ([]byte, error) {
	if cr.max > 0 && cr.n+int64(n) > cr.max {
		return nil, limitCAR(cr.n, "a %d-byte %s would take the input beyond %d bytes (MaxBytes)", n, what, cr.max)
	}
	if cap(cr.buf) < n {
		cr.buf = make([]byte, n)
	}
	buf := cr.buf[:n]
	k, err := io.ReadFull(cr.br, buf)
	cr.n += int64(k)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return nil, badCAR(cr.n-int64(k), "truncated %s: %d of %d bytes: %w", what, k, n, io.ErrUnexpectedEOF)
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot: CAR: reading: %w", err)
	}
	return buf, nil
}

// parseCARHeader returns the root of a header, which must be byte for byte
// objects.CARHeader(root) with root a dag-cbor CID. The reading before the
// comparison only serves to say what is wrong with another header.
func parseCARHeader(h []byte) (objects.CID, error) {
	roots, version, err := objects.ParseCARHeader(h)
	if err != nil {
		return objects.CID{}, badCAR(-1, "CAR header: %w", err)
	}
	switch {
	case version == 2:
		return objects.CID{}, badCAR(-1, "CARv2 is not supported: give a CARv1 file (what a store's own CAR export writes)")
	case version != 1:
		return objects.CID{}, badCAR(-1, "CAR header: version %d, want 1", version)
	case len(roots) != 1:
		return objects.CID{}, badCAR(-1, "CAR header has %d roots, want exactly 1 (a commit)", len(roots))
	}
	root := roots[0]
	if root.Codec() != objects.CodecDagCBOR {
		return objects.CID{}, badCAR(-1, "CAR root %s is a value (raw), not a commit: %w", root, objects.ErrBadObject)
	}
	if !bytes.Equal(h, objects.CARHeader(root)) {
		return objects.CID{}, badCAR(-1, "CAR header is not canonical (want exactly %x): %w", objects.CARHeader(root), objects.ErrNonCanonical)
	}
	return root, nil
}

// parseFrame splits a frame into its CID, parsed strictly, and its block,
// re-hashed.
func parseFrame(frame []byte, at int64, maxBlock int) (objects.CID, []byte, error) {
	c, k, err := objects.ReadCID(frame)
	if err != nil {
		return objects.CID{}, nil, badCAR(at, "frame CID: %w", err)
	}
	data := frame[k:]
	if len(data) > maxBlock {
		return objects.CID{}, nil, limitCAR(at, "block %s has %d bytes, more than %d (MaxBlock)", c, len(data), maxBlock)
	}
	if err := objects.Verify(c, data); err != nil {
		return objects.CID{}, nil, badCAR(at, "block %s: its bytes do not hash to its CID: %w", c, err)
	}
	return c, data, nil
}

type blockKind int

const (
	kindValue blockKind = iota
	kindCommit
	kindTree
	kindChunk
)

func (k blockKind) String() string {
	return [...]string{"value", "commit", "tree node", "chunk node"}[k]
}

// classify decodes a verified block as one of the store's objects.
func classify(c objects.CID, data []byte, at int64) (blockKind, error) {
	if c.Codec() == objects.CodecRaw {
		return kindValue, nil
	}
	_, errC := objects.DecodeCommit(data)
	if errC == nil {
		return kindCommit, nil
	}
	_, _, errT := objects.NodeLinks(data)
	if errT == nil {
		return kindTree, nil
	}
	_, errK := objects.ChunkLinks(data)
	if errK == nil {
		return kindChunk, nil
	}
	// Name the kind the block is closest to: one whose decoder found it
	// non-canonical, else all three.
	for _, e := range []struct {
		kind string
		err  error
	}{{"commit", errC}, {"tree node", errT}, {"chunk node", errK}} {
		if errors.Is(e.err, objects.ErrNonCanonical) {
			return 0, badCAR(at, "block %s is a %s not in canonical form: %w", c, e.kind, e.err)
		}
	}
	return 0, badCAR(at, "block %s is not a commit, tree node or chunk node (commit: %v; tree node: %v; chunk node: %w)", c, errC, errT, errK)
}

// links returns the CIDs a staged block of kind links to.
func links(kind blockKind, data []byte) []objects.CID {
	switch kind {
	case kindCommit:
		cm, err := objects.DecodeCommit(data)
		if err != nil {
			return nil
		}
		return append([]objects.CID{cm.Tree}, cm.Parents...)
	case kindTree:
		subs, vals, _ := objects.NodeLinks(data)
		return append(subs, vals...)
	case kindChunk:
		ls, _ := objects.ChunkLinks(data)
		return ls
	}
	return nil
}

// CARBlockOverhead is what ReadCAR counts against MaxStaged for each
// distinct block beside its bytes and its CID's 36: the block's entries in
// the stage's index and list (about 90 bytes) and a share of what checking
// the graph holds per block (the walk's marks, tree nodes' places), rounded
// up. Peak memory of a refused import stays near MaxStaged (measured in
// docs/snapshot.md) however small the blocks.
const CARBlockOverhead = 128

// blockCost is what a block of n bytes counts against MaxStaged.
func blockCost(n int) int64 { return int64(n) + 36 + CARBlockOverhead }

// stageKey is a CID's 36 bytes: a map key without an allocation per block.
type stageKey [36]byte

func keyOf(c objects.CID) (k stageKey, ok bool) {
	s := c.KeyString()
	if len(s) != len(k) {
		return k, false
	}
	copy(k[:], s)
	return k, true
}

// stageMeta is a staged block: its frame (CID then bytes) in the arena.
type stageMeta struct {
	frame   []byte
	kind    blockKind
	reached bool // the graph check reached it (dag.WalkOptions.Reached)
	done    bool // postorder
}

// carStage holds the CAR's blocks until they are checked: the frames in
// large arena chunks, an index by CID, and per block a stageMeta.
type carStage struct {
	index map[stageKey]uint32
	metas [][]stageMeta // in first appearance in the CAR, in chunks of metaChunk (never copied to grow)
	n     int           // blocks staged
	arena []byte        // the chunk being filled
	data  int64         // bytes of blocks
	cost  int64         // what they count against MaxStaged
	other dag.Reach     // blocks reached that are not staged (the store's)
}

const (
	arenaChunk = 4 << 20
	metaChunk  = 1 << 16
)

// at returns the i-th staged block.
func (st *carStage) at(i int) *stageMeta { return &st.metas[i/metaChunk][i%metaChunk] }

func newCARStage() *carStage {
	return &carStage{index: map[stageKey]uint32{}, other: dag.Reach{}}
}

func (st *carStage) len() int { return st.n }

func (st *carStage) add(c objects.CID, frame []byte, kind blockKind) {
	k, _ := keyOf(c)
	if len(frame) > cap(st.arena)-len(st.arena) {
		st.arena = make([]byte, 0, max(arenaChunk, len(frame)))
	}
	st.arena = append(st.arena, frame...)
	f := st.arena[len(st.arena)-len(frame) : len(st.arena) : len(st.arena)]
	if st.n%metaChunk == 0 {
		st.metas = append(st.metas, make([]stageMeta, 0, metaChunk))
	}
	last := &st.metas[len(st.metas)-1]
	*last = append(*last, stageMeta{frame: f, kind: kind})
	st.index[k] = uint32(st.n)
	st.n++
	st.data += int64(len(frame) - 36)
	st.cost += blockCost(len(frame) - 36)
}

func (st *carStage) meta(c objects.CID) *stageMeta {
	k, ok := keyOf(c)
	if !ok {
		return nil
	}
	i, ok := st.index[k]
	if !ok {
		return nil
	}
	return st.at(int(i))
}

func (st *carStage) has(c objects.CID) bool { return st.meta(c) != nil }

// cid returns the CID of the i-th staged block.
func (st *carStage) cid(i int) objects.CID {
	c, _ := objects.CIDFromBytes(st.at(i).frame[:36])
	return c
}

// Has and Add make the stage the graph check's set of blocks reached.
func (st *carStage) Has(c objects.CID) bool {
	if m := st.meta(c); m != nil {
		return m.reached
	}
	return st.other.Has(c)
}

func (st *carStage) Add(c objects.CID) {
	if m := st.meta(c); m != nil {
		m.reached = true
		return
	}
	st.other.Add(c)
}

// postorder calls fn with every staged block, each after the staged blocks
// it links to (children before parents), starting from root, with an
// explicit stack.
func (st *carStage) postorder(root objects.CID, fn func(c objects.CID, data []byte) error) error {
	type frame struct {
		m     *stageMeta
		links []objects.CID
		i     int
	}
	visit := func(start *stageMeta) error {
		if start == nil || start.done {
			return nil
		}
		start.done = true
		stack := []frame{{m: start, links: links(start.kind, start.frame[36:])}}
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.i < len(f.links) {
				l := f.links[f.i]
				f.i++
				if m := st.meta(l); m != nil && !m.done {
					m.done = true
					stack = append(stack, frame{m: m, links: links(m.kind, m.frame[36:])})
				}
				continue
			}
			c, err := objects.CIDFromBytes(f.m.frame[:36])
			if err != nil {
				return err
			}
			if err := fn(c, f.m.frame[36:]); err != nil {
				return err
			}
			stack = stack[:len(stack)-1]
		}
		return nil
	}
	if err := visit(st.meta(root)); err != nil {
		return err
	}
	for i := range st.n {
		if err := visit(st.at(i)); err != nil {
			return err
		}
	}
	return nil
}

// carView is what the graph check walks: the staged blocks, then bs.
type carView struct {
	st *carStage
	bs objects.BlockStore
}

// storeError marks an error of bs itself (not a missing or corrupt block).
type storeError struct{ err error }

func (e storeError) Error() string { return e.err.Error() }
func (e storeError) Unwrap() error { return e.err }

func (v *carView) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	if m := v.st.meta(c); m != nil {
		return m.frame[36:], nil
	}
	data, err := v.bs.Get(ctx, c)
	if err != nil && !errors.Is(err, objects.ErrNotFound) && !errors.Is(err, objects.ErrHashMismatch) && ctx.Err() == nil {
		return nil, storeError{err}
	}
	return data, err
}

func (v *carView) Has(ctx context.Context, c objects.CID) (bool, error) {
	if v.st.has(c) {
		return true, nil
	}
	ok, err := v.bs.Has(ctx, c)
	if err != nil {
		return false, storeError{err}
	}
	return ok, nil
}

func (v *carView) Put(context.Context, ...objects.Block) error {
	return errors.New("snapshot: CAR: the check's view is read-only")
}
