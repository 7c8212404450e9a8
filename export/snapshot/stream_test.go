package snapshot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

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

// gatedStore lets the first read of a value block return only once a second
// one is under way (or five seconds passed), and counts the value reads in
// progress.
type gatedStore struct {
	objects.BlockStore
	mu       sync.Mutex
	inflight int
	peak     int
	reads    int
	failAt   int // the failAt-th value read fails (0: none)
	second   chan struct{}
	gated    bool
	opened   bool
}

func (s *gatedStore) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	if c.Codec() != objects.CodecRaw {
		return s.BlockStore.Get(ctx, c)
	}
	s.mu.Lock()
	s.inflight++
	s.reads++
	n := s.reads
	s.peak = max(s.peak, s.inflight)
	gate := !s.gated
	s.gated = true
	if s.inflight == 2 && !s.opened {
		s.opened = true
		close(s.second)
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight--
		s.mu.Unlock()
	}()
	if gate {
		select {
		case <-s.second:
		case <-time.After(5 * time.Second):
		}
	}
	if n == s.failAt {
		return nil, &objects.NotFoundError{CID: c}
	}
	return s.BlockStore.Get(ctx, c)
}

func (s *gatedStore) now() (inflight, reads int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight, s.reads
}

func smallBrain(t *testing.T, n int) (objects.BlockStore, objects.CID, objects.BundleHash) {
	t.Helper()
	ctx := context.Background()
	bs := memstore.New()
	tr := objects.NewTree(bs)
	for i := range n {
		v, blocks := objects.NewFileValue(fmt.Appendf(nil, "value %d\n", i))
		if err := bs.Put(ctx, blocks...); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Put(ctx, fmt.Sprintf("notes/%03d.md", i), v); err != nil {
			t.Fatal(err)
		}
	}
	root, err := tr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := objects.TreeBundleHash(ctx, bs, root)
	if err != nil {
		t.Fatal(err)
	}
	return bs, root, bundle
}

// WriteTar reads values ahead of the one it writes, more than one at a
// time, and the tar is the same as one read a value at a time.
func TestWriteTarReadsValuesAhead(t *testing.T) {
	ctx := context.Background()
	bs, root, bundle := smallBrain(t, 40)
	var want bytes.Buffer
	if _, err := snapshot.WriteTar(ctx, &want, bs, root, bundle, nil); err != nil {
		t.Fatal(err)
	}
	gs := &gatedStore{BlockStore: bs, second: make(chan struct{})}
	var got bytes.Buffer
	if _, err := snapshot.WriteTar(ctx, &got, gs, root, bundle, nil); err != nil {
		t.Fatal(err)
	}
	if gs.peak < 2 {
		t.Fatalf("at most %d value read at a time, want values read ahead in parallel", gs.peak)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatal("the tar read ahead differs")
	}
	back := memstore.New()
	if imp, err := snapshot.ReadTar(ctx, &got, back, false); err != nil || imp.Tree != root || imp.Files != 41 {
		t.Fatalf("round trip: %+v, %v", imp, err)
	}
}

// A value that cannot be read fails the tar at that file, and once WriteTar
// has returned nothing reads the store any more.
func TestWriteTarFailsAtTheValueItCannotRead(t *testing.T) {
	ctx := context.Background()
	bs, root, bundle := smallBrain(t, 40)
	gs := &gatedStore{BlockStore: bs, second: make(chan struct{}), failAt: 5}
	var buf bytes.Buffer
	_, err := snapshot.WriteTar(ctx, &buf, gs, root, bundle, nil)
	if !errors.Is(err, objects.ErrNotFound) {
		t.Fatalf("err = %v, want the value's read error", err)
	}
	inflight, reads := gs.now()
	if inflight != 0 {
		t.Fatalf("%d value reads still under way after WriteTar returned", inflight)
	}
	if reads > 5+16 {
		t.Fatalf("%d values read for a tar that failed at the fifth", reads)
	}
	if _, err := snapshot.ReadTar(ctx, &buf, memstore.New(), false); err == nil {
		t.Fatal("the partial tar reads as a whole one")
	}
}

// A chunked value's chunks are read ahead of the one written, more than
// one at a time, and the tar is the same.
func TestWriteTarReadsChunksAhead(t *testing.T) {
	ctx := context.Background()
	big := make([]byte, 3<<20)
	rand.NewChaCha8(sha256.Sum256([]byte("ahead"))).Read(big)
	bs := memstore.New()
	root, _, err := objectstest.OneBigValue(ctx, bs, "big.bin", big)
	if err != nil {
		t.Fatal(err)
	}
	bundle, err := objects.TreeBundleHash(ctx, bs, root)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if _, err := snapshot.WriteTar(ctx, &want, bs, root, bundle, nil); err != nil {
		t.Fatal(err)
	}
	gs := &gatedStore{BlockStore: bs, second: make(chan struct{})}
	var got bytes.Buffer
	if _, err := snapshot.WriteTar(ctx, &got, gs, root, bundle, nil); err != nil {
		t.Fatal(err)
	}
	if gs.peak < 2 {
		t.Fatalf("at most %d chunk read at a time, want chunks read ahead", gs.peak)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatal("the tar read ahead differs")
	}
	if inflight, _ := gs.now(); inflight != 0 {
		t.Fatalf("%d chunk reads under way after WriteTar returned", inflight)
	}
}
