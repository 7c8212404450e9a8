package snapshot_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
	"github.com/agentstate/agentstate/refs"
	cid "github.com/ipfs/go-cid"
	car "github.com/ipld/go-car/v2"
	carstorage "github.com/ipld/go-car/v2/storage"
)

// carFrame is one block of a CAR.
type carFrame struct {
	cid  objects.CID
	data []byte
}

// splitCAR parses a CAR this package wrote (trusted) into its header and frames.
func splitCAR(t testing.TB, b []byte) ([]byte, []carFrame) {
	t.Helper()
	r := bytes.NewReader(b)
	next := func() []byte {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			t.Fatal(err)
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(r, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hdr := next()
	var frames []carFrame
	for r.Len() > 0 {
		p := next()
		c, err := objects.CIDFromBytes(p[:36])
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, carFrame{c, p[36:]})
	}
	return hdr, frames
}

// joinCAR frames a header and blocks as CARv1.
func joinCAR(hdr []byte, frames ...carFrame) []byte {
	b := binary.AppendUvarint(nil, uint64(len(hdr)))
	b = append(b, hdr...)
	for _, f := range frames {
		b = binary.AppendUvarint(b, uint64(36+len(f.data)))
		b = append(b, f.cid.Bytes()...)
		b = append(b, f.data...)
	}
	return b
}

func reachOf(t testing.TB, bs objects.BlockStore, c objects.CID) dag.Reach {
	t.Helper()
	reach, problems, err := dag.Walk(context.Background(), bs, []objects.CID{c}, dag.WalkOptions{VerifyValues: true})
	if err != nil || len(problems) > 0 {
		t.Fatalf("walk %s: %v %v", c, err, problems)
	}
	return reach
}

// flipLast flips the last byte of a CAR: a byte of its last block.
func flipLast(b []byte) []byte {
	b = slices.Clone(b)
	b[len(b)-1] ^= 0x01
	return b
}

// hostileHeaders are headers ReadCAR must refuse, for a root commit.
func hostileHeaders(root objects.CID) [][]byte {
	value := objects.Sum(objects.CodecRaw, []byte("v"))
	canon := objects.CARHeader(root)
	cidItem := canon[8 : len(canon)-9] // the root link: d8 2a 58 25 00 <CID>
	hdr := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	txt := func(s string) []byte { return append([]byte{0x60 | byte(len(s))}, s...) }
	return [][]byte{
		objects.CARHeader(root, root),                         // two roots
		objects.CARHeader(),                                   // zero roots
		objects.CARHeader(value),                              // a value as root
		{0xa1, 0x67, 'v', 'e', 'r', 's', 'i', 'o', 'n', 0x02}, // CARv2's pragma
		hdr([]byte{0xa3}, txt("roots"), []byte{0x81}, cidItem, txt("extra"), []byte{0x01}, txt("version"), []byte{0x01}), // an extra field
		hdr([]byte{0xa2}, txt("version"), []byte{0x01}, txt("roots"), []byte{0x81}, cidItem),                             // fields out of order
		hdr([]byte{0xa2}, txt("roots"), []byte{0x81}, cidItem, txt("version"), []byte{0x18, 0x01}),                       // a non-minimal integer
		hdr([]byte{0xa2}, txt("roots"), []byte{0x81}, cidItem, txt("version"), []byte{0x03}),                             // version 3
		hdr([]byte{0xa1}, txt("roots"), []byte{0x81}, cidItem),                                                           // no version
		{0x82, 0x01, 0x02}, // not a map
	}
}

// mutateCommitCAR re-encodes root's commit with mutate, hashes the result
// correctly and returns a CAR rooted at it holding the rest of root's blocks.
func mutateCommitCAR(t testing.TB, bs objects.BlockStore, root objects.CID, mutate func([]byte) []byte) []byte {
	t.Helper()
	_, frames := splitCAR(t, carOf(t, bs, root))
	if frames[0].cid != root {
		t.Fatal("the root is not the first frame")
	}
	data := mutate(slices.Clone(frames[0].data))
	frames[0] = carFrame{objects.Sum(objects.CodecDagCBOR, data), data}
	return joinCAR(objects.CARHeader(frames[0].cid), frames...)
}

// nonMinimalTime encodes a commit's 32-bit time as a 64-bit integer.
func nonMinimalTime(b []byte) []byte {
	if b[9] != 0x1a {
		panic("time is not a 32-bit integer")
	}
	return slices.Concat(b[:9], []byte{0x1b, 0, 0, 0, 0}, b[10:])
}

// swapTimeTree puts a commit's "tree" field before its "time" field.
func swapTimeTree(b []byte) []byte {
	if string(b[5:9]) != "time" || string(b[15:19]) != "tree" {
		panic("unexpected commit layout")
	}
	return slices.Concat(b[:4], b[14:60], b[4:14], b[60:])
}

// blockCount counts a store's blocks.
func blockCount(t testing.TB, r *repo.Repo) int {
	t.Helper()
	l, ok := r.Storage.(objects.BlockLister)
	if !ok {
		t.Fatal("storage cannot list blocks")
	}
	n := 0
	for _, err := range l.AllCIDs(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}

// history builds three commits of agent "a" with r.Edit: the brain
// (a chunked value among its files), one key added, one removed.
func history(t *testing.T, r *repo.Repo) []objects.CID {
	t.Helper()
	ctx := context.Background()
	c1 := commitBrain(t, r, "a", brain, keys(brain, false))
	edit := func(msg string, f func(ctx context.Context, tr *objects.Tree) (bool, error), blocks ...objects.Block) objects.CID {
		c, err := r.Edit(ctx, repo.EditRequest{Agent: "a", Message: msg, Blocks: blocks, Edit: f})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	v := objects.NewValue([]byte("# New\n"))
	c2 := edit("add", func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, "skills/new.md", v.CID) }, v)
	c3 := edit("remove", func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Delete(ctx, "skills/access.md") })
	return []objects.CID{c1, c2, c3}
}

// mustRefuse reads in into r and checks the refusal: ErrBadCAR, every
// sentinel in also, and the store unchanged.
func mustRefuse(t *testing.T, r *repo.Repo, in []byte, o snapshot.CAROptions, also ...error) error {
	t.Helper()
	before := blockCount(t, r)
	_, err := snapshot.ReadCAR(context.Background(), bytes.NewReader(in), r.Blocks, o)
	if err == nil {
		t.Fatal("ReadCAR accepted it")
	}
	if !errors.Is(err, snapshot.ErrBadCAR) {
		t.Fatalf("error is not ErrBadCAR: %v", err)
	}
	for _, s := range also {
		if !errors.Is(err, s) {
			t.Fatalf("error is not %v: %v", s, err)
		}
	}
	if after := blockCount(t, r); after != before {
		t.Fatalf("a refused CAR changed the store: %d blocks, had %d", after, before)
	}
	return err
}

// TestReadCARRoundTrip: WriteCAR then ReadCAR into a fresh store gives every
// block and the same root; the history verifies there, and exports again to
// the same bytes.
func TestReadCARRoundTrip(t *testing.T) {
	ctx := context.Background()
	src := newRepo(t)
	cs := history(t, src)
	head := cs[len(cs)-1]
	var buf bytes.Buffer
	st, err := snapshot.WriteCAR(ctx, &buf, src.Blocks, head)
	if err != nil {
		t.Fatal(err)
	}
	dst := newRepo(t)
	before := blockCount(t, dst)
	imp, err := snapshot.ReadCAR(ctx, bytes.NewReader(buf.Bytes()), dst.Blocks, snapshot.CAROptions{})
	if err != nil {
		t.Fatal(err)
	}
	if imp.Root != head || imp.Blocks != st.Blocks || imp.New != st.Blocks || imp.Bytes != int64(buf.Len()) {
		t.Fatalf("import %+v, want root %s, %d blocks all new, %d bytes", imp, head, st.Blocks, buf.Len())
	}
	if got := blockCount(t, dst); got != before+st.Blocks {
		t.Fatalf("store holds %d blocks, want %d", got, before+st.Blocks)
	}
	_, frames := splitCAR(t, buf.Bytes())
	for _, f := range frames {
		data, err := dst.Blocks.Get(ctx, f.cid)
		if err != nil || !bytes.Equal(data, f.data) {
			t.Fatalf("block %s: %v", f.cid, err)
		}
	}
	reach := reachOf(t, dst.Blocks, head)
	if len(reach) != st.Blocks {
		t.Fatalf("walk reaches %d blocks, the CAR holds %d", len(reach), st.Blocks)
	}
	// Give the imported history an agent; the store then verifies clean.
	if _, err := dst.Refs.Move(ctx, refs.Move{Agent: "a", New: head, Op: refs.OpImport, Time: commitOf(t, dst.Blocks, head).Time}); err != nil {
		t.Fatal(err)
	}
	rep, err := dst.Verify(ctx)
	if err != nil || len(rep.Problems) > 0 || rep.Commits != len(cs) || rep.Blocks != st.Blocks {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	if again := carOf(t, dst.Blocks, head); !bytes.Equal(again, buf.Bytes()) {
		t.Fatal("the imported history exports to other bytes")
	}
	// The same CAR again: nothing new.
	imp, err = snapshot.ReadCAR(ctx, bytes.NewReader(buf.Bytes()), dst.Blocks, snapshot.CAROptions{})
	if err != nil || imp.New != 0 || imp.Blocks != st.Blocks {
		t.Fatalf("second import: %+v %v", imp, err)
	}
}

// TestReadCARFromGoCar reads CARv1 files go-car wrote from the same blocks,
// in another order (sorted by CID, the root not first), and refuses the
// CARv2 file go-car writes by default.
func TestReadCARFromGoCar(t *testing.T) {
	ctx := context.Background()
	src := newRepo(t)
	cs := history(t, src)
	head := cs[len(cs)-1]
	_, frames := splitCAR(t, carOf(t, src.Blocks, head))
	slices.SortFunc(frames, func(a, b carFrame) int { return a.cid.Compare(b.cid) })
	// CARv1, streamed.
	var v1 bytes.Buffer
	w, err := carstorage.NewWritable(&v1, []cid.Cid{cid.MustParse(head.String())}, car.WriteAsCarV1(true))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range frames {
		if err := w.Put(ctx, f.cid.KeyString(), f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finalize(); err != nil {
		t.Fatal(err)
	}
	dst := newRepo(t)
	imp, err := snapshot.ReadCAR(ctx, bytes.NewReader(v1.Bytes()), dst.Blocks, snapshot.CAROptions{})
	if err != nil {
		t.Fatal(err)
	}
	if imp.Root != head || imp.Blocks != len(frames) || imp.New != len(frames) {
		t.Fatalf("import %+v, want root %s and %d blocks", imp, head, len(frames))
	}
	reachOf(t, dst.Blocks, head)
	if got := blockCount(t, dst); got != len(frames) {
		t.Fatalf("store holds %d blocks, want %d", got, len(frames))
	}

	// CARv2 (a file: go-car writes its header last).
	f, err := os.Create(filepath.Join(t.TempDir(), "v2.car"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w2, err := carstorage.NewWritable(f, []cid.Cid{cid.MustParse(head.String())})
	if err != nil {
		t.Fatal(err)
	}
	for _, fr := range frames {
		if err := w2.Put(ctx, fr.cid.KeyString(), fr.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w2.Finalize(); err != nil {
		t.Fatal(err)
	}
	v2, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	err = mustRefuse(t, newRepo(t), v2, snapshot.CAROptions{})
	if !strings.Contains(err.Error(), "CARv2 is not supported") {
		t.Fatalf("CARv2: %v", err)
	}
}

// smallCAR is a one-commit history small enough to cut at every byte.
func smallCAR(t *testing.T) (objects.CID, []byte) {
	t.Helper()
	ms := memstore.New()
	c := memCommit(t, ms, objects.CID{}, map[string]string{"system.md": "You are lumen.\n", "memory/facts.json": "{}\n", "skills/x.md": "x\n"}, nil, 1700000000, "seed")
	return c, carOf(t, ms, c)
}

// seeded is a store holding one unrelated commit, so "unchanged" is not
// trivially "empty".
func seeded(t *testing.T) *repo.Repo {
	t.Helper()
	r := newRepo(t)
	commitBrain(t, r, "other", map[string]string{"note.md": "unrelated\n"}, []string{"note.md"})
	return r
}

// TestReadCARTruncated cuts a small CAR at every byte: each prefix is a clean
// refusal (truncated, or, cut between frames, a missing block) and the store
// is unchanged.
func TestReadCARTruncated(t *testing.T) {
	_, full := smallCAR(t)
	_, frames := splitCAR(t, full)
	ends := map[int]bool{}
	at := len(full)
	for i := len(frames) - 1; i >= 0; i-- {
		at -= len(binary.AppendUvarint(nil, uint64(36+len(frames[i].data)))) + 36 + len(frames[i].data)
		ends[at] = true
	}
	r := seeded(t)
	for i := 0; i < len(full); i++ {
		err := mustRefuse(t, r, full[:i], snapshot.CAROptions{})
		switch {
		case ends[i]:
			if !errors.Is(err, objects.ErrNotFound) {
				t.Fatalf("cut at frame boundary %d: %v", i, err)
			}
		default:
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("cut at %d: %v", i, err)
			}
		}
	}
	if _, err := snapshot.ReadCAR(context.Background(), bytes.NewReader(full), r.Blocks, snapshot.CAROptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestReadCARCorruptBlock flips a byte of each block in turn: a hash
// mismatch naming the block.
func TestReadCARCorruptBlock(t *testing.T) {
	_, full := smallCAR(t)
	hdr, frames := splitCAR(t, full)
	r := seeded(t)
	for i, f := range frames {
		bad := slices.Clone(frames)
		data := slices.Clone(f.data)
		data[len(data)/2] ^= 0x20
		bad[i] = carFrame{f.cid, data}
		err := mustRefuse(t, r, joinCAR(hdr, bad...), snapshot.CAROptions{}, objects.ErrHashMismatch)
		if !strings.Contains(err.Error(), f.cid.String()) {
			t.Fatalf("error does not name %s: %v", f.cid, err)
		}
	}
}

// TestReadCARNonCanonical: correctly hashed dag-cbor blocks that are not the
// store's canonical objects are refused.
func TestReadCARNonCanonical(t *testing.T) {
	root, full := smallCAR(t)
	ms := memstore.New()
	if _, err := snapshot.ReadCAR(context.Background(), bytes.NewReader(full), ms, snapshot.CAROptions{}); err != nil {
		t.Fatal(err)
	}
	r := seeded(t)
	mustRefuse(t, r, mutateCommitCAR(t, ms, root, nonMinimalTime), snapshot.CAROptions{}, objects.ErrNonCanonical)
	mustRefuse(t, r, mutateCommitCAR(t, ms, root, swapTimeTree), snapshot.CAROptions{}, objects.ErrBadObject)
	// A tree node with a non-minimal prefix length ("p": 0 as 0x18 0x00).
	hdr, frames := splitCAR(t, full)
	for i, f := range frames {
		if f.cid != commitOf(t, ms, root).Tree {
			continue
		}
		j := bytes.Index(f.data, []byte{0x61, 'p', 0x00})
		data := slices.Concat(f.data[:j+2], []byte{0x18, 0x00}, f.data[j+3:])
		bad := slices.Clone(frames)
		bad[i] = carFrame{objects.Sum(objects.CodecDagCBOR, data), data}
		mustRefuse(t, r, joinCAR(hdr, bad...), snapshot.CAROptions{}, objects.ErrNonCanonical)
	}
	// A dag-cbor block that is none of the store's objects.
	junk := []byte{0xa1, 0x61, 'x', 0x01}
	mustRefuse(t, r, joinCAR(hdr, append(slices.Clone(frames), carFrame{objects.Sum(objects.CodecDagCBOR, junk), junk})...), snapshot.CAROptions{}, objects.ErrBadObject)
}

// TestReadCARHostile: headers, framing, CIDs, limits, graphs.
func TestReadCARHostile(t *testing.T) {
	root, full := smallCAR(t)
	hdr, frames := splitCAR(t, full)
	r := seeded(t)
	for i, h := range hostileHeaders(root) {
		t.Run("header"+string(rune('0'+i)), func(t *testing.T) {
			mustRefuse(t, r, joinCAR(h, frames...), snapshot.CAROptions{})
		})
	}
	check := func(name string, in []byte, o snapshot.CAROptions, want string, also ...error) {
		t.Run(name, func(t *testing.T) {
			err := mustRefuse(t, r, in, o, also...)
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not say %q", err, want)
			}
		})
	}
	check("two roots", joinCAR(objects.CARHeader(root, root), frames...), snapshot.CAROptions{}, "2 roots")
	check("zero roots", joinCAR(objects.CARHeader(), frames...), snapshot.CAROptions{}, "0 roots")
	check("value root", joinCAR(objects.CARHeader(frames[len(frames)-1].cid), frames...), snapshot.CAROptions{}, "is a value", objects.ErrBadObject)
	check("tree root", joinCAR(objects.CARHeader(frames[1].cid), frames...), snapshot.CAROptions{}, "is a tree node, not a commit")
	check("extra field", joinCAR(hostileHeaders(root)[4], frames...), snapshot.CAROptions{}, `unexpected field "extra"`)
	check("header order", joinCAR(hostileHeaders(root)[5], frames...), snapshot.CAROptions{}, "not canonical", objects.ErrNonCanonical)
	check("CARv2 pragma", joinCAR(hostileHeaders(root)[3], frames...), snapshot.CAROptions{}, "CARv2 is not supported")
	check("empty", nil, snapshot.CAROptions{}, "empty input", io.ErrUnexpectedEOF)
	check("huge header", append([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}, full...), snapshot.CAROptions{}, "header length")
	huge := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}
	check("huge varint", append(slices.Clone(full), huge...), snapshot.CAROptions{}, "exceeds", snapshot.ErrCARLimit)
	check("10-byte varint", append(slices.Clone(full), 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), snapshot.CAROptions{}, "longer than 9 bytes")
	check("non-minimal varint", append(slices.Clone(full), 0x80, 0x00), snapshot.CAROptions{}, "not minimally encoded")
	check("empty frame", append(slices.Clone(full), 0x00), snapshot.CAROptions{}, "empty frame")
	// A CIDv0 frame, and a dag-pb CID.
	v0 := append([]byte{0x12, 0x20}, make([]byte, 32)...)
	check("CIDv0", append(joinCAR(hdr, frames...), append([]byte{byte(len(v0) + 1)}, append(v0, 'x')...)...), snapshot.CAROptions{}, "CID", objects.ErrBadCID)
	pb := append([]byte{0x01, 0x70, 0x12, 0x20}, make([]byte, 32)...)
	check("dag-pb", append(joinCAR(hdr, frames...), append([]byte{byte(len(pb) + 1)}, append(pb, 'x')...)...), snapshot.CAROptions{}, "codec 0x70", objects.ErrBadCID)
	// Limits.
	check("MaxBlock", full, snapshot.CAROptions{MaxBlock: 8}, "MaxBlock", snapshot.ErrCARLimit)
	check("MaxBytes", full, snapshot.CAROptions{MaxBytes: int64(len(full) - 1)}, "MaxBytes", snapshot.ErrCARLimit)
	check("MaxStaged", full, snapshot.CAROptions{MaxStaged: 64}, "MaxStaged", snapshot.ErrCARLimit)
	// Graph.
	var missing carFrame
	var without []carFrame
	for _, f := range frames {
		if f.cid.Codec() == objects.CodecRaw && missing.cid.IsZero() {
			missing = f
			continue
		}
		without = append(without, f)
	}
	check("missing block", joinCAR(hdr, without...), snapshot.CAROptions{}, missing.cid.String()+" (reached via value", objects.ErrNotFound)
	stray := objects.NewValue([]byte("nobody links me"))
	check("unreachable block", joinCAR(hdr, append(slices.Clone(frames), carFrame{stray.CID, stray.Data})...), snapshot.CAROptions{}, stray.CID.String()+" is not reachable")

	// Within the limits exactly, and with a block repeated: accepted.
	maxBlock := 0
	for _, f := range frames {
		maxBlock = max(maxBlock, len(f.data))
	}
	dup := joinCAR(hdr, append(slices.Clone(frames), frames[0], frames[2])...)
	imp, err := snapshot.ReadCAR(context.Background(), bytes.NewReader(dup), r.Blocks, snapshot.CAROptions{MaxBlock: maxBlock, MaxBytes: int64(len(dup))})
	if err != nil || imp.Blocks != len(frames) || imp.New != len(frames) || imp.Bytes != int64(len(dup)) {
		t.Fatalf("exact limits, repeated blocks: %+v %v", imp, err)
	}
}

// TestReadCARIncremental: a CAR of only the blocks a store lacks imports
// into that store; into an empty store it fails naming the missing parent
// and writes nothing.
func TestReadCARIncremental(t *testing.T) {
	ctx := context.Background()
	src := newRepo(t)
	cs := history(t, src)
	base, head := cs[0], cs[len(cs)-1]
	have := reachOf(t, src.Blocks, base)
	hdr, frames := splitCAR(t, carOf(t, src.Blocks, head))
	var incr []carFrame
	for _, f := range frames {
		if _, ok := have[f.cid]; !ok {
			incr = append(incr, f)
		}
	}
	if len(incr) == 0 || len(incr) == len(frames) {
		t.Fatalf("incremental CAR holds %d of %d blocks", len(incr), len(frames))
	}
	in := joinCAR(hdr, incr...)

	dst := newRepo(t)
	if _, err := snapshot.ReadCAR(ctx, bytes.NewReader(carOf(t, src.Blocks, base)), dst.Blocks, snapshot.CAROptions{}); err != nil {
		t.Fatal(err)
	}
	n := blockCount(t, dst)
	imp, err := snapshot.ReadCAR(ctx, bytes.NewReader(in), dst.Blocks, snapshot.CAROptions{})
	if err != nil {
		t.Fatal(err)
	}
	if imp.Root != head || imp.Blocks != len(incr) || imp.New != len(incr) {
		t.Fatalf("import %+v, want %d new blocks", imp, len(incr))
	}
	if got := blockCount(t, dst); got != n+len(incr) {
		t.Fatalf("store holds %d blocks, want %d", got, n+len(incr))
	}
	if reach := reachOf(t, dst.Blocks, head); len(reach) != len(frames) {
		t.Fatalf("walk reaches %d blocks, want %d", len(reach), len(frames))
	}

	empty := newRepo(t)
	err = mustRefuse(t, empty, in, snapshot.CAROptions{}, objects.ErrNotFound)
	if !strings.Contains(err.Error(), base.String()) {
		t.Fatalf("error does not name the missing parent %s: %v", base, err)
	}
	if n := blockCount(t, empty); n != 0 {
		t.Fatalf("the empty store holds %d blocks", n)
	}
}

// TestReadCARContext: a cancelled context stops the read; that is not a
// malformed CAR.
func TestReadCARContext(t *testing.T) {
	_, full := smallCAR(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ms := memstore.New()
	_, err := snapshot.ReadCAR(ctx, bytes.NewReader(full), ms, snapshot.CAROptions{})
	if !errors.Is(err, context.Canceled) || errors.Is(err, snapshot.ErrBadCAR) || ms.Len() != 0 {
		t.Fatalf("cancelled: %v, %d blocks", err, ms.Len())
	}
}

// carVector is docs/snapshot.md's CAR test vector: a.md = "hello\n",
// committed at 1700000000 with message "seed", no parents.
const (
	carVectorRoot = "bafyreib4rvybhjwxukj6polldxnvifx43fallpxt3olkhgskfpgd63lkqe"
	carVectorHex  = "3aa265726f6f747381d82a582500017112203c8d7013a6d7a293e7b96b1ddb5416fcd940b5bef3db96a39a4a2bcc3f6d6a816776657273696f6e0176017112203c8d7013a6d7a293e7b96b1ddb5416fcd940b5bef3db96a39a4a2bcc3f6d6a81a56176016474696d651a6553f1006474726565d82a58250001711220b603b4ad1d2713cff1418cbda83ea497072557ac4d3b8ea3af6b40d4dd1e4886676d657373616765647365656467706172656e7473806401711220b603b4ad1d2713cff1418cbda83ea497072557ac4d3b8ea3af6b40d4dd1e4886a2616581a4616b44612e6d646170006174f66176d82a582500015512205891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03616cf62a015512205891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be0368656c6c6f0a"
)

func TestCARVector(t *testing.T) {
	ms := memstore.New()
	root := memCommit(t, ms, objects.CID{}, map[string]string{"a.md": "hello\n"}, nil, 1700000000, "seed")
	got := carOf(t, ms, root)
	if root.String() != carVectorRoot || hex.EncodeToString(got) != carVectorHex {
		t.Fatalf("vector: root %s, CAR\n%x", root, got)
	}
	in, _ := hex.DecodeString(carVectorHex)
	dst := memstore.New()
	imp, err := snapshot.ReadCAR(context.Background(), bytes.NewReader(in), dst, snapshot.CAROptions{})
	if err != nil || imp.Root.String() != carVectorRoot || imp.Blocks != 3 || imp.New != 3 || imp.Bytes != int64(len(in)) {
		t.Fatalf("reading the vector: %+v %v", imp, err)
	}
	doc, err := os.ReadFile("../../docs/snapshot.md")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(string(doc)), "")
	if !strings.Contains(flat, carVectorHex) || !strings.Contains(string(doc), carVectorRoot) {
		t.Fatal("docs/snapshot.md does not hold the CAR test vector")
	}
}

// failingStore fails every read: a store error, not a malformed CAR.
type failingStore struct{ objects.BlockStore }

var errDisk = errors.New("disk on fire")

func (failingStore) Get(context.Context, objects.CID) ([]byte, error) { return nil, errDisk }
func (failingStore) Has(context.Context, objects.CID) (bool, error)   { return false, errDisk }

// TestReadCARStoreError: when the store fails, ReadCAR says so, and does not
// blame the CAR.
func TestReadCARStoreError(t *testing.T) {
	src, base, head := fuzzHistory(t)
	hdr, frames := splitCAR(t, carOf(t, src, head))
	have := reachOf(t, src, base)
	var incr []carFrame
	for _, f := range frames {
		if _, ok := have[f.cid]; !ok {
			incr = append(incr, f)
		}
	}
	ms := memstore.New()
	for _, in := range [][]byte{joinCAR(hdr, frames...), joinCAR(hdr, incr...)} {
		_, err := snapshot.ReadCAR(context.Background(), bytes.NewReader(in), failingStore{ms}, snapshot.CAROptions{})
		if !errors.Is(err, errDisk) || errors.Is(err, snapshot.ErrBadCAR) {
			t.Fatalf("store error: %v", err)
		}
	}
	if ms.Len() != 0 {
		t.Fatalf("%d blocks written", ms.Len())
	}
}
