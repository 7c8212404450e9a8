package export_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// fakeStore makes dir look like an agentstate store: a Badger manifest.
func fakeStore(t *testing.T, dir string) {
	t.Helper()
	write(t, filepath.Join(dir, "MANIFEST"), "Bdgr\x00\x01\x00\x08manifest")
	write(t, filepath.Join(dir, "000001.vlog"), "values")
}

// listFiles lists every file under dir with its content.
func listFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			m[rel+"/"] = ""
		} else {
			data, _ := os.ReadFile(p)
			m[rel] = string(data)
		}
		return nil
	})
	return m
}

func TestIsStoreDir(t *testing.T) {
	dir := t.TempDir()
	fakeStore(t, filepath.Join(dir, "store"))
	write(t, filepath.Join(dir, "python/MANIFEST"), "include README\n") // not Badger's
	write(t, filepath.Join(dir, "short/MANIFEST"), "Bd")
	os.MkdirAll(filepath.Join(dir, "link"), 0o755)
	os.Symlink(filepath.Join(dir, "store/MANIFEST"), filepath.Join(dir, "link/MANIFEST"))
	os.MkdirAll(filepath.Join(dir, "fifo"), 0o755)
	if err := mkfifo(filepath.Join(dir, "fifo/MANIFEST")); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for name, want := range map[string]bool{"store": true, "python": false, "short": false, "link": false, "fifo": false, "missing": false} {
			if got := export.IsStoreDir(filepath.Join(dir, name)); got != want {
				t.Errorf("IsStoreDir(%s) = %v, want %v", name, got, want)
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("IsStoreDir blocked (on a FIFO named MANIFEST?)")
	}
}

// scanNames scans dir and returns the keys of the files and the paths of
// what was skipped, in the scan's order.
func scanNames(t *testing.T, dir string) (keys, skips []string) {
	t.Helper()
	files, skipped, err := export.Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		keys = append(keys, f.Key)
	}
	for _, s := range skipped {
		skips = append(skips, s.Path)
	}
	return keys, skips
}

func TestScanSkipsStoresByMarker(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "system.md"), "s")
	fakeStore(t, filepath.Join(dir, "mystore"))
	fakeStore(t, filepath.Join(dir, "deep/er/inner"))
	write(t, filepath.Join(dir, "deep/er/kept.md"), "k")
	write(t, filepath.Join(dir, "py/MANIFEST"), "include x\n") // an ordinary file of that name
	write(t, filepath.Join(dir, ".AgentState/x"), "reserved in any case")
	write(t, filepath.Join(dir, "sub/.agentstate/notes.md"), "only the top-level name is reserved")
	keys, skips := scanNames(t, dir)
	if want := []string{"deep/er/kept.md", "py/MANIFEST", "sub/.agentstate/notes.md", "system.md"}; !slices.Equal(keys, want) {
		t.Errorf("scanned %q, want %q", keys, want)
	}
	if want := []string{".AgentState/", "deep/er/inner/", "mystore/"}; !slices.Equal(skips, want) {
		t.Errorf("skipped %q, want %q", skips, want)
	}

	// A regular file named .agentstate at the top is skipped too, not an error.
	write(t, filepath.Join(dir, ".agentstate"), "x")
	if _, skipped, err := export.Scan(context.Background(), dir); err != nil || !slices.ContainsFunc(skipped, func(s export.Skipped) bool { return s.Path == ".agentstate" }) {
		t.Errorf("file .agentstate: skipped %v, err %v", skipped, err)
	}

	// A store, or a directory inside one, is not a brain.
	for _, d := range []string{"mystore", "deep/er/inner", "mystore/sub"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
		if _, _, err := export.Scan(context.Background(), filepath.Join(dir, d)); !errors.Is(err, export.ErrInStore) {
			t.Errorf("Scan(%s) = %v, want ErrInStore", d, err)
		}
	}
}

func TestCheckoutLeavesStoresAlone(t *testing.T) {
	ctx := context.Background()
	bs := memstore.New()
	src := t.TempDir()
	write(t, filepath.Join(src, "a.md"), "A")
	root, _ := commitDir(t, bs, src)

	dst := t.TempDir()
	fakeStore(t, filepath.Join(dst, "mystore"))
	fakeStore(t, filepath.Join(dst, "only/path/to/store"))
	fakeStore(t, filepath.Join(dst, ".agentstate"))
	write(t, filepath.Join(dst, "only/path/junk.md"), "junk")
	write(t, filepath.Join(dst, "extra.md"), "extra")
	rep, err := export.CheckoutWith(ctx, bs, root, dst, export.CheckoutOptions{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Written != 1 || rep.Removed != 2 {
		t.Errorf("report %+v, want 1 written and 2 removed (extra.md, only/path/junk.md)", rep)
	}
	got := listFiles(t, dst)
	for _, keep := range []string{"a.md", "mystore/MANIFEST", "mystore/000001.vlog", "only/path/to/store/MANIFEST", ".agentstate/MANIFEST"} {
		if _, ok := got[keep]; !ok {
			t.Errorf("%s missing after checkout: %v", keep, got)
		}
	}
	for _, gone := range []string{"extra.md", "only/path/junk.md"} {
		if _, ok := got[gone]; ok {
			t.Errorf("%s not removed", gone)
		}
	}
}

func TestCheckoutRefusesToWriteIntoAStore(t *testing.T) {
	ctx := context.Background()
	bs := memstore.New()
	tree := func(kv ...string) objects.CID {
		t.Helper()
		files := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			files[kv[i]] = kv[i+1]
		}
		return treeOf(t, bs, files)
	}
	cases := map[string]objects.CID{
		"file into a store":             tree("new.md", "n", "mystore/MANIFEST", "garbage"),
		"file deep into a store":        tree("new.md", "n", "mystore/x/y", "garbage"),
		"file over a store":             tree("new.md", "n", "mystore", "a file where the store is"),
		"file over a store's ancestor":  tree("new.md", "n", "deep", "a file where the store's parent is"),
		"file into a store's ancestor":  tree("new.md", "n", "deep/inner/MANIFEST", "garbage"),
		"file over the nested store":    tree("deep/inner", "x", "new.md", "n"),
		"files on both sides of stores": tree("a", "1", "mystore/z", "2", "zz", "3"),
	}
	for name, tree := range cases {
		t.Run(name, func(t *testing.T) {
			dst := t.TempDir()
			fakeStore(t, filepath.Join(dst, "mystore"))
			fakeStore(t, filepath.Join(dst, "deep/inner"))
			write(t, filepath.Join(dst, "old.md"), "old")
			before := listFiles(t, dst)
			_, err := export.Checkout(ctx, bs, tree, dst)
			if !errors.Is(err, export.ErrInStore) {
				t.Fatalf("Checkout = %v, want ErrInStore", err)
			}
			if after := listFiles(t, dst); !mapsEqual(before, after) {
				t.Fatalf("a refused checkout changed the directory:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
}

func TestCheckoutRefusesATargetInsideAStore(t *testing.T) {
	ctx := context.Background()
	bs := memstore.New()
	src := t.TempDir()
	write(t, filepath.Join(src, "a.md"), "A")
	root, _ := commitDir(t, bs, src)

	dir := t.TempDir()
	st := filepath.Join(dir, "store")
	fakeStore(t, st)
	os.Symlink(st, filepath.Join(dir, "link"))
	for _, target := range []string{st, filepath.Join(st, "sub"), filepath.Join(st, "new/deeper"), filepath.Join(dir, "link/x")} {
		before := listFiles(t, dir)
		if _, err := export.Checkout(ctx, bs, root, target); !errors.Is(err, export.ErrInStore) {
			t.Errorf("Checkout into %s = %v, want ErrInStore", target, err)
		}
		if after := listFiles(t, dir); !mapsEqual(before, after) {
			t.Errorf("checkout into %s changed files: %v", target, after)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// Scan leaves out anything named .git at any depth (in any case), a
// repository's directory and a worktree's pointer file alike, and reports
// it; a name that only starts with .git is content.
func TestScanSkipsGit(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "system.md"), "s")
	write(t, filepath.Join(dir, ".git/HEAD"), "ref: refs/heads/main\n")
	write(t, filepath.Join(dir, "skills/vendored/.git"), "gitdir: ../../.git/modules/vendored\n")
	write(t, filepath.Join(dir, "skills/vendored/x.md"), "x")
	write(t, filepath.Join(dir, "deep/.GIT/config"), "[core]\n")
	write(t, filepath.Join(dir, ".gitignore"), "*.tmp\n")
	keys, skips := scanNames(t, dir)
	if want := []string{".gitignore", "skills/vendored/x.md", "system.md"}; !slices.Equal(keys, want) {
		t.Errorf("scanned %q, want %q", keys, want)
	}
	if want := []string{".git/", "deep/.GIT/", "skills/vendored/.git"}; !slices.Equal(skips, want) {
		t.Errorf("skipped %q, want %q", skips, want)
	}
}
