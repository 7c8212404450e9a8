package export_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
	"github.com/agentstate/agentstate/objects/objectstest"
)

// putSizes records the bytes of each Put.
type putSizes struct {
	*memstore.Store
	mu   sync.Mutex
	puts []int
}

func (s *putSizes) Put(ctx context.Context, blocks ...objects.Block) error {
	n := 0
	for _, b := range blocks {
		n += len(b.Data)
	}
	s.mu.Lock()
	s.puts = append(s.puts, n)
	s.mu.Unlock()
	return s.Store.Put(ctx, blocks...)
}

// A large file in a brain directory streams into the store a few MiB at a
// time (never one batch holding the whole file), with the value the
// in-memory path gives; small files beside it are stored as before.
func TestStoreFilesStreamsLargeFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	big := make([]byte, 40<<20+123)
	rand.NewChaCha8(sha256.Sum256([]byte("big file"))).Read(big)
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "small.md"), []byte("small\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	files, _, err := export.Scan(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	bs := &putSizes{Store: memstore.New()}
	got := map[string]objects.CID{}
	if err := export.StoreFiles(ctx, bs, files, func(i int, v objects.CID) error { got[files[i].Key] = v; return nil }); err != nil {
		t.Fatal(err)
	}
	want, _ := objects.NewFileValue(big)
	if got["big.bin"] != want || got["small.md"] != objects.NewValue([]byte("small\n")).CID {
		t.Fatalf("values %v, want big.bin %s", got, want)
	}
	for _, n := range bs.puts {
		if n > len(big)/4 {
			t.Fatalf("one Put of %d bytes for a file of %d: the file was held whole", n, len(big))
		}
	}
	if back, err := objects.ReadValue(ctx, bs, want); err != nil || len(back) != len(big) {
		t.Fatalf("reading the value back: %v", err)
	}
}

// A checkout streams each value into its file; a chunked value whose
// content fails its checks leaves no file behind.
func TestCheckoutStreamsValues(t *testing.T) {
	ctx := context.Background()
	big := make([]byte, 5<<20+7)
	rand.NewChaCha8(sha256.Sum256([]byte("checkout"))).Read(big)
	bs := memstore.New()
	root, last, err := objectstest.OneBigValue(ctx, bs, "big.bin", big)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad")
	if _, err := export.Checkout(ctx, objectstest.Liar{BlockStore: bs, Lie: last}, root, bad); !errors.Is(err, objects.ErrHashMismatch) {
		t.Fatalf("checkout of a value that fails its checks: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(bad, "big.bin")); !os.IsNotExist(err) {
		t.Fatalf("a file was left for a value that failed its checks: %v", err)
	}
	good := filepath.Join(t.TempDir(), "good")
	if _, err := export.Checkout(ctx, bs, root, good); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(good, "big.bin")); err != nil || !bytes.Equal(got, big) {
		t.Fatalf("checked-out file: %d bytes, %v", len(got), err)
	}
}
