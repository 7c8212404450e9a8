package snapshot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

type lastChunkLiar struct {
	objects.BlockStore
	lie objects.CID
}

func (s lastChunkLiar) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	data, err := s.BlockStore.Get(ctx, c)
	if err == nil && c == s.lie {
		data = append([]byte(nil), data...)
		data[0] ^= 1
	}
	return data, err
}

// A tar streams each value; one whose content fails its checks fails the
// tar, and an honest one round-trips.
func TestWriteTarStreamsValues(t *testing.T) {
	ctx := context.Background()
	big := make([]byte, 4<<20+1)
	rand.NewChaCha8(sha256.Sum256([]byte("tar"))).Read(big)
	bs := memstore.New()
	v, blocks := objects.NewFileValue(big)
	if err := bs.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	tr := objects.NewTree(bs)
	if _, err := tr.Put(ctx, "big.bin", v); err != nil {
		t.Fatal(err)
	}
	root, nodes := tr.Flush()
	if err := bs.Put(ctx, nodes...); err != nil {
		t.Fatal(err)
	}
	bundle, err := objects.TreeBundleHash(ctx, bs, root)
	if err != nil {
		t.Fatal(err)
	}
	var last objects.CID
	for _, b := range blocks {
		if b.CID.Codec() == objects.CodecRaw {
			last = b.CID
		}
	}
	if _, err := snapshot.WriteTar(ctx, io.Discard, lastChunkLiar{bs, last}, root, bundle, nil); !errors.Is(err, objects.ErrHashMismatch) {
		t.Fatalf("tar of a value that fails its checks: %v", err)
	}
	var buf bytes.Buffer
	if _, err := snapshot.WriteTar(ctx, &buf, bs, root, bundle, nil); err != nil {
		t.Fatal(err)
	}
	back := memstore.New()
	imp, err := snapshot.ReadTar(ctx, &buf, back, false)
	if err != nil || imp.Tree != root {
		t.Fatalf("round trip: %v, tree %v want %s", err, imp, root)
	}
}
