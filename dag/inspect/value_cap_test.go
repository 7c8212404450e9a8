package inspect_test

import (
	"context"
	"io"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
)

// countingStore counts the raw chunks read.
type countingStore struct {
	objects.BlockStore
	chunks int
}

func (s *countingStore) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	if c.Codec() == objects.CodecRaw {
		s.chunks++
	}
	return s.BlockStore.Get(ctx, c)
}

// The cap MCP and the page's preview put on a value is checked against its
// file node: a value over it reads no chunk. Open streams the value whole.
func TestGetCapReadsNoChunk(t *testing.T) {
	ctx := context.Background()
	r := repo.New(memory.New())
	content := make([]byte, 3<<20)
	for i := range content {
		content[i] = byte(i * 7 / 5)
	}
	v, blocks := objects.NewFileValue(content)
	if _, err := r.Edit(ctx, repo.EditRequest{Agent: "lumen", Message: "big", Create: true, Blocks: blocks,
		Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, "big", v) }}); err != nil {
		t.Fatal(err)
	}
	cs := &countingStore{BlockStore: r.Blocks}
	r.Blocks = cs
	vw := inspect.New(r)
	got, err := vw.Get(ctx, "lumen", "HEAD", "big", 256<<10)
	if err != nil || !got.Truncated || got.Size != uint64(len(content)) || got.Data != nil {
		t.Fatalf("capped get: %+v, %v", got, err)
	}
	if cs.chunks != 0 {
		t.Fatalf("a capped get of a %d-byte value read %d chunks", len(content), cs.chunks)
	}
	val, rd, err := vw.Open(ctx, "lumen", "HEAD", "big")
	if err != nil || val.Size != uint64(len(content)) {
		t.Fatalf("open: %+v, %v", val, err)
	}
	back, err := io.ReadAll(rd)
	if err != nil || string(back) != string(content) {
		t.Fatalf("open read back %d bytes: %v", len(back), err)
	}
}
