package snapshot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"github.com/agentstate/agentstate/refs/tape"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/walrus"
	"github.com/agentstate/agentstate/walrus/httpstore"
	"github.com/agentstate/agentstate/walrus/localstore"
	"github.com/agentstate/agentstate/walrus/walrustest"
)

// unmoved fails the test if the agent's HEAD or operation log changed.
func unmoved(t *testing.T, r *repo.Repo, agent string, head objects.CID, entries int) {
	t.Helper()
	ctx := context.Background()
	h, err := r.Refs.Head(ctx, agent)
	if err != nil && !head.IsZero() {
		t.Fatal(err)
	}
	if h.Commit != head {
		t.Fatalf("HEAD of %s moved to %s, want %s", agent, h.Commit, head)
	}
	es, _ := r.Refs.Entries(ctx, agent)
	if len(es) != entries {
		t.Fatalf("op log of %s has %d entries, want %d", agent, len(es), entries)
	}
}

// TestHostileAggregator: a real HTTP Walrus aggregator (walrustest) that
// answers another blob's bytes for an id — the same agent's older snapshot,
// another agent's under the same key, a truncated or padded blob — is refused
// before anything moves.
func TestHostileAggregator(t *testing.T) {
	ctx := context.Background()
	srv := walrustest.NewServer(t)
	blobs, err := httpstore.New(srv.URL, srv.URL, httpstore.WithHTTPClient(srv.Client()), httpstore.WithRetry(2, 1, 10))
	if err != nil {
		t.Fatal(err)
	}
	ptr := snapshot.FilePointer{Dir: t.TempDir()}
	r := newRepo(t)
	p := &snapshot.Pipeline{Repo: r, Cipher: testKey(t), Blobs: blobs, Pointer: ptr}
	// v1 and v2 have the same size, so only the sha256 tells them apart.
	c1 := commitBrain(t, r, "lumen", map[string]string{"system.md": "version 1"}, []string{"system.md"})
	v1, err := p.Push(ctx, "lumen", c1)
	if err != nil {
		t.Fatal(err)
	}
	c2 := commitBrain(t, r, "lumen", map[string]string{"system.md": "version 2"}, []string{"system.md"})
	v2, err := p.Push(ctx, "lumen", c2)
	if err != nil {
		t.Fatal(err)
	}
	c3 := commitBrain(t, r, "other", map[string]string{"system.md": "someone else"}, []string{"system.md"})
	o1, err := p.Push(ctx, "other", c3)
	if err != nil {
		t.Fatal(err)
	}
	if v1.Size != v2.Size {
		t.Fatalf("sizes %d and %d: the test wants equal sizes", v1.Size, v2.Size)
	}
	original, _, _ := srv.Blob(v2.BlobID)
	entries, _ := r.Refs.Entries(ctx, "lumen")

	serve := func(content []byte) {
		t.Helper()
		if err := srv.ReplaceBlob(v2.BlobID, content); err != nil {
			t.Fatal(err)
		}
	}
	bytesOf := func(id walrus.BlobID) []byte {
		b, _, ok := srv.Blob(id)
		if !ok {
			t.Fatalf("no blob %s", id)
		}
		return b
	}
	for _, tc := range []struct {
		name, what string
		content    []byte
	}{
		{"rollback to v1", "sha256 of the blob: expected " + v2.BlobSHA256, bytesOf(v1.BlobID)},
		{"another agent", "of the blob", bytesOf(o1.BlobID)},
		{"truncated", "size of the blob", original[:len(original)-1]},
		{"padded", "size of the blob: expected", append(append([]byte{}, original...), 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			serve(tc.content)
			for _, target := range []*repo.Repo{r, newRepo(t)} {
				head, _ := target.Refs.Head(ctx, "lumen")
				n, _ := target.Refs.Entries(ctx, "lumen")
				tp := &snapshot.Pipeline{Repo: target, Cipher: testKey(t), Blobs: blobs, Pointer: ptr}
				_, err := tp.Restore(ctx, "lumen", snapshot.RestoreOptions{})
				var me *snapshot.MismatchError
				if !errors.Is(err, snapshot.ErrBindingMismatch) || !errors.As(err, &me) || me.Blob != v2.BlobID {
					t.Fatalf("want a binding mismatch for %s, got %v", v2.BlobID, err)
				}
				if !strings.Contains(err.Error(), tc.what) {
					t.Fatalf("error %q does not say %q", err, tc.what)
				}
				unmoved(t, target, "lumen", head.Commit, len(n))
			}
		})
	}
	unmoved(t, r, "lumen", c2, len(entries))

	// The honest answer restores (into a fresh store) v2 exactly.
	serve(original)
	r2 := newRepo(t)
	got, err := (&snapshot.Pipeline{Repo: r2, Cipher: testKey(t), Blobs: blobs, Pointer: ptr}).Restore(ctx, "lumen", snapshot.RestoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.BundleHash != v2.BundleHash || got.Tree != v2.Tree || got.BlobSHA256 != v2.BlobSHA256 {
		t.Fatalf("restored %+v, pushed %+v", got, v2)
	}
}

// TestBindingChecksContent: a binding whose blob bytes match but whose tree,
// bundle hash or commit do not is refused, as are an old-format pointer and
// a malformed one.
func TestBindingChecksContent(t *testing.T) {
	ctx := context.Background()
	ls, _ := localstore.Open(t.TempDir())
	ptr := snapshot.FilePointer{Dir: t.TempDir()}
	r := newRepo(t)
	p := &snapshot.Pipeline{Repo: r, Cipher: testKey(t), Blobs: ls, Pointer: ptr}
	c1 := commitBrain(t, r, "lumen", map[string]string{"a.md": "a"}, []string{"a.md"})
	if _, err := p.Push(ctx, "lumen", c1); err != nil {
		t.Fatal(err)
	}
	c2 := commitBrain(t, r, "lumen", map[string]string{"b.md": "b"}, []string{"b.md"})
	good, err := ptr.Read(ctx, "lumen")
	if err != nil {
		t.Fatal(err)
	}
	other := objects.Sum(objects.CodecDagCBOR, []byte("x"))
	for name, b := range map[string]snapshot.Binding{
		"bundle hash":    func(b snapshot.Binding) snapshot.Binding { b.Bundle[0] ^= 1; return b }(good),
		"tree":           func(b snapshot.Binding) snapshot.Binding { b.Tree = other; return b }(good),
		"tree of commit": func(b snapshot.Binding) snapshot.Binding { b.Commit = c2; return b }(good),
	} {
		if err := ptr.Write(ctx, "lumen", b); err != nil {
			t.Fatal(err)
		}
		_, err := p.Restore(ctx, "lumen", snapshot.RestoreOptions{})
		if !errors.Is(err, snapshot.ErrBindingMismatch) || !strings.Contains(err.Error(), name) {
			t.Fatalf("%s: %v", name, err)
		}
	}
	unmoved(t, r, "lumen", c2, 2)
	// A commit the store does not hold cannot be checked; the rest still is.
	if err := ptr.Write(ctx, "lumen", func(b snapshot.Binding) snapshot.Binding { b.Commit = other; return b }(good)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Restore(ctx, "lumen", snapshot.RestoreOptions{}); err != nil {
		t.Fatalf("unknown commit: %v", err)
	}
}

// TestRestoreChecksReceiptsFirst: a snapshot whose receipts.ndjson is not
// JSON is refused with HEAD, op log and tape unchanged.
func TestRestoreChecksReceiptsFirst(t *testing.T) {
	ctx := context.Background()
	ls, _ := localstore.Open(t.TempDir())
	r := newRepo(t)
	c1 := commitBrain(t, r, "lumen", map[string]string{"a.md": "a"}, []string{"a.md"})
	r.Tape.Append(ctx, "lumen", []byte(`{"task":"t-1"}`))
	// A snapshot of another tree, with a valid lock and bad receipts.
	r0 := newRepo(t)
	c0 := commitBrain(t, r0, "x", map[string]string{"b.md": "b"}, []string{"b.md"})
	cm0, _ := r0.Commit(ctx, c0)
	var tarBuf bytes.Buffer
	if _, err := snapshot.WriteTar(ctx, &tarBuf, r0.Blocks, cm0.Tree, mustBundle(t, r0, cm0.Tree), []byte("{\"task\":\"t-2\"}\nnot json\n")); err != nil {
		t.Fatal(err)
	}
	var sealed bytes.Buffer
	if err := testKey(t).Encrypt(ctx, &sealed, bytes.NewReader(tarBuf.Bytes()), sha256.Sum256(tarBuf.Bytes())); err != nil {
		t.Fatal(err)
	}
	st, err := ls.Put(ctx, bytes.NewReader(sealed.Bytes()), int64(sealed.Len()), walrus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := &snapshot.Pipeline{Repo: r, Cipher: testKey(t), Blobs: ls}
	_, err = p.Restore(ctx, "lumen", snapshot.RestoreOptions{BlobID: st.BlobID})
	if !errors.Is(err, tape.ErrBadLine) || !strings.Contains(err.Error(), "receipts.ndjson line 2") {
		t.Fatalf("bad receipts: %v", err)
	}
	unmoved(t, r, "lumen", c1, 1)
	if nd, _ := r.Tape.NDJSON(ctx, "lumen"); string(nd) != "{\"task\":\"t-1\"}\n" {
		t.Fatalf("tape changed: %q", nd)
	}
	if recs, _ := snapshot.Records(ctx, r, "lumen"); len(recs) != 0 {
		t.Fatalf("records: %+v", recs)
	}
}

// A damaged push record (written by an older server, or a damaged disk)
// hides no other and stops no listing.
func TestRecordsSkipDamaged(t *testing.T) {
	ctx := context.Background()
	r := repo.New(memory.New())
	for name, v := range map[string]string{
		"snapshots/lumen/00000000000000000001-push": `{"op":"push","agent":"lumen"}`,
		"snapshots/lumen/00000000000000000002-push": `{"commit":5}`,
		"snapshots/lumen/00000000000000000003-push": `not json`,
	} {
		if err := r.Storage.SetMeta(ctx, name, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := snapshot.Records(ctx, r, "lumen")
	if err != nil || len(recs) != 1 || recs[0].Op != "push" {
		t.Fatalf("records: %v %+v", err, recs)
	}
}
