package badger_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

// pageVersions makes n blocks of 4 KiB: a first one and versions of it,
// each a few bytes different from the one before.
func pageVersions(n int, seed uint64) []objects.Block {
	rng := rand.New(rand.NewPCG(seed, seed))
	page := make([]byte, 4096)
	for i := range page {
		page[i] = byte('a' + rng.IntN(8))
	}
	var out []objects.Block
	for range n {
		page = bytes.Clone(page)
		for range 8 {
			page[rng.IntN(len(page))] = byte(rng.Uint32())
		}
		out = append(out, objects.NewValue(page))
	}
	return out
}

func cidsOf(bs []objects.Block) []objects.CID {
	var out []objects.CID
	for _, b := range bs {
		out = append(out, b.CID)
	}
	return out
}

// readAll reads every block back by Get, GetBatch and ScanBlocks and
// checks each is whole.
func readAll(t *testing.T, s *badger.Store, blocks []objects.Block) {
	t.Helper()
	ctx := context.Background()
	want := map[objects.CID][]byte{}
	for _, b := range blocks {
		want[b.CID] = b.Data
		got, err := s.Get(ctx, b.CID)
		if err != nil || !bytes.Equal(got, b.Data) {
			t.Fatalf("Get %s: %v (%d bytes, want %d)", b.CID, err, len(got), len(b.Data))
		}
	}
	if err := s.GetBatch(ctx, cidsOf(blocks), func(i int, data []byte, err error) {
		if err != nil || !bytes.Equal(data, blocks[i].Data) {
			t.Errorf("GetBatch %s: %v", blocks[i].CID, err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	seen := 0
	if err := s.ScanBlocks(ctx, nil, func(c objects.CID, size int64, data []byte) error {
		if w, ok := want[c]; ok {
			seen++
			if !bytes.Equal(data, w) || size != int64(len(w)) {
				t.Errorf("ScanBlocks %s: %d bytes, want %d", c, len(data), len(w))
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if seen != len(want) {
		t.Fatalf("ScanBlocks yielded %d of the %d blocks", seen, len(want))
	}
}

// TestPackRoundTrip: packed blocks read whole by every read path, the pack
// much smaller than the blocks, and packing the same group again changes
// nothing.
func TestPackRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := create(t)
	blocks := pageVersions(40, 1)
	if err := s.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	rep, err := s.Pack(ctx, [][]objects.CID{cidsOf(blocks)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Packs != 1 || rep.Blocks != 40 || rep.Bytes > 40*4096/4 {
		t.Fatalf("pack report %+v: want one pack of 40 blocks, under a quarter of their bytes", rep)
	}
	readAll(t, s, blocks)
	again, err := s.Pack(ctx, [][]objects.CID{cidsOf(blocks)})
	if err != nil || again.Packs != 0 {
		t.Fatalf("packing the same group again: %+v, %v", again, err)
	}
	// Packed anew in two groups: the old pack goes.
	if _, err := s.Pack(ctx, [][]objects.CID{cidsOf(blocks[:20]), cidsOf(blocks[20:])}); err != nil {
		t.Fatal(err)
	}
	packs, err := s.PackMembers(ctx)
	if err != nil || len(packs) != 2 {
		t.Fatalf("%d packs after packing in two groups (%v), want 2", len(packs), err)
	}
	readAll(t, s, blocks)
	if n, err := s.SweepPacks(ctx); err != nil || n != 0 {
		t.Fatalf("sweep: %d, %v", n, err)
	}
}

// TestPackDeleteUnpacksTheRest: deleting a packed block (gc, redaction)
// stores its pack's other blocks whole first and removes the pack, so no
// pack holds the deleted block's bytes; the others still read whole.
func TestPackDeleteUnpacksTheRest(t *testing.T) {
	ctx := context.Background()
	s := create(t)
	blocks := pageVersions(10, 2)
	if err := s.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pack(ctx, [][]objects.CID{cidsOf(blocks)}); err != nil {
		t.Fatal(err)
	}
	// Half of them packed anew: the first pack still holds their bytes,
	// beside the other half, whose keys still point into it.
	if _, err := s.Pack(ctx, [][]objects.CID{cidsOf(blocks[5:])}); err != nil {
		t.Fatal(err)
	}
	if packs, _ := s.PackMembers(ctx); len(packs) != 2 {
		t.Fatalf("%d packs, want 2", len(packs))
	}
	gone := blocks[7].CID
	if err := s.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	packs, err := s.PackMembers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for id, ms := range packs {
		if slices.Contains(ms, gone) {
			t.Fatalf("pack %x still holds the deleted block %s", id, gone)
		}
	}
	if ok, _ := s.Has(ctx, gone); ok {
		t.Fatal("the deleted block is still there")
	}
	rest := slices.Delete(slices.Clone(blocks), 7, 8)
	readAll(t, s, rest)
}

// TestPackMissing: a packed block whose pack is gone reads as an error
// naming the pack (ErrPackMissing), and a scan leaves it out so that its
// reader's Get reports it.
func TestPackMissing(t *testing.T) {
	ctx := context.Background()
	s := create(t)
	blocks := pageVersions(4, 3)
	if err := s.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pack(ctx, [][]objects.CID{cidsOf(blocks)}); err != nil {
		t.Fatal(err)
	}
	packs, _ := s.PackMembers(ctx)
	for id := range packs {
		if err := s.DropPackForTest([]byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Get(ctx, blocks[0].CID)
	var pe *badger.PackError
	if !errors.Is(err, badger.ErrPackMissing) || !errors.As(err, &pe) || pe.CID != blocks[0].CID {
		t.Fatalf("Get of a block whose pack is gone: %v", err)
	}
	n := 0
	if err := s.ScanBlocks(ctx, nil, func(objects.CID, int64, []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the scan yielded %d blocks whose pack is gone", n)
	}
}

// TestPacksSharingAPrefix: with short pointers carrying none of their
// pack's id, every pack shares the one prefix, and each block still reads
// from the pack whose record lists it, by every read path; a regrouping
// drops the packs it replaced, a delete leaves no pack holding the block,
// and repair finds nothing to drop.
func TestPacksSharingAPrefix(t *testing.T) {
	defer badger.SetPointerPrefix(0)()
	ctx := context.Background()
	s := create(t)
	var blocks []objects.Block
	var groups [][]objects.CID
	for i := range 4 {
		bs := pageVersions(12, uint64(10+i))
		blocks = append(blocks, bs...)
		groups = append(groups, cidsOf(bs))
	}
	if err := s.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	if rep, err := s.Pack(ctx, groups); err != nil || rep.Packs != 4 {
		t.Fatalf("pack: %+v, %v", rep, err)
	}
	readAll(t, s, blocks)
	// Regrouped: two packs of two old groups each; the four old packs go.
	if _, err := s.Pack(ctx, [][]objects.CID{append(slices.Clone(groups[0]), groups[1]...), append(slices.Clone(groups[2]), groups[3]...)}); err != nil {
		t.Fatal(err)
	}
	packs, err := s.PackMembers(ctx)
	if err != nil || len(packs) != 2 {
		t.Fatalf("%d packs after regrouping (%v), want 2", len(packs), err)
	}
	readAll(t, s, blocks)
	gone := blocks[30].CID
	if err := s.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	packs, _ = s.PackMembers(ctx)
	for id, ms := range packs {
		if slices.Contains(ms, gone) {
			t.Fatalf("pack %x still holds the deleted block", id)
		}
	}
	rest := slices.Delete(slices.Clone(blocks), 30, 31)
	readAll(t, s, rest)
	if n, err := s.RepairPacks(ctx); err != nil || n != 0 {
		t.Fatalf("repair dropped %d pointers (%v), want none", n, err)
	}
	if n, err := s.SweepPacks(ctx); err != nil || n != 0 {
		t.Fatalf("sweep dropped %d packs (%v), want none", n, err)
	}
}

// TestLongPointers: blocks whose pointers are in the long layout (an
// earlier build's pack) read beside short ones, are counted as their
// pack's users, and are regrouped and deleted like them.
func TestLongPointers(t *testing.T) {
	ctx := context.Background()
	s := create(t)
	blocks := pageVersions(20, 4)
	if err := s.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pack(ctx, [][]objects.CID{cidsOf(blocks)}); err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks[:10] {
		if err := s.LengthenPointer(b.CID); err != nil {
			t.Fatal(err)
		}
	}
	readAll(t, s, blocks)
	if n, err := s.SweepPacks(ctx); err != nil || n != 0 {
		t.Fatalf("sweep dropped %d packs (%v): the long pointers' pack is in use", n, err)
	}
	// Packing the same group again writes it anew (its pointers differ
	// from the ones Pack writes) and leaves one pack.
	if _, err := s.Pack(ctx, [][]objects.CID{cidsOf(blocks)}); err != nil {
		t.Fatal(err)
	}
	if packs, err := s.PackMembers(ctx); err != nil || len(packs) != 1 {
		t.Fatalf("%d packs (%v), want 1", len(packs), err)
	}
	readAll(t, s, blocks)
	for _, b := range blocks[:3] {
		if err := s.LengthenPointer(b.CID); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, blocks[1].CID); err != nil {
		t.Fatal(err)
	}
	packs, _ := s.PackMembers(ctx)
	for id, ms := range packs {
		if slices.Contains(ms, blocks[1].CID) {
			t.Fatalf("pack %x still holds the deleted block", id)
		}
	}
	readAll(t, s, slices.Delete(slices.Clone(blocks), 1, 2))
}

// TestOwnValue: Get hands out a small block's bytes as Badger filled them
// for it, without a copy, and copies a block from the value log, whose
// bytes are Badger's mapping of the file: inTree tells the two apart,
// and the bytes of both stay whole after the store is closed.
func TestOwnValue(t *testing.T) {
	ctx := context.Background()
	s := create(t)
	small := objects.NewValue(bytes.Repeat([]byte("s"), 4096))
	large := objects.NewValue(bytes.Repeat([]byte("l"), 64<<10))
	if err := s.Put(ctx, small, large); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		b    objects.Block
		tree bool
	}{{small, true}, {large, false}} {
		in, err := s.InTree(c.b.CID)
		if err != nil || in != c.tree {
			t.Fatalf("%d bytes: in the tree %v (%v), want %v", len(c.b.Data), in, err, c.tree)
		}
	}
	a, err := s.Get(ctx, small.CID)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Get(ctx, large.CID)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, small.Data) || !bytes.Equal(b, large.Data) {
		t.Fatal("bytes Get returned changed after the store closed")
	}
}
