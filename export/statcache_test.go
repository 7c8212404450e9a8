package export_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// getCounter is a block store that records which blocks were read.
type getCounter struct {
	objects.BlockStore
	mu   sync.Mutex
	gets map[objects.CID]int
}

func (g *getCounter) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	g.mu.Lock()
	g.gets[c]++
	g.mu.Unlock()
	return g.BlockStore.Get(ctx, c)
}

// valueReads counts reads of the tree's values (not of its nodes).
func (g *getCounter) valueReads(t *testing.T, tree objects.CID) int {
	t.Helper()
	tr, err := objects.LoadTree(context.Background(), g.BlockStore, tree)
	if err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for e, err := range tr.Entries(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		n += g.gets[e.Value]
	}
	clear(g.gets)
	return n
}

// A checkout with a cache records what it wrote: the next import reads
// none of it once the files are older than the racy window at the time of
// recording (a window of 1ns here), and with the default window reads them
// all (they were written a moment before the recording).
func TestCheckoutRecordsStatCache(t *testing.T) {
	ctx := context.Background()
	bs := memstore.New()
	res, err := export.ImportDir(ctx, bs, makeBrain(t), export.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		window   time.Duration
		wantRead int
	}{{time.Nanosecond, 0}, {0, res.Files}} {
		out := filepath.Join(t.TempDir(), "out")
		cache := &export.MemMeta{}
		rep, err := export.CheckoutWith(ctx, bs, res.Tree, out, export.CheckoutOptions{Cache: cache, RacyWindow: c.window})
		if err != nil || rep.Written != res.Files {
			t.Fatalf("checkout: %+v %v", rep, err)
		}
		back, err := export.ImportDir(ctx, bs, out, export.ImportOptions{Cache: cache, RacyWindow: c.window})
		if err != nil {
			t.Fatal(err)
		}
		if back.Tree != res.Tree || back.Read != c.wantRead {
			t.Fatalf("window %v: import after checkout read %d of %d files (tree %s, want %s); want %d read",
				c.window, back.Read, back.Files, back.Tree, res.Tree, c.wantRead)
		}
	}
}

// A checkout trusts the cache instead of re-reading files, and sees a
// rewrite that keeps size and mtime by its ctime.
func TestCheckoutTrustsStatCache(t *testing.T) {
	ctx := context.Background()
	bs := &getCounter{BlockStore: memstore.New(), gets: map[objects.CID]int{}}
	dir := makeBrain(t)
	cache := &export.MemMeta{}
	res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	bs.valueReads(t, res.Tree)
	// Files dated an hour back: trusted, nothing compared.
	rep, err := export.CheckoutWith(ctx, bs, res.Tree, dir, export.CheckoutOptions{Cache: cache})
	if err != nil || rep.Unchanged != res.Files || rep.Written != 0 {
		t.Fatalf("checkout over the imported directory: %+v %v", rep, err)
	}
	if n := bs.valueReads(t, res.Tree); n != 0 {
		t.Fatalf("checkout read %d values to compare files the cache trusts", n)
	}
	// Without a cache every file is compared: the chunked one through its
	// value's chunk list (a small file's CID is its content's sha256).
	if _, err := export.Checkout(ctx, bs, res.Tree, dir); err != nil {
		t.Fatal(err)
	}
	if n := bs.valueReads(t, res.Tree); n == 0 {
		t.Fatal("checkout without a cache read no value: the test no longer shows what the cache saves")
	}

	// The same size and mtime, other bytes, the same inode: only ctime tells.
	p := filepath.Join(dir, "system.md")
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // a later ctime tick than the recorded one
	if err := os.WriteFile(p, []byte("You are umbra.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	// The rewrite is seen: the file is no longer what the store wrote, so
	// it is refused, and rewritten with Force.
	var fe *export.ForeignFilesError
	if _, err = export.CheckoutWith(ctx, bs, res.Tree, dir, export.CheckoutOptions{Cache: cache}); !errors.As(err, &fe) || fe.Count != 1 || fe.Paths[0] != "system.md" {
		t.Fatalf("checkout after a same-size, same-mtime rewrite: %v; want system.md refused", err)
	}
	rep, err = export.CheckoutWith(ctx, bs, res.Tree, dir, export.CheckoutOptions{Cache: cache, Force: true})
	if err != nil || rep.Written != 1 {
		t.Fatalf("checkout after a same-size, same-mtime rewrite: %+v %v; want 1 written", rep, err)
	}
	if b, _ := os.ReadFile(p); string(b) != "You are lumen.\n" {
		t.Fatalf("system.md = %q after checkout", b)
	}
	// And the import after it gives the tree back.
	back, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache})
	if err != nil || back.Tree != res.Tree {
		t.Fatalf("import after checkout: %s %v, want %s", back.Tree, err, res.Tree)
	}
}

// The same rewrite is seen by an import through the cache.
func TestImportDirSeesCtime(t *testing.T) {
	ctx := context.Background()
	dir := makeBrain(t)
	bs, cache := memstore.New(), &export.MemMeta{}
	if _, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "system.md")
	fi, _ := os.Stat(p)
	time.Sleep(20 * time.Millisecond)
	if err := os.WriteFile(p, []byte("You are umbra.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache})
	if err != nil || res.Read != 1 || res.Tree != fresh(t, dir) {
		t.Fatalf("read %d (%v), tree right: %v; want the rewritten file read", res.Read, err, res.Tree == fresh(t, dir))
	}
}

// A cache whose tree gc deleted is a cold cache for both ImportDir and
// CheckoutWith: no value is trusted from it.
func TestStatCacheAfterBlocksDeleted(t *testing.T) {
	ctx := context.Background()
	dir := makeBrain(t)
	bs, cache := memstore.New(), &export.MemMeta{}
	res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	// Delete every block, as gc does with a tree nothing reaches.
	var all []objects.CID
	for c, err := range bs.AllCIDs(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, c)
	}
	if err := bs.Delete(ctx, all...); err != nil {
		t.Fatal(err)
	}
	again, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache})
	if err != nil || again.Read != again.Files || again.Tree != res.Tree {
		t.Fatalf("import over deleted blocks: read %d of %d (%v)", again.Read, again.Files, err)
	}
	tr, err := objects.LoadTree(ctx, bs, again.Tree)
	if err != nil {
		t.Fatal(err)
	}
	for e, err := range tr.Entries(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		if _, err := objects.ReadValue(ctx, bs, e.Value); err != nil {
			t.Fatalf("%s: value missing after the import: %v", e.Key, err)
		}
	}
}

func TestMemMeta(t *testing.T) {
	var m export.MemMeta
	v := []byte("v")
	if err := m.SetMeta("a", v); err != nil {
		t.Fatal(err)
	}
	v[0] = 'x' // the store keeps its own copy
	if got, ok, err := m.GetMeta("a"); err != nil || !ok || string(got) != "v" {
		t.Fatalf("GetMeta = %q %v %v", got, ok, err)
	}
	m.Clear()
	if _, ok, _ := m.GetMeta("a"); ok {
		t.Fatal("a record survived Clear")
	}
}

// Prune keeps the records whose tree the caller keeps (StatCacheTree reads
// it from a record a checkout wrote) and drops the others and the damaged
// ones, in a FileMeta and a MemMeta alike; a FileMeta leaves files that are
// not records alone.
func TestStatCachePrune(t *testing.T) {
	ctx := context.Background()
	bs := memstore.New()
	brain := makeBrain(t)
	first, err := export.ImportDir(ctx, bs, brain, export.ImportOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(brain, "extra.md"), []byte("more"), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := export.ImportDir(ctx, bs, brain, export.ImportOptions{})
	if err != nil || second.Tree == first.Tree {
		t.Fatalf("second import: %v (tree %s)", err, second.Tree)
	}
	fileMeta := export.FileMeta{Dir: filepath.Join(t.TempDir(), "statcache")}
	for _, cache := range []interface {
		export.MetaStore
		Prune(func([]byte) bool) error
	}{fileMeta, &export.MemMeta{}} {
		dirs := map[objects.CID]string{}
		for _, tree := range []objects.CID{first.Tree, second.Tree} {
			out := filepath.Join(t.TempDir(), "out")
			if _, err := export.CheckoutWith(ctx, bs, tree, out, export.CheckoutOptions{Cache: cache}); err != nil {
				t.Fatal(err)
			}
			abs, _ := filepath.Abs(out)
			dirs[tree] = "statcache/" + abs
		}
		for tree, name := range dirs {
			data, ok, err := cache.GetMeta(name)
			if err != nil || !ok {
				t.Fatalf("no record for %s: %v", name, err)
			}
			if got, ok := export.StatCacheTree(data); !ok || got != tree {
				t.Fatalf("StatCacheTree = %s %v, want %s", got, ok, tree)
			}
			data[len(data)/2] ^= 1
			if _, ok := export.StatCacheTree(data); ok {
				t.Fatal("StatCacheTree accepted a damaged record")
			}
		}
		if err := cache.SetMeta("statcache//elsewhere", []byte("damaged")); err != nil {
			t.Fatal(err)
		}
		stray := filepath.Join(fileMeta.Dir, ".tmp-write-in-flight")
		if err := os.WriteFile(stray, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		err := cache.Prune(func(data []byte) bool {
			tree, ok := export.StatCacheTree(data)
			return ok && tree == second.Tree
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := cache.GetMeta(dirs[second.Tree]); !ok {
			t.Fatal("Prune dropped a record it was told to keep")
		}
		for _, name := range []string{dirs[first.Tree], "statcache//elsewhere"} {
			if _, ok, _ := cache.GetMeta(name); ok {
				t.Fatalf("Prune kept %s", name)
			}
		}
		if _, err := os.Stat(stray); err != nil {
			t.Fatalf("Prune removed a file that is not a record: %v", err)
		}
	}
	if err := (export.FileMeta{Dir: filepath.Join(t.TempDir(), "none")}).Prune(func([]byte) bool { return false }); err != nil {
		t.Fatalf("Prune of a missing directory: %v", err)
	}
}
