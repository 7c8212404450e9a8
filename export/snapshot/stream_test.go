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
	"github.com/agentstate/agentstate/objects/objectstest"
)

// A tar streams each value; one whose content fails its checks fails the
// tar, and an honest one round-trips.
func TestWriteTarStreamsValues(t *testing.T) {
	ctx := context.Background()
	big := make([]byte, 4<<20+1)
	rand.NewChaCha8(sha256.Sum256([]byte("tar"))).Read(big)
	bs := memstore.New()
	root, last, err := objectstest.OneBigValue(ctx, bs, "big.bin", big)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := objects.TreeBundleHash(ctx, bs, root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.WriteTar(ctx, io.Discard, objectstest.Liar{BlockStore: bs, Lie: last}, root, bundle, nil); !errors.Is(err, objects.ErrHashMismatch) {
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
