// Package storagetest is the conformance suite every implementation of a
// repository's storage interfaces runs: the Badger store
// (dag/repo/storage/badger), the in-memory one (dag/repo/storage/memory)
// and the served store's client (dag/repo/remote). One function per
// interface; objects.BlockStore's is objects/blockstoretest. One test,
// dag/repo/storage's conformance_test.go, runs every implementation
// through every suite.
package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/tape"
)

// RefStore checks a refs.Store: compare-and-swap semantics (including
// under concurrency), record order, isolation between agents whose names
// share a prefix, and that returned bytes are copies.
func RefStore(t *testing.T, newStore func(t *testing.T) refs.Store) {
	ctx := context.Background()
	t.Run("SwapHead", func(t *testing.T) {
		s := newStore(t)
		if _, ok, err := s.HeadRecord(ctx, "a"); ok || err != nil {
			t.Fatalf("HeadRecord of a new agent: ok=%v err=%v", ok, err)
		}
		if err := s.SwapHead(ctx, "a", []byte("h0"), 1, []byte("e1"), []byte("h1")); !errors.Is(err, refs.ErrSwapped) {
			t.Fatalf("swap from a record that is not there: %v, want ErrSwapped", err)
		}
		must(t, s.SwapHead(ctx, "a", nil, 1, []byte("e1"), []byte("h1")))
		if err := s.SwapHead(ctx, "a", nil, 1, []byte("x"), []byte("x")); !errors.Is(err, refs.ErrSwapped) {
			t.Fatalf("creating an existing agent: %v, want ErrSwapped", err)
		}
		if err := s.SwapHead(ctx, "a", []byte("h0"), 2, []byte("x"), []byte("x")); !errors.Is(err, refs.ErrSwapped) {
			t.Fatalf("stale swap: %v, want ErrSwapped", err)
		}
		must(t, s.SwapHead(ctx, "a", []byte("h1"), 2, []byte("e2"), []byte("h2")))
		h, ok, err := s.HeadRecord(ctx, "a")
		if err != nil || !ok || string(h) != "h2" {
			t.Fatalf("HeadRecord = %q %v %v, want h2", h, ok, err)
		}
		h[0] = 'X' // a copy: the store must not change
		if h, _, _ := s.HeadRecord(ctx, "a"); string(h) != "h2" {
			t.Fatalf("HeadRecord after mutating a returned slice = %q", h)
		}
		if got := logOf(t, s, "a"); !slices.Equal(got, []string{"1:e1", "2:e2"}) {
			t.Fatalf("log = %v (failed swaps must store nothing)", got)
		}
	})
	t.Run("Order", func(t *testing.T) {
		s := newStore(t)
		agents := []string{"b", "a.b", "a", "A", "a-1"}
		for _, a := range agents {
			must(t, s.SwapHead(ctx, a, nil, 1, []byte("e1 "+a), []byte("h "+a)))
		}
		// 300 entries: sequence numbers past one byte still come back in order.
		old := []byte("h a")
		for seq := uint64(2); seq <= 300; seq++ {
			h := []byte(fmt.Sprintf("h a %d", seq))
			must(t, s.SwapHead(ctx, "a", old, seq, []byte(fmt.Sprint(seq)), h))
			old = h
		}
		var names []string
		for r, err := range s.HeadRecords(ctx) {
			must(t, err)
			names = append(names, r.Agent)
		}
		want := slices.Clone(agents)
		slices.Sort(want)
		if !slices.Equal(names, want) {
			t.Fatalf("HeadRecords order = %v, want %v", names, want)
		}
		var seqs []uint64
		for r, err := range s.LogRecords(ctx, "a") {
			must(t, err)
			if r.Agent != "a" {
				t.Fatalf("log of a yields agent %q", r.Agent)
			}
			seqs = append(seqs, r.Seq)
		}
		if len(seqs) != 300 || !slices.IsSorted(seqs) || seqs[0] != 1 {
			t.Fatalf("log of a: %d entries, sorted=%v (entries of a.b or a-1 must not appear)", len(seqs), slices.IsSorted(seqs))
		}
		if got := logOf(t, s, "a.b"); !slices.Equal(got, []string{"1:e1 a.b"}) {
			t.Fatalf("log of a.b = %v", got)
		}
	})
	t.Run("ConcurrentSwap", func(t *testing.T) {
		s := newStore(t)
		must(t, s.SwapHead(ctx, "a", nil, 1, []byte("e1"), []byte("h1")))
		var wins atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.SwapHead(ctx, "a", []byte("h1"), 2, []byte(fmt.Sprint("e2 by ", i)), []byte(fmt.Sprint("h2 by ", i)))
				switch {
				case err == nil:
					wins.Add(1)
				case !errors.Is(err, refs.ErrSwapped):
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("%d of 8 concurrent swaps from the same record won, want exactly 1", wins.Load())
		}
		h, _, _ := s.HeadRecord(ctx, "a")
		log := logOf(t, s, "a")
		if len(log) != 2 || log[1][len("2:e2 by "):] != string(h[len("h2 by "):]) {
			t.Fatalf("HEAD %q and log %v disagree", h, log)
		}
	})
}

func logOf(t *testing.T, s refs.Store, agent string) []string {
	var out []string
	for r, err := range s.LogRecords(context.Background(), agent) {
		must(t, err)
		out = append(out, fmt.Sprintf("%d:%s", r.Seq, r.Data))
	}
	return out
}

// Tape checks a receipt-tape store: numbering, order, isolation, concurrency.
func Tape(t *testing.T, newStore func(t *testing.T) tape.Store) {
	ctx := context.Background()
	s := newStore(t)
	if n, err := s.AppendLines(ctx, "a", [][]byte{[]byte("1"), []byte("2")}); err != nil || n != 2 {
		t.Fatalf("AppendLines = %d, %v; want 2", n, err)
	}
	if n, err := s.AppendLines(ctx, "a.b", [][]byte{[]byte("other")}); err != nil || n != 1 {
		t.Fatalf("AppendLines on another agent = %d, %v; want 1", n, err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.AppendLines(ctx, "a", [][]byte{[]byte(fmt.Sprint("c", i, "x")), []byte(fmt.Sprint("c", i, "y"))}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var lines []string
	for l, err := range s.TapeLines(ctx, "a") {
		must(t, err)
		lines = append(lines, string(l))
	}
	if len(lines) != 18 || lines[0] != "1" || lines[1] != "2" {
		t.Fatalf("tape of a = %v", lines)
	}
	for i := 2; i < 18; i += 2 { // each append's lines stay together
		if lines[i][:2] != lines[i+1][:2] || lines[i][2] != 'x' {
			t.Fatalf("appends interleaved: %v", lines)
		}
	}
}

// MetaStore is a repository's metadata store (repo.MetaStore).
type MetaStore interface {
	GetMeta(ctx context.Context, name string) ([]byte, bool, error)
	SetMeta(ctx context.Context, name string, v []byte) error
	MetaPrefix(ctx context.Context, prefix string, fn func(name string, v []byte) error) error
	DeleteMetaPrefix(ctx context.Context, prefix string) error
}

// Meta checks a metadata store.
func Meta(t *testing.T, newStore func(t *testing.T) MetaStore) {
	ctx := context.Background()
	s := newStore(t)
	if _, ok, err := s.GetMeta(ctx, "x"); ok || err != nil {
		t.Fatalf("GetMeta of nothing: %v %v", ok, err)
	}
	for _, n := range []string{"p/b", "p/a", "q", "p/c", "pp"} {
		must(t, s.SetMeta(ctx, n, []byte("v "+n)))
	}
	must(t, s.SetMeta(ctx, "p/a", []byte("again")))
	if v, ok, err := s.GetMeta(ctx, "p/a"); string(v) != "again" || !ok || err != nil {
		t.Fatalf("GetMeta = %q %v %v", v, ok, err)
	}
	var names []string
	must(t, s.MetaPrefix(ctx, "p/", func(n string, v []byte) error {
		names = append(names, n)
		return nil
	}))
	if !slices.Equal(names, []string{"p/a", "p/b", "p/c"}) {
		t.Fatalf("MetaPrefix(p/) = %v", names)
	}
	stop := errors.New("stop")
	if err := s.MetaPrefix(ctx, "p/", func(string, []byte) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("MetaPrefix does not return fn's error: %v", err)
	}
	must(t, s.DeleteMetaPrefix(ctx, "p/"))
	for _, n := range []string{"p/a", "p/b", "p/c"} {
		if _, ok, _ := s.GetMeta(ctx, n); ok {
			t.Fatalf("%s survived DeleteMetaPrefix", n)
		}
	}
	for _, n := range []string{"q", "pp"} {
		if v, ok, _ := s.GetMeta(ctx, n); !ok || !bytes.Equal(v, []byte("v "+n)) {
			t.Fatalf("%s was deleted with prefix p/", n)
		}
	}
	// DeleteMeta (an optional ability) deletes the record named, not the
	// records it is a prefix of.
	if d, ok := s.(interface {
		DeleteMeta(ctx context.Context, name string) error
	}); ok {
		must(t, d.DeleteMeta(ctx, "p"))
		must(t, d.DeleteMeta(ctx, "q"))
		if _, ok, _ := s.GetMeta(ctx, "q"); ok {
			t.Fatal("q survived DeleteMeta")
		}
		if _, ok, _ := s.GetMeta(ctx, "pp"); !ok {
			t.Fatal("DeleteMeta(p) deleted pp")
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
