package export_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// metaMap is an in-memory MetaStore that counts writes.
type metaMap struct {
	m    map[string][]byte
	sets int
}

func (m *metaMap) GetMeta(name string) ([]byte, bool, error) {
	v, ok := m.m[name]
	return v, ok, nil
}

func (m *metaMap) SetMeta(name string, v []byte) error {
	if m.m == nil {
		m.m = map[string][]byte{}
	}
	m.m[name] = bytes.Clone(v)
	m.sets++
	return nil
}

var past = time.Now().Add(-time.Hour)

// writeFile writes a file and dates it an hour back (out of the racy window)
// plus offset, so edits can give it a distinct mtime.
func writeFile(t *testing.T, root, key string, data []byte, offset time.Duration) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(key))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, past.Add(offset), past.Add(offset)); err != nil {
		t.Fatal(err)
	}
}

func makeBrain(t *testing.T) string {
	root := t.TempDir()
	for i := range 50 {
		writeFile(t, root, fmt.Sprintf("skills/s%02d.md", i), fmt.Appendf(nil, "skill %d\n", i), 0)
	}
	big := make([]byte, 3<<20)
	rand.NewChaCha8([32]byte{1}).Read(big)
	writeFile(t, root, "blobs/big.bin", big, 0)
	writeFile(t, root, "system.md", []byte("You are lumen.\n"), 0)
	return root
}

// fresh imports dir with no cache into a new store: the reference answer.
func fresh(t *testing.T, dir string) objects.CID {
	t.Helper()
	res, err := export.ImportDir(context.Background(), memstore.New(), dir, export.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tree
}

func TestImportDirStatCache(t *testing.T) {
	ctx := context.Background()
	dir := makeBrain(t)
	bs := memstore.New()
	cache := &metaMap{}
	imp := func() export.ImportResult {
		t.Helper()
		res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		if want := fresh(t, dir); res.Tree != want {
			t.Fatalf("cached import gave tree %s, a fresh import %s", res.Tree, want)
		}
		return res
	}
	if res := imp(); res.Read != 52 || res.Files != 52 {
		t.Fatalf("first import read %d of %d files, want 52 of 52", res.Read, res.Files)
	}
	sets := cache.sets
	if res := imp(); res.Read != 0 {
		t.Fatalf("unchanged directory: read %d files, want 0", res.Read)
	}
	if cache.sets != sets {
		t.Fatal("unchanged directory rewrote the stat cache")
	}

	writeFile(t, dir, "skills/s07.md", []byte("skill 7, revised\n"), time.Minute)
	if res := imp(); res.Read != 1 {
		t.Fatalf("one edited file: read %d files, want 1", res.Read)
	}
	if err := os.Remove(filepath.Join(dir, "skills", "s08.md")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "skills/new.md", []byte("new\n"), 0)
	if res := imp(); res.Read != 1 || res.Files != 52 {
		t.Fatalf("one removed and one added file: read %d of %d, want 1 of 52", res.Read, res.Files)
	}
	// The chunked file reads back whole.
	res := imp()
	tr, err := objects.LoadTree(ctx, bs, res.Tree)
	if err != nil {
		t.Fatal(err)
	}
	v, ok, err := tr.Get(ctx, "blobs/big.bin")
	if err != nil || !ok || v.Codec() != objects.CodecDagCBOR {
		t.Fatalf("big.bin: %s %v %v, want a chunked value", v, ok, err)
	}
	got, err := objects.ReadValue(ctx, bs, v)
	want, _ := os.ReadFile(filepath.Join(dir, "blobs", "big.bin"))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("big.bin read back %d bytes (%v), want %d", len(got), err, len(want))
	}
}

// A file whose mtime is within RacyWindow of the scan may be rewritten in
// the same timestamp tick, so it is never trusted from the cache.
func TestImportDirRacyFiles(t *testing.T) {
	ctx := context.Background()
	dir := makeBrain(t)
	p := filepath.Join(dir, "system.md")
	now := time.Now()
	if err := os.Chtimes(p, now, now); err != nil {
		t.Fatal(err)
	}
	bs, cache := memstore.New(), &metaMap{}
	for range 2 {
		res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		if res.Read < 1 {
			t.Fatalf("a file modified just now was trusted from the cache (read %d)", res.Read)
		}
	}
	// Same size, same mtime, new content: still seen.
	if err := os.WriteFile(p, []byte("You are umbra.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, now, now); err != nil {
		t.Fatal(err)
	}
	res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tree != fresh(t, dir) {
		t.Fatal("a same-size rewrite within the racy window was missed")
	}
}

func TestImportDirColdCache(t *testing.T) {
	ctx := context.Background()
	dir := makeBrain(t)
	cache := &metaMap{}
	if _, err := export.ImportDir(ctx, memstore.New(), dir, export.ImportOptions{Cache: cache}); err != nil {
		t.Fatal(err)
	}
	// Another store (as after gc removed the cached tree): everything is read again.
	bs := memstore.New()
	res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache})
	if err != nil || res.Read != res.Files {
		t.Fatalf("cache of a missing tree: read %d of %d (%v), want all", res.Read, res.Files, err)
	}
	if _, err := objects.ReadValue(ctx, bs, mustGet(t, bs, res.Tree, "system.md")); err != nil {
		t.Fatalf("value missing after a cold import: %v", err)
	}
	// A damaged cache record is a cold cache, not an error.
	for k, v := range cache.m {
		v[len(v)/2] ^= 0xff
		cache.m[k] = v
	}
	res, err = export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache})
	if err != nil || res.Read != res.Files || res.Tree != fresh(t, dir) {
		t.Fatalf("damaged cache: read %d of %d, err %v", res.Read, res.Files, err)
	}
}

func mustGet(t *testing.T, bs objects.BlockStore, root objects.CID, key string) objects.CID {
	t.Helper()
	tr, err := objects.LoadTree(context.Background(), bs, root)
	if err != nil {
		t.Fatal(err)
	}
	v, ok, err := tr.Get(context.Background(), key)
	if err != nil || !ok {
		t.Fatalf("%s: %v %v", key, ok, err)
	}
	return v
}

func TestCheckoutRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := makeBrain(t)
	bs := memstore.New()
	res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	rep, err := export.Checkout(ctx, bs, res.Tree, out)
	if err != nil || rep.Written != res.Files {
		t.Fatalf("checkout: %+v, %v; want %d written", rep, err, res.Files)
	}
	if back := fresh(t, out); back != res.Tree {
		t.Fatalf("checked-out directory imports as %s, want %s", back, res.Tree)
	}
	fi, err := os.Stat(filepath.Join(out, "blobs", "big.bin"))
	if err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("big.bin: %v %v, want mode 0644", fi, err)
	}
	// Again: everything, the chunked file included, is recognised as unchanged.
	rep, err = export.Checkout(ctx, bs, res.Tree, out)
	if err != nil || rep.Unchanged != res.Files || rep.Written != 0 {
		t.Fatalf("second checkout: %+v, %v; want all unchanged", rep, err)
	}
	// An edited file and an extra one are the user's: refused, then, with
	// Force, the edited file is rewritten and the extra one removed.
	if err := os.WriteFile(filepath.Join(out, "system.md"), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "extra.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var fe *export.ForeignFilesError
	if _, err = export.Checkout(ctx, bs, res.Tree, out); !errors.As(err, &fe) || fe.Count != 2 {
		t.Fatalf("checkout over edits: %v, want a ForeignFilesError naming 2 files", err)
	}
	rep, err = export.CheckoutWith(ctx, bs, res.Tree, out, export.CheckoutOptions{Force: true})
	if err != nil || rep.Written != 1 || rep.Removed != 1 {
		t.Fatalf("third checkout: %+v, %v; want 1 written, 1 removed", rep, err)
	}
}

func FuzzStatCache(f *testing.F) {
	dir := f.TempDir()
	for i := range 3 {
		p := filepath.Join(dir, fmt.Sprintf("f%d", i))
		os.WriteFile(p, []byte{byte(i)}, 0o644)
		os.Chtimes(p, past, past)
	}
	cache := &metaMap{}
	if _, err := export.ImportDir(context.Background(), memstore.New(), dir, export.ImportOptions{Cache: cache}); err != nil {
		f.Fatal(err)
	}
	for _, v := range cache.m {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		export.DecodeStatCacheForTest(data) // must not panic
	})
}
