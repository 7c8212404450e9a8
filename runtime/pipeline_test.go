package runtime

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/export/tarball"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/walrus"
	"github.com/agentstate/agentstate/walrus/localstore"
)

// remote is what survives an operator's amnesia: the blob store and the
// pointer (Walrus and ENS in production; a local blob directory and a
// pointer directory here), plus the operator's keys.
type remote struct {
	blobs   *gatedStore
	pointer snapshot.FilePointer
	cipher  envelope.Cipher
	key     envelope.Key
}

func newRemote(t testing.TB) *remote {
	t.Helper()
	dir := t.TempDir()
	ls, err := localstore.Open(filepath.Join(dir, "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	var key envelope.Key
	copy(key[:], bytes.Repeat([]byte{7}, 32))
	c, err := envelope.NewAESGCM(key, envelope.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &remote{blobs: &gatedStore{Store: ls}, pointer: snapshot.FilePointer{Dir: filepath.Join(dir, "pointers")}, cipher: c, key: key}
}

func (r *remote) options(store string) Options {
	return Options{Store: store, Signer: testKey("operator"), Cipher: r.cipher, Blobs: r.blobs, Pointer: r.pointer}
}

// gatedStore wraps a blob store: Put can be made to block until released
// (or its ctx ends), or to fail after reading half the blob (an upload cut
// off mid-way).
type gatedStore struct {
	walrus.Store
	gate     atomic.Pointer[chan struct{}]
	entered  chan struct{}
	cutOff   atomic.Bool
	puts     atomic.Int64
	finished atomic.Int64
}

func (g *gatedStore) block() chan struct{} {
	ch := make(chan struct{})
	g.entered = make(chan struct{}, 100)
	g.gate.Store(&ch)
	return ch
}

func (g *gatedStore) Put(ctx context.Context, r io.Reader, size int64, opts walrus.StoreOptions) (walrus.Stored, error) {
	g.puts.Add(1)
	if p := g.gate.Load(); p != nil {
		select {
		case g.entered <- struct{}{}:
		default:
		}
		select {
		case <-*p:
		case <-ctx.Done():
			return walrus.Stored{}, ctx.Err()
		}
	}
	if g.cutOff.Load() {
		io.CopyN(io.Discard, r, size/2)
		return walrus.Stored{}, fmt.Errorf("%w: connection reset after %d of %d bytes", walrus.ErrUnavailable, size/2, size)
	}
	st, err := g.Store.Put(ctx, r, size, opts)
	if err == nil {
		g.finished.Add(1)
	}
	return st, err
}

// A blob store that blocks does not slow or fail tasks through the real
// pipeline; once it unblocks, the newest state ships, and a cold start on
// a wiped operator restores it with its receipts.
func TestPipelineBlockedStoreThenColdRestore(t *testing.T) {
	ctx := context.Background()
	rem := newRemote(t)
	gate := rem.blobs.block()
	storeA := filepath.Join(t.TempDir(), "a")
	opts := rem.options(storeA)
	opts.Queue = QueueOptions{Workers: 1}
	rt, err := Open(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for i := range 20 {
		if _, err := rt.RunTask(ctx, "lumen", Task{ID: fmt.Sprintf("t%d", i)}, put("memory/n", fmt.Sprint(i), fmt.Sprintf("skills/s%d.md", i), "body")); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			<-rem.blobs.entered // the first push is inside the blocked store
		}
	}
	if rem.blobs.finished.Load() != 0 {
		t.Fatal("a blob was stored while the store was blocked")
	}
	if _, err := rem.pointer.Read(ctx, "lumen"); !errors.Is(err, snapshot.ErrNoPointer) {
		t.Fatalf("pointer before any push finished: %v", err)
	}
	close(gate)
	if err := rt.WaitSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rem.blobs.puts.Load(); n != 2 {
		t.Fatalf("%d blob puts, want 2 (the blocked one, then the newest commit)", n)
	}
	last := rt.SnapshotStatus("lumen").Last
	head := mustHead(t, rt, "lumen")
	if last == nil || last.Err != nil || last.Commit != head {
		t.Fatalf("last snapshot %+v, HEAD %s", last, head)
	}
	all, _ := snapshot.Records(ctx, rt.repo, "lumen")
	var recs []snapshot.Record // successful pushes (failed ones are recorded too)
	for _, r := range all {
		if r.Error == "" {
			recs = append(recs, r)
		}
	}
	if len(recs) != 2 || recs[1].Commit != head || string(recs[1].BlobID) != last.Result.BlobID {
		t.Fatalf("pipeline records %+v", all)
	}
	v, _ := rt.View(ctx, "lumen", "")
	want, _ := v.BundleHash(ctx)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}

	// Amnesia: the operator's store is gone.
	if err := os.RemoveAll(storeA); err != nil {
		t.Fatal(err)
	}
	rt2 := openWith(t, rem.options(filepath.Join(t.TempDir(), "b")))
	info, err := rt2.Agent(ctx, "lumen")
	if err != nil {
		t.Fatal(err)
	}
	if info.Origin != OriginRestored || info.Restore.Receipts != 20 {
		t.Fatalf("cold start %+v %+v", info, info.Restore)
	}
	v2, _ := rt2.View(ctx, "lumen", "")
	if got, _ := v2.BundleHash(ctx); got != want {
		t.Fatalf("restored bundle %s, want %s", got, want)
	}
	recs2, err := rt2.Receipts(ctx, "lumen")
	if err != nil || len(recs2) != 20 {
		t.Fatalf("receipts after restore: %d %v", len(recs2), err)
	}
	for _, r := range recs2 {
		if err := r.Verify(rt2.PublicKey()); err != nil {
			t.Fatal(err)
		}
	}
	if recs2[19].BundleAfter != want {
		t.Fatal("the last receipt does not end at the restored state")
	}
	// The next task continues the lineage and the receipt chain.
	rec, err := rt2.RunTask(ctx, "lumen", Task{ID: "after"}, put("memory/n", "after"))
	if err != nil || rec.BundleBefore != want {
		t.Fatalf("%+v %v", rec, err)
	}
}

func openWith(t testing.TB, opts Options) *Runtime {
	t.Helper()
	rt, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func TestColdStartFromSeedAndRefusals(t *testing.T) {
	ctx := context.Background()
	seed := t.TempDir()
	for p, c := range map[string]string{"lumen/system.md": "you are lumen", "lumen/skills/a.md": "A", "lumen/bundle.lock.json": "{}"} {
		os.MkdirAll(filepath.Dir(filepath.Join(seed, p)), 0o755)
		os.WriteFile(filepath.Join(seed, p), []byte(c), 0o644)
	}
	rem := newRemote(t)
	opts := rem.options(filepath.Join(t.TempDir(), "s"))
	opts.SeedDir = seed
	rt := openWith(t, opts)
	info, err := rt.Agent(ctx, "lumen")
	if err != nil || info.Origin != OriginSeeded {
		t.Fatalf("%+v %v", info, err)
	}
	if getAt(t, rt, "lumen", "", "skills/a.md") != "A" {
		t.Fatal("seed not committed")
	}
	ents, _ := rt.repo.Refs.Entries(ctx, "lumen")
	if len(ents) != 1 || ents[0].Op != refs.OpImport {
		t.Fatalf("op log %+v", ents)
	}
	if info, _ := rt.Agent(ctx, "lumen"); info.Origin != OriginExisting {
		t.Fatal(info.Origin)
	}
	// No seed, no snapshot: a new, empty agent; the first task creates it.
	if info, err := rt.Agent(ctx, "nobody"); err != nil || info.Origin != OriginNew || !info.Head.IsZero() {
		t.Fatalf("%+v %v", info, err)
	}

	// A snapshot whose content does not hash to the lineage its
	// bundle.lock.json claims is refused, and the seed is not used instead.
	forgeSnapshot(t, rem, "liar", map[string]string{"system.md": "tampered"}, "0x"+fmt.Sprintf("%064x", 1))
	os.MkdirAll(filepath.Join(seed, "liar"), 0o755)
	os.WriteFile(filepath.Join(seed, "liar", "system.md"), []byte("seed"), 0o644)
	_, err = rt.Agent(ctx, "liar")
	if !errors.Is(err, snapshot.ErrLineageMismatch) {
		t.Fatalf("want a lineage refusal, got %v", err)
	}
	if h := mustHead(t, rt, "liar"); !h.IsZero() {
		t.Fatal("a refused restore moved HEAD")
	}
	if _, err := rt.RunTask(ctx, "liar", Task{ID: "t"}, put("k", "v")); !errors.Is(err, snapshot.ErrLineageMismatch) {
		t.Fatalf("first task on a refused agent: %v", err)
	}
}

// forgeSnapshot publishes a snapshot of files whose bundle.lock.json claims
// the given bundle hash.
func forgeSnapshot(t *testing.T, rem *remote, agent string, files map[string]string, claim string) {
	t.Helper()
	ctx := context.Background()
	all := map[string][]byte{objects.LockFile: []byte(fmt.Sprintf(`{"bundleHash":%q,"version":1}`+"\n", claim))}
	for k, v := range files {
		all[k] = []byte(v)
	}
	var keys []string
	for k := range all {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var tarBuf bytes.Buffer
	_, err := tarball.Write(ctx, &tarBuf, func(yield func(tarball.File, error) bool) {
		for _, k := range keys {
			data := all[k]
			if !yield(tarball.File{Path: k, Size: int64(len(data)), Open: func(context.Context) (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader(data)), nil
			}}, nil) {
				return
			}
		}
	}, tarball.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var sealed bytes.Buffer
	if err := rem.cipher.Encrypt(ctx, &sealed, bytes.NewReader(tarBuf.Bytes()), sha256.Sum256(tarBuf.Bytes())); err != nil {
		t.Fatal(err)
	}
	st, err := rem.blobs.Store.Put(ctx, bytes.NewReader(sealed.Bytes()), int64(sealed.Len()), walrus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Bound to the forged bytes (as a push would bind them), so that restore
	// gets as far as the lineage check.
	forged := objects.Sum(objects.CodecDagCBOR, []byte("forged"))
	bind := snapshot.Binding{Blob: st.BlobID, SHA256: sha256.Sum256(sealed.Bytes()), Size: int64(sealed.Len()), Commit: forged, Tree: forged}
	if err := rem.pointer.Write(ctx, agent, bind); err != nil {
		t.Fatal(err)
	}
}

// turns reads the session's turns.
func turns(t testing.TB, rt *Runtime, agent string) []string {
	t.Helper()
	v, err := rt.View(context.Background(), agent, "")
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.Get(context.Background(), "session/history.json")
	if errors.Is(err, ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var h []string
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// turn runs one conversation turn as a task: the input is appended to the
// session history.
func turn(t testing.TB, rt *Runtime, agent, input string) *Receipt {
	t.Helper()
	rec, err := rt.RunTask(context.Background(), agent, Task{ID: "turn:" + input}, func(ctx context.Context, tx *Tx) error {
		var h []string
		b, err := tx.Get(ctx, "session/history.json")
		switch {
		case errors.Is(err, ErrKeyNotFound):
		case err != nil:
			return err
		default:
			if err := json.Unmarshal(b, &h); err != nil {
				return err
			}
		}
		out, _ := json.Marshal(append(h, input))
		return tx.Put(ctx, "session/history.json", out)
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestSessionVector is the session test vector of seed 004, on the real
// snapshot pipeline.
func TestSessionVector(t *testing.T) {
	ctx := context.Background()
	rem := newRemote(t)
	storeA := filepath.Join(t.TempDir(), "a")
	s := openWith(t, rem.options(storeA))
	turn(t, s, "s1", "hello")
	turn(t, s, "s1", "again")
	if err := s.WaitSnapshots(ctx); err != nil { // snap = s.snapshot()
		t.Fatal(err)
	}
	if last := s.SnapshotStatus("s1").Last; last == nil || last.Err != nil {
		t.Fatalf("snapshot: %+v", last)
	}
	// Crash: the process and its whole store are gone.
	s.Close()
	os.RemoveAll(storeA)

	// Resume: restore gives exactly those two turns.
	opts2 := rem.options(filepath.Join(t.TempDir(), "b"))
	opts2.Queue = QueueOptions{Backoff: time.Millisecond, MaxAttempts: 2}
	s2 := openWith(t, opts2)
	info, err := s2.Agent(ctx, "s1")
	if err != nil || info.Origin != OriginRestored {
		t.Fatalf("%+v %v", info, err)
	}
	if h := turns(t, s2, "s1"); !slices.Equal(h, []string{"hello", "again"}) {
		t.Fatalf("restored history %q", h)
	}

	// Fork: diverges independently.
	if _, err := s2.Fork(ctx, "s1", "s1-fork"); err != nil {
		t.Fatal(err)
	}
	turn(t, s2, "s1-fork", "diverge")
	turn(t, s2, "s1", "original")
	if a, b := turns(t, s2, "s1"), turns(t, s2, "s1-fork"); slices.Equal(a, b) ||
		!slices.Equal(a, []string{"hello", "again", "original"}) || !slices.Equal(b, []string{"hello", "again", "diverge"}) {
		t.Fatalf("s1 %q, fork %q", a, b)
	}

	// Audit: the original's trail shows three turns (two restored with the
	// snapshot, one after the fork), each signed, chained end to end.
	recs, err := s2.Receipts(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var tasks []string
	for i, r := range recs {
		if err := r.Verify(s2.PublicKey()); err != nil {
			t.Fatal(err)
		}
		if i > 0 && r.BundleBefore != recs[i-1].BundleAfter {
			t.Fatalf("receipt %d does not chain", i)
		}
		tasks = append(tasks, r.Task)
	}
	if !slices.Equal(tasks, []string{"turn:hello", "turn:again", "turn:original"}) {
		t.Fatalf("audit trail %q", tasks)
	}
	if err := s2.WaitSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	before := turns(t, s2, "s1")

	// A crash in the middle of a save: the upload is cut off half-way, so
	// the pointer stays at the last valid snapshot.
	rem.blobs.cutOff.Store(true)
	turn(t, s2, "s1", "unsaved")
	if err := s2.WaitSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	if last := s2.SnapshotStatus("s1").Last; last == nil || last.Err == nil {
		t.Fatalf("the cut-off save should have failed: %+v", last)
	}
	s2.Close()
	rem.blobs.cutOff.Store(false)
	s3 := openWith(t, rem.options(filepath.Join(t.TempDir(), "c")))
	if _, err := s3.Agent(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if h := turns(t, s3, "s1"); !slices.Equal(h, before) {
		t.Fatalf("after a crash mid-save: %q, want the last valid %q", h, before)
	}
	if h := turns(t, s3, "s1-fork"); !slices.Equal(h, []string{"hello", "again", "diverge"}) {
		t.Fatalf("fork restored as %q", h)
	}
}

// TestHistoryColdStart: with Options.History the snapshots ship the whole
// history, and a cold start on a wiped store rebuilds it: the log commit for
// commit, every receipt verified against its real commit; without a
// published history the cold start falls back to the snapshot.
func TestHistoryColdStart(t *testing.T) {
	ctx := context.Background()
	rem := newRemote(t)
	opts := rem.options(filepath.Join(t.TempDir(), "a"))
	opts.History = true
	s := openWith(t, opts)
	for _, in := range []string{"hello", "again", "more"} {
		turn(t, s, "s1", in)
	}
	if err := s.WaitSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	turn(t, s, "s1", "last")
	if err := s.WaitSnapshots(ctx); err != nil {
		t.Fatal(err)
	}
	last := s.SnapshotStatus("s1").Last
	if last == nil || last.Err != nil || last.Result.HistoryPacks < 1 {
		t.Fatalf("snapshot: %+v", last)
	}
	logOf := func(rt *Runtime) []objects.CID {
		h, err := rt.Head(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		var out []objects.CID
		for le, err := range dag.Log(ctx, rt.repo.Blocks, h) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, le.CID)
		}
		return out
	}
	want := logOf(s)
	s.Close()
	os.RemoveAll(opts.Store)

	opts2 := rem.options(filepath.Join(t.TempDir(), "b"))
	opts2.History = true
	s2 := openWith(t, opts2)
	info, err := s2.Agent(ctx, "s1")
	if err != nil || info.Origin != OriginRestored || info.Restore == nil || !info.Restore.History || info.Restore.Receipts != 4 {
		t.Fatalf("%+v %v", info, err)
	}
	if got := logOf(s2); !slices.Equal(got, want) || len(got) != 4 {
		t.Fatalf("restored log %v, want %v", got, want)
	}
	recs, err := s2.Receipts(ctx, "s1")
	if err != nil || len(recs) != 4 {
		t.Fatalf("receipts: %d %v", len(recs), err)
	}
	for _, r := range recs {
		if err := r.Verify(s2.PublicKey()); err != nil {
			t.Fatal(err)
		}
		if _, err := s2.repo.Commit(ctx, r.Commit); err != nil {
			t.Fatalf("receipt of %s: its commit is not in the restored store: %v", r.Task, err)
		}
	}
	s2.Close()

	// No history published (the file is gone): the snapshot, as before.
	os.Remove(filepath.Join(rem.pointer.Dir, "s1.history"))
	opts3 := rem.options(filepath.Join(t.TempDir(), "c"))
	opts3.History = true
	s3 := openWith(t, opts3)
	info, err = s3.Agent(ctx, "s1")
	if err != nil || info.Origin != OriginRestored || info.Restore.History {
		t.Fatalf("fallback: %+v %v", info, err)
	}
	if h := turns(t, s3, "s1"); !slices.Equal(h, []string{"hello", "again", "more", "last"}) {
		t.Fatalf("fallback restored %q", h)
	}
}
