package export_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

func write(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func commitDir(t *testing.T, bs objects.BlockStore, dir string) (objects.CID, []export.Skipped) {
	t.Helper()
	ctx := context.Background()
	res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Tree, res.Skipped
}

func TestScanSkipsWhatIsNotBrainState(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "system.md"), "s")
	write(t, filepath.Join(dir, "skills/a.md"), "a")
	write(t, filepath.Join(dir, "bundle.lock.json"), "{}")
	write(t, filepath.Join(dir, "receipts.ndjson"), "")
	write(t, filepath.Join(dir, ".agentstate/MANIFEST"), "x")
	os.Symlink("/etc/passwd", filepath.Join(dir, "link.md"))
	os.Symlink("/etc", filepath.Join(dir, "linkdir"))
	if err := mkfifo(filepath.Join(dir, "fifo")); err != nil {
		t.Fatal(err)
	}
	files, skipped, err := export.Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, f := range files {
		keys = append(keys, f.Key)
	}
	if len(keys) != 2 || keys[0] != "skills/a.md" || keys[1] != "system.md" {
		t.Fatalf("scanned %v", keys)
	}
	got := map[string]bool{}
	for _, s := range skipped {
		got[s.Path] = true
	}
	for _, want := range []string{"link.md", "linkdir", "fifo", "bundle.lock.json", "receipts.ndjson", ".agentstate/"} {
		if !got[want] {
			t.Errorf("%s not reported as skipped (skipped: %v)", want, skipped)
		}
	}
}

func TestScanRefusesInvalidNames(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "bad\xffname.md"), "x")
	if _, _, err := export.Scan(context.Background(), dir); !errors.Is(err, objects.ErrBadKey) {
		t.Fatalf("non-UTF-8 name: %v", err)
	}
	if _, _, err := export.Scan(context.Background(), filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing directory accepted")
	}
}

func TestCheckoutNeverWritesThroughSymlinks(t *testing.T) {
	ctx := context.Background()
	bs := memstore.New()
	src := t.TempDir()
	write(t, filepath.Join(src, "skills/a.md"), "A")
	write(t, filepath.Join(src, "notes.md"), "N")
	root, _ := commitDir(t, bs, src)

	outside := t.TempDir()
	write(t, filepath.Join(outside, "notes.md"), "outside file")
	dst := t.TempDir()
	// DIR/skills is a symlink to a directory outside; DIR/notes.md a symlink to a file outside.
	os.Symlink(outside, filepath.Join(dst, "skills"))
	os.Symlink(filepath.Join(outside, "notes.md"), filepath.Join(dst, "notes.md"))
	write(t, filepath.Join(dst, "extra/junk.md"), "junk")
	write(t, filepath.Join(dst, "bundle.lock.json"), "{}")
	write(t, filepath.Join(dst, ".agentstate/MANIFEST"), "store")

	// None of it is the store's: refused, nothing changed.
	var fe *export.ForeignFilesError
	if _, err := export.Checkout(ctx, bs, root, dst); !errors.As(err, &fe) || fe.Count != 3 {
		t.Fatalf("checkout over symlinks and a user's file: %v, want 3 refused", err)
	}
	if fi, err := os.Lstat(filepath.Join(dst, "skills")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the refused checkout replaced the skills symlink")
	}
	if _, err := os.Stat(filepath.Join(dst, "extra/junk.md")); err != nil {
		t.Fatal("the refused checkout removed extra/junk.md")
	}
	// With Force.
	rep, err := export.CheckoutWith(ctx, bs, root, dst, export.CheckoutOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Written != 2 {
		t.Fatalf("report %+v", rep)
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "notes.md")); string(data) != "outside file" {
		t.Fatal("checkout wrote through a symlink to a file outside DIR")
	}
	if _, err := os.Stat(filepath.Join(outside, "a.md")); err == nil {
		t.Fatal("checkout wrote through a symlinked directory")
	}
	if fi, err := os.Lstat(filepath.Join(dst, "skills")); err != nil || !fi.IsDir() {
		t.Fatal("skills is not a real directory after checkout")
	}
	if _, err := os.Stat(filepath.Join(dst, "extra")); err == nil {
		t.Fatal("extra directory not removed")
	}
	for _, keep := range []string{"bundle.lock.json", ".agentstate/MANIFEST"} {
		if _, err := os.Stat(filepath.Join(dst, keep)); err != nil {
			t.Fatalf("checkout removed %s", keep)
		}
	}
	// The directory now commits back to the same tree.
	again, _ := commitDir(t, bs, dst)
	if again != root {
		t.Fatalf("checked-out directory commits to %s, want %s", again, root)
	}
	// A second checkout changes nothing.
	rep, err = export.Checkout(ctx, bs, root, dst)
	if err != nil || rep.Written != 0 || rep.Removed != 0 || rep.Unchanged != 2 {
		t.Fatalf("idempotent checkout: %+v %v", rep, err)
	}
	// Checkout into a file is refused.
	if _, err := export.Checkout(ctx, bs, root, filepath.Join(dst, "notes.md")); !errors.Is(err, export.ErrNotDir) {
		t.Fatalf("checkout into a file: %v", err)
	}
}

func TestFileMetaRoundTrip(t *testing.T) {
	m := export.FileMeta{Dir: filepath.Join(t.TempDir(), "cache")}
	if _, ok, err := m.GetMeta("statcache//a/b"); ok || err != nil {
		t.Fatalf("empty cache: %v %v", ok, err)
	}
	if err := m.SetMeta("statcache//a/b", []byte("v1")); err != nil {
		t.Fatal(err)
	}
	m.SetMeta("statcache//a/b", []byte("v2"))
	if v, ok, _ := m.GetMeta("statcache//a/b"); !ok || string(v) != "v2" {
		t.Fatalf("got %q %v", v, ok)
	}
	if err := m.Clear(); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := m.GetMeta("statcache//a/b"); ok {
		t.Fatal("Clear left a record")
	}
}
