package objects_test

import (
	"context"
	"errors"
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
