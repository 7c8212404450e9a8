package objects_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

func val(s string) objects.CID { return objects.NewValue([]byte(s)).CID }

// build returns the root of the tree holding m, inserting keys in the given order.
func build(t testing.TB, bs objects.BlockStore, m map[string]string, order []string) objects.CID {
	t.Helper()
	ctx := context.Background()
	tr := objects.NewTree(bs)
	for _, k := range order {
		if _, err := tr.Put(ctx, k, val(m[k])); err != nil {
			t.Fatal(err)
		}
	}
	root, err := tr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func randomKeys(r *rand.Rand, n int) map[string]string {
	m := make(map[string]string, n)
	dirs := []string{"skills", "patterns", "memory", "a/b/c", "x"}
	for len(m) < n {
		k := fmt.Sprintf("%s/%d.md", dirs[r.IntN(len(dirs))], r.IntN(n*10))
		m[k] = fmt.Sprintf("content %d", r.IntN(1000))
	}
	return m
}

func keysOf(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func entries(t testing.TB, bs objects.BlockStore, root objects.CID, from string) []objects.Entry {
	t.Helper()
	ctx := context.Background()
	tr, err := objects.LoadTree(ctx, bs, root)
	if err != nil {
		t.Fatal(err)
	}
	var out []objects.Entry
	for e, err := range tr.Entries(ctx, from) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

func TestTreeHistoryIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 15, 16, 17, 100, 1000, 3000} {
		m := randomKeys(r, n)
		sorted := keysOf(m)
		bs := memstore.New()
		want := build(t, bs, m, sorted)
		for trial := range 3 {
			order := slices.Clone(sorted)
			r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			if got := build(t, memstore.New(), m, order); got != want {
				t.Fatalf("n=%d trial %d: shuffled insert gives root %s, sorted gives %s", n, trial, got, want)
			}
		}
		es := entries(t, bs, want, "")
		if len(es) != n {
			t.Fatalf("n=%d: %d entries listed", n, len(es))
		}
		for i, e := range es {
			if e.Key != sorted[i] || e.Value != val(m[e.Key]) {
				t.Fatalf("n=%d: entry %d = %v, want %s", n, i, e, sorted[i])
			}
		}
	}
}

func TestTreeEmpty(t *testing.T) {
	bs := memstore.New()
	root := build(t, bs, nil, nil)
	if root != objects.EmptyTreeCID {
		t.Fatalf("empty tree root %s, want %s", root, objects.EmptyTreeCID)
	}
}

func TestTreeDeleteMatchesRebuild(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	ctx := context.Background()
	m := randomKeys(r, 2000)
	bs := memstore.New()
	root := build(t, bs, m, keysOf(m))
	tr, err := objects.LoadTree(ctx, bs, root)
	if err != nil {
		t.Fatal(err)
	}
	keys := keysOf(m)
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for i, k := range keys {
		ok, err := tr.Delete(ctx, k)
		if err != nil || !ok {
			t.Fatalf("Delete(%q) = %v, %v", k, ok, err)
		}
		delete(m, k)
		if ok, _ := tr.Delete(ctx, k); ok {
			t.Fatalf("second Delete(%q) reported present", k)
		}
		if i%97 == 0 || len(m) < 20 {
			got, err := tr.Commit(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := build(t, memstore.New(), m, keysOf(m)); got != want {
				t.Fatalf("after deleting %d keys: root %s, rebuild gives %s", i+1, got, want)
			}
			// Every node must load back as canonical.
			if es := entries(t, bs, got, ""); len(es) != len(m) {
				t.Fatalf("after deleting %d keys: %d entries, want %d", i+1, len(es), len(m))
			}
		}
	}
	got, _ := tr.Commit(ctx)
	if got != objects.EmptyTreeCID {
		t.Fatalf("tree emptied by deletes has root %s, want the empty tree", got)
	}
}

func TestTreeGetPutOverwrite(t *testing.T) {
	ctx := context.Background()
	bs := memstore.New()
	tr := objects.NewTree(bs)
	if ch, err := tr.Put(ctx, "a.md", val("1")); err != nil || !ch {
		t.Fatal(ch, err)
	}
	if ch, _ := tr.Put(ctx, "a.md", val("1")); ch {
		t.Fatal("re-putting the same value reported a change")
	}
	if ch, _ := tr.Put(ctx, "a.md", val("2")); !ch {
		t.Fatal("overwrite not reported as a change")
	}
	got, ok, err := tr.Get(ctx, "a.md")
	if err != nil || !ok || got != val("2") {
		t.Fatalf("Get = %v %v %v", got, ok, err)
	}
	if _, ok, _ := tr.Get(ctx, "b.md"); ok {
		t.Fatal("absent key found")
	}
	for _, bad := range []string{"", "/abs", "a/../b", "a//b", "a/./b", "dir/", "nul\x00"} {
		if _, err := tr.Put(ctx, bad, val("x")); !errors.Is(err, objects.ErrBadKey) {
			t.Fatalf("Put(%q) error = %v, want ErrBadKey", bad, err)
		}
	}
}

func TestTreePrefixRange(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	m := randomKeys(r, 1500)
	bs := memstore.New()
	root := build(t, bs, m, keysOf(m))
	var want []string
	for _, k := range keysOf(m) {
		if k >= "patterns/" {
			want = append(want, k)
		}
	}
	es := entries(t, bs, root, "patterns/")
	if len(es) != len(want) {
		t.Fatalf("from patterns/: %d entries, want %d", len(es), len(want))
	}
	for i := range es {
		if es[i].Key != want[i] {
			t.Fatalf("entry %d = %q, want %q", i, es[i].Key, want[i])
		}
	}
}

func TestDiffTrees(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ctx := context.Background()
	a := randomKeys(r, 3000)
	b := make(map[string]string, len(a))
	for k, v := range a {
		b[k] = v
	}
	want := map[string]objects.ChangeKind{}
	i := 0
	for _, k := range keysOf(a) {
		switch i % 50 {
		case 0:
			delete(b, k)
			want[k] = objects.Removed
		case 1:
			b[k] = a[k] + " changed"
			want[k] = objects.Modified
		}
		i++
	}
	for j := range 40 {
		k := fmt.Sprintf("new/%d", j)
		b[k] = "n"
		want[k] = objects.Added
	}
	bs := memstore.New()
	ra, rb := build(t, bs, a, keysOf(a)), build(t, bs, b, keysOf(b))
	got := map[string]objects.ChangeKind{}
	prev := ""
	for c, err := range objects.DiffTrees(ctx, bs, ra, rb) {
		if err != nil {
			t.Fatal(err)
		}
		if c.Path <= prev && prev != "" {
			t.Fatalf("diff out of order: %q after %q", c.Path, prev)
		}
		prev = c.Path
		got[c.Path] = c.Change
		switch c.Change {
		case objects.Added:
			if c.New != val(b[c.Path]) || !c.Old.IsZero() {
				t.Fatalf("bad added change %+v", c)
			}
		case objects.Removed:
			if c.Old != val(a[c.Path]) || !c.New.IsZero() {
				t.Fatalf("bad removed change %+v", c)
			}
		case objects.Modified:
			if c.Old != val(a[c.Path]) || c.New != val(b[c.Path]) {
				t.Fatalf("bad modified change %+v", c)
			}
		}
	}
	if len(got) != len(want) {
		t.Fatalf("diff found %d changes, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("change of %q = %q, want %q", k, got[k], v)
		}
	}
	for range objects.DiffTrees(ctx, bs, ra, ra) {
		t.Fatal("diff of a tree with itself is not empty")
	}
}

// countingStore counts reads, to check that a diff skips equal subtrees.
type countingStore struct {
	objects.BlockStore
	gets int
}

func (c *countingStore) Get(ctx context.Context, id objects.CID) ([]byte, error) {
	c.gets++
	return c.BlockStore.Get(ctx, id)
}

func TestDiffSkipsEqualSubtrees(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	ctx := context.Background()
	a := randomKeys(r, 20000)
	bs := memstore.New()
	ra := build(t, bs, a, keysOf(a))
	tr, _ := objects.LoadTree(ctx, bs, ra)
	if _, err := tr.Put(ctx, "skills/one-more.md", val("x")); err != nil {
		t.Fatal(err)
	}
	rb, _ := tr.Commit(ctx)
	cs := &countingStore{BlockStore: bs}
	n := 0
	for _, err := range objects.DiffTrees(ctx, cs, ra, rb) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 1 {
		t.Fatalf("%d changes, want 1", n)
	}
	// 20k keys at fanout 16 is about 1300 nodes and 4 layers; a one-key diff
	// reads a handful of nodes per layer on each side.
	if cs.gets > 60 {
		t.Fatalf("one-key diff read %d nodes; equal subtrees are not being skipped", cs.gets)
	}
}

func TestCorruptNodeIsTypedError(t *testing.T) {
	ctx := context.Background()
	bs := memstore.New()
	root := build(t, bs, map[string]string{"a": "1", "b": "2"}, []string{"a", "b"})
	bs.Corrupt(root, []byte("garbage"))
	_, err := objects.LoadTree(ctx, bs, root)
	var hm *objects.HashMismatchError
	if !errors.As(err, &hm) || hm.Expected != root {
		t.Fatalf("LoadTree(corrupt) = %v, want HashMismatchError for %s", err, root)
	}
}
