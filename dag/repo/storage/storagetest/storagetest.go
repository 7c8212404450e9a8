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
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/tape"
)

// A Mover makes the records of one HEAD move for the RefStore suite: the
// sequence number, entry and HEAD record of agent's next operation after
// the HEAD record old (nil: the agent's first), the variant-th of the
// distinct moves that could follow old.
type Mover func(t *testing.T, agent string, old []byte, variant int) (seq uint64, entry, head []byte)

// Opaque is a Mover of bytes no store reads, for a store that keeps the
// records it is given (Badger, memory).
func Opaque(t *testing.T, agent string, old []byte, variant int) (uint64, []byte, []byte) {
	t.Helper()
	var seq uint64
	if old != nil {
		var a string
		var v int
		if _, err := fmt.Sscanf(string(old), "h %s %d %d", &a, &seq, &v); err != nil {
			t.Fatalf("not an Opaque HEAD record: %q", old)
		}
	}
	seq++
	return seq, fmt.Appendf(nil, "e %s %d %d", agent, seq, variant), fmt.Appendf(nil, "h %s %d %d", agent, seq, variant)
}

// Repository returns a Mover of the records a repository writes (a commit
// on the old HEAD's commit, stored in bs, the entry chained to the old
// record, the HEAD record hashing the entry), for a store that admits no
// others: a served store's client, whose server checks every move.
func Repository(bs objects.BlockStore) Mover {
	return func(t *testing.T, agent string, old []byte, variant int) (uint64, []byte, []byte) {
		t.Helper()
		ctx := context.Background()
		prev, err := refs.DecodeHead(old)
		if err != nil {
			t.Fatal(err)
		}
		tree, blocks := objects.NewTree(bs).Flush()
		cm := &objects.Commit{Tree: tree, Time: 1_700_000_000 + int64(prev.Seq),
			Message: fmt.Sprintf("%s %d %d", agent, prev.Seq+1, variant), Metadata: map[string]string{}}
		if !prev.Commit.IsZero() {
			cm.Parents = []objects.CID{prev.Commit}
		}
		b, err := cm.Block()
		if err != nil {
			t.Fatal(err)
		}
		must(t, bs.Put(ctx, append(blocks, b)...))
		e := refs.Entry{Seq: prev.Seq + 1, Prev: prev.Hash, Agent: agent, Op: refs.OpCommit, Old: prev.Commit, New: b.CID, Time: cm.Time}
		entry, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(entry)
		head, err := json.Marshal(refs.Head{Agent: agent, Commit: b.CID, Seq: e.Seq, Hash: hex.EncodeToString(sum[:])})
		if err != nil {
			t.Fatal(err)
		}
		return e.Seq, entry, head
	}
}

// RefStore checks a refs.Store with Opaque records.
func RefStore(t *testing.T, newStore func(t *testing.T) refs.Store) {
	RefStoreWith(t, func(t *testing.T) (refs.Store, Mover) { return newStore(t), Opaque })
}

// RefStoreWith checks a refs.Store, writing the records its Mover makes:
// compare-and-swap semantics (including under concurrency), record order,
// isolation between agents whose names share a prefix, and that returned
// bytes are copies.
func RefStoreWith(t *testing.T, newStore func(t *testing.T) (refs.Store, Mover)) {
	ctx := context.Background()
	t.Run("SwapHead", func(t *testing.T) {
		s, move := newStore(t)
		if _, ok, err := s.HeadRecord(ctx, "a"); ok || err != nil {
			t.Fatalf("HeadRecord of a new agent: ok=%v err=%v", ok, err)
		}
		_, _, h0 := move(t, "a", nil, 9) // a record the store never had
		seq, e, h := move(t, "a", h0, 9)
		if err := s.SwapHead(ctx, "a", h0, seq, e, h); !errors.Is(err, refs.ErrSwapped) {
			t.Fatalf("swap from a record that is not there: %v, want ErrSwapped", err)
		}
		seq1, e1, h1 := move(t, "a", nil, 0)
		must(t, s.SwapHead(ctx, "a", nil, seq1, e1, h1))
		seq, e, h = move(t, "a", nil, 1)
		if err := s.SwapHead(ctx, "a", nil, seq, e, h); !errors.Is(err, refs.ErrSwapped) {
			t.Fatalf("creating an existing agent: %v, want ErrSwapped", err)
		}
		seq, e, h = move(t, "a", h0, 8)
		if err := s.SwapHead(ctx, "a", h0, seq, e, h); !errors.Is(err, refs.ErrSwapped) {
			t.Fatalf("stale swap: %v, want ErrSwapped", err)
		}
		seq2, e2, h2 := move(t, "a", h1, 0)
		must(t, s.SwapHead(ctx, "a", h1, seq2, e2, h2))
		got, ok, err := s.HeadRecord(ctx, "a")
		if err != nil || !ok || !bytes.Equal(got, h2) {
			t.Fatalf("HeadRecord = %q %v %v, want %q", got, ok, err, h2)
		}
		got[0] = 'X' // a copy: the store must not change
		if got, _, _ := s.HeadRecord(ctx, "a"); !bytes.Equal(got, h2) {
			t.Fatalf("HeadRecord after mutating a returned slice = %q", got)
		}
		if got, want := logOf(t, s, "a"), []string{fmt.Sprintf("%d:%s", seq1, e1), fmt.Sprintf("%d:%s", seq2, e2)}; !slices.Equal(got, want) {
			t.Fatalf("log = %v, want %v (failed swaps must store nothing)", got, want)
		}
	})
	t.Run("Order", func(t *testing.T) {
		s, move := newStore(t)
		agents := []string{"b", "a.b", "a", "A", "a-1"}
		var firstAB string
		for _, a := range agents {
			seq, e, h := move(t, a, nil, 0)
			must(t, s.SwapHead(ctx, a, nil, seq, e, h))
			if a == "a.b" {
				firstAB = fmt.Sprintf("%d:%s", seq, e)
			}
		}
		// 300 entries: sequence numbers past one byte still come back in order.
		old, _, _ := s.HeadRecord(ctx, "a")
		for range 299 {
			seq, e, h := move(t, "a", old, 0)
			must(t, s.SwapHead(ctx, "a", old, seq, e, h))
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
		if got := logOf(t, s, "a.b"); !slices.Equal(got, []string{firstAB}) {
			t.Fatalf("log of a.b = %v", got)
		}
	})
	t.Run("ConcurrentSwap", func(t *testing.T) {
		s, move := newStore(t)
		seq1, e1, h1 := move(t, "a", nil, 0)
		must(t, s.SwapHead(ctx, "a", nil, seq1, e1, h1))
		type rec struct {
			seq         uint64
			entry, head []byte
		}
		var moves []rec
		for i := range 8 {
			seq, e, h := move(t, "a", h1, i)
			moves = append(moves, rec{seq, e, h})
		}
		var wins atomic.Int32
		var wg sync.WaitGroup
		for _, m := range moves {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := s.SwapHead(ctx, "a", h1, m.seq, m.entry, m.head)
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
		won := slices.IndexFunc(moves, func(m rec) bool { return bytes.Equal(m.head, h) })
		if len(log) != 2 || won < 0 || log[1] != fmt.Sprintf("%d:%s", moves[won].seq, moves[won].entry) {
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

// Records says how the Meta suite's records are written to a store:
// Name and Value turn the suite's names ("p/a", "q", …: several under the
// prefix "p/", one that only begins with "p") and values into records the
// store admits; NoDelete says the store admits no deletion.
type Records struct {
	Name     func(name string) string
	Value    func(v string) []byte
	NoDelete bool
}

// Kept are the Records of a store that keeps whatever it is given: the
// suite's names and values as they are.
var Kept = Records{Name: func(n string) string { return n }, Value: func(v string) []byte { return []byte(v) }}

// Meta checks a metadata store with the Kept records.
func Meta(t *testing.T, newStore func(t *testing.T) MetaStore) {
	MetaWith(t, newStore, Kept)
}

// MetaWith checks a metadata store, writing records as recs says: get, set
// (and set again), listing by prefix in name order, and deletion by prefix
// and by name; for a store that admits no deletion, that both are refused
// and delete nothing.
func MetaWith(t *testing.T, newStore func(t *testing.T) MetaStore, recs Records) {
	ctx := context.Background()
	s := newStore(t)
	n, val := recs.Name, recs.Value
	if _, ok, err := s.GetMeta(ctx, n("x")); ok || err != nil {
		t.Fatalf("GetMeta of nothing: %v %v", ok, err)
	}
	for _, name := range []string{"p/b", "p/a", "q", "p/c", "pp"} {
		must(t, s.SetMeta(ctx, n(name), val("v "+name)))
	}
	must(t, s.SetMeta(ctx, n("p/a"), val("again")))
	if v, ok, err := s.GetMeta(ctx, n("p/a")); !bytes.Equal(v, val("again")) || !ok || err != nil {
		t.Fatalf("GetMeta = %q %v %v", v, ok, err)
	}
	var names []string
	must(t, s.MetaPrefix(ctx, n("p/"), func(name string, v []byte) error {
		names = append(names, name)
		return nil
	}))
	if !slices.Equal(names, []string{n("p/a"), n("p/b"), n("p/c")}) {
		t.Fatalf("MetaPrefix(p/) = %v", names)
	}
	stop := errors.New("stop")
	if err := s.MetaPrefix(ctx, n("p/"), func(string, []byte) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("MetaPrefix does not return fn's error: %v", err)
	}
	err := s.DeleteMetaPrefix(ctx, n("p/"))
	if recs.NoDelete {
		if err == nil {
			t.Fatal("DeleteMetaPrefix was not refused")
		}
		for _, name := range []string{"p/a", "p/b", "p/c", "q", "pp"} {
			if _, ok, _ := s.GetMeta(ctx, n(name)); !ok {
				t.Fatalf("%s was deleted by a refused DeleteMetaPrefix", name)
			}
		}
	} else {
		must(t, err)
		for _, name := range []string{"p/a", "p/b", "p/c"} {
			if _, ok, _ := s.GetMeta(ctx, n(name)); ok {
				t.Fatalf("%s survived DeleteMetaPrefix", name)
			}
		}
	}
	for _, name := range []string{"q", "pp"} {
		if v, ok, _ := s.GetMeta(ctx, n(name)); !ok || !bytes.Equal(v, val("v "+name)) {
			t.Fatalf("%s was deleted with prefix p/", name)
		}
	}
	// DeleteMeta (an optional ability) deletes the record named, not the
	// records it is a prefix of.
	if d, ok := s.(interface {
		DeleteMeta(ctx context.Context, name string) error
	}); ok {
		if recs.NoDelete {
			if err := d.DeleteMeta(ctx, n("q")); err == nil {
				t.Fatal("DeleteMeta was not refused")
			}
			if _, ok, _ := s.GetMeta(ctx, n("q")); !ok {
				t.Fatal("a refused DeleteMeta deleted q")
			}
			return
		}
		must(t, d.DeleteMeta(ctx, n("p")))
		must(t, d.DeleteMeta(ctx, n("q")))
		if _, ok, _ := s.GetMeta(ctx, n("q")); ok {
			t.Fatal("q survived DeleteMeta")
		}
		if _, ok, _ := s.GetMeta(ctx, n("pp")); !ok {
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
