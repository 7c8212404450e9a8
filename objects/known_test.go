package objects_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// failGets is a block store whose Get of one CID fails.
type failGets struct {
	objects.BlockStore
	bad objects.CID
}

func (f failGets) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	if c == f.bad {
		return nil, errors.New("unreadable")
	}
	return f.BlockStore.Get(ctx, c)
}

// TestStoredChunksNamesEveryBlock: the list nodes of a value several levels
// deep are read (side by side, level by level) and every block of the value
// is named, no more; a list node that cannot be read leaves out what is
// below it and nothing else is wrong.
func TestStoredChunksNamesEveryBlock(t *testing.T) {
	ctx := context.Background()
	content := fakeSQLite(32768, 512, 41) // three levels of list nodes
	v, blocks := objects.NewFileValue(content)
	bs := memstore.New()
	if err := bs.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	want := map[objects.CID]bool{}
	var lists []objects.CID
	for _, b := range blocks {
		want[b.CID] = true
		if b.CID.Codec() == objects.CodecDagCBOR && b.CID != v {
			lists = append(lists, b.CID)
		}
	}
	got := objects.StoredChunks(ctx, bs, v)
	if len(got) != len(want) {
		t.Fatalf("StoredChunks named %d blocks, the value has %d", len(got), len(want))
	}
	for c := range got {
		if !want[c] {
			t.Fatalf("StoredChunks named %s, not a block of the value", c)
		}
	}
	if len(lists) < 2 {
		t.Fatalf("want a value with list nodes below its file node, got %d", len(lists))
	}
	// One list node unreadable: what it links is left out (unless linked
	// elsewhere), everything named is still a block of the value.
	bad := lists[len(lists)-1]
	part := objects.StoredChunks(ctx, failGets{bs, bad}, v)
	if len(part) >= len(want) {
		t.Fatalf("with %s unreadable StoredChunks still named %d of %d blocks", bad, len(part), len(want))
	}
	for c := range part {
		if !want[c] {
			t.Fatalf("StoredChunks named %s, not a block of the value", c)
		}
	}
}

// unverified is a block store whose Get hands back whatever bytes it holds
// for a CID, without checking them (a store that does not verify on read).
type unverified struct {
	objects.BlockStore
	lies map[objects.CID][]byte
}

func (u unverified) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	if d, ok := u.lies[c]; ok {
		return d, nil
	}
	return u.BlockStore.Get(ctx, c)
}

// TestKnownOnlyFromVerifiedNodes: a block is known stored only when a node
// naming it was read from the store and its bytes hash to its CID. A value
// the store does not hold names nothing (not even itself), and a list node
// whose bytes are another node's (a store that does not check what it
// reads) names nothing: what that other node links is not taken for stored.
func TestKnownOnlyFromVerifiedNodes(t *testing.T) {
	ctx := context.Background()
	v, blocks := objects.NewFileValue(fakeSQLite(4096, 512, 7))
	other, otherBlocks := objects.NewFileValue(fakeSQLite(4096, 512, 8))
	bs := memstore.New()
	if err := bs.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	if got := objects.StoredChunks(ctx, bs, other); len(got) != 0 {
		t.Fatalf("a value not in the store: %d blocks known stored, want none", len(got))
	}
	var list, otherList objects.Block
	for _, b := range blocks {
		if b.CID.Codec() == objects.CodecDagCBOR && b.CID != v {
			list = b
		}
	}
	for _, b := range otherBlocks {
		if b.CID.Codec() == objects.CodecDagCBOR && b.CID != other {
			otherList = b
		}
	}
	if list.CID.IsZero() || otherList.CID.IsZero() {
		t.Fatal("want values with list nodes")
	}
	lying := unverified{bs, map[objects.CID][]byte{list.CID: otherList.Data}}
	got := objects.StoredChunks(ctx, lying, v)
	otherBlock := map[objects.CID]bool{}
	for _, b := range otherBlocks {
		otherBlock[b.CID] = true
	}
	for c := range got {
		if otherBlock[c] {
			t.Fatalf("%s, linked only by the substituted bytes, is known stored", c)
		}
	}
	if _, ok := got[v]; !ok {
		t.Fatalf("the file node, read and verified, is not known stored")
	}
}

// TestSkipKnownWhileReading: a new version written through SkipKnown while
// the previous version's lists are still being read ends up whole in the
// store (every block readable), and the store is handed only blocks the
// previous version did not have, however far the reads had got.
func TestSkipKnownWhileReading(t *testing.T) {
	ctx := context.Background()
	const pages, pageSize = 8192, 512
	content := fakeSQLite(pages, pageSize, 11)
	old, blocks := objects.NewFileValue(content)
	for round := range 4 {
		bs := memstore.New()
		if err := bs.Put(ctx, blocks...); err != nil {
			t.Fatal(err)
		}
		had := map[objects.CID]bool{}
		for _, b := range blocks {
			had[b.CID] = true
		}
		next := bytes.Clone(content)
		for _, p := range []int{1, 100 + round, 4000, 8190} {
			copy(next[p*pageSize+20:], "rewritten")
		}
		k := objects.NewKnown(ctx)
		k.Add(bs, old)
		pc := &putCounting{BlockStore: bs, had: had}
		v, _, err := objects.WriteValue(ctx, objects.SkipKnown(pc, k), bytes.NewReader(next))
		k.Stop()
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := objects.NewFileValue(next); v != want {
			t.Fatalf("round %d: value %s, NewFileValue gives %s", round, v, want)
		}
		got, err := objects.ReadValue(ctx, bs, v)
		if err != nil || !bytes.Equal(got, next) {
			t.Fatalf("round %d: the new version read back: %v", round, err)
		}
		if pc.again > 0 {
			t.Fatalf("round %d: %d blocks of the previous version handed to the store again", round, pc.again)
		}
	}
}

// putCounting counts blocks handed to Put that the store had before.
type putCounting struct {
	objects.BlockStore
	had   map[objects.CID]bool
	mu    sync.Mutex
	again int
}

func (p *putCounting) Put(ctx context.Context, blocks ...objects.Block) error {
	p.mu.Lock()
	for _, b := range blocks {
		if p.had[b.CID] {
			p.again++
		}
	}
	p.mu.Unlock()
	return p.BlockStore.Put(ctx, blocks...)
}
