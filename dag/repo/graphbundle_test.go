package repo_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

var errStopScan = errors.New("stop")

// graphBundles returns, per record holding a bundle hash, its commit's
// tree and the hash; and how many records there are.
func graphBundles(t *testing.T, r *repo.Repo) (map[objects.CID]objects.BundleHash, int) {
	t.Helper()
	out := map[objects.CID]objects.BundleHash{}
	n := 0
	err := r.Storage.MetaPrefix(context.Background(), dag.GraphRecordPrefix, func(name string, v []byte) error {
		n++
		rec, err := dag.DecodeGraphRecord(v)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		_, cm, err := rec.Check()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if rec.Bundle != nil {
			out[cm.Tree] = *rec.Bundle
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out, n
}

// The writer records, with each commit it makes after its first parent's
// leaves are in hand, the bundle hash of the commit's tree: the hash the
// tree's entries give.
func TestGraphRecordsBundleHashes(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	graphHistory(t, r)
	got, n := graphBundles(t, r)
	// 56 commits, 56 trees.
	if n != 56 || len(got) != 56 {
		t.Fatalf("%d of %d records hold a bundle hash", len(got), n)
	}
	for tr, h := range got {
		want, err := objects.TreeBundleHash(ctx, r.Storage, tr)
		if err != nil {
			t.Fatal(err)
		}
		if h != want {
			t.Fatalf("tree %s: recorded %s, its entries give %s", tr, h, want)
		}
	}
	graphVerifyClean(t, r)
}

// A log gives the bundle hash each commit's record holds with the commit,
// without reading its tree.
// A record whose hash is not its tree's (checksum redone) is what verify
// reports, and a rebuild writes it right.
func TestGraphBundleHashReadVerifiedRebuilt(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Close() }()
	head := graphHistory(t, r)
	hc, err := r.Commit(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	right, err := objects.TreeBundleHash(ctx, r.Storage, hc.Tree)
	if err != nil {
		t.Fatal(err)
	}
	// HEAD's record (the newest) gets another hash.
	var name string
	var val []byte
	r.Storage.MetaPrefix(ctx, dag.GraphRecordPrefix, func(n string, v []byte) error {
		name, val = n, v
		return errStopScan
	})
	rec, err := dag.DecodeGraphRecord(val)
	if err != nil || rec.Bundle == nil {
		t.Fatalf("HEAD's record: %+v %v", rec, err)
	}
	if *rec.Bundle != right {
		t.Fatalf("HEAD's record holds %s, want %s", rec.Bundle, right)
	}
	wrong := objects.BundleHash{0xba, 0xd}
	rec.Bundle = &wrong
	if err := r.Storage.SetMeta(ctx, name, rec.Encode()); err != nil {
		t.Fatal(err)
	}
	dir := r.Dir
	r.Close()
	if r, err = repo.Open(dir, repo.Options{}); err != nil {
		t.Fatal(err)
	}
	for e, err := range dag.Log(ctx, r.Blocks, head) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Bundle == nil || *e.Bundle != wrong {
			t.Fatalf("the log gives HEAD's bundle hash as %v, want the recorded %s", e.Bundle, wrong)
		}
		break
	}
	rep, err := r.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rep.Problems, func(p string) bool {
		return strings.Contains(p, "commit graph:") && strings.Contains(p, "is not its tree's")
	}) || len(rep.Problems) != 1 {
		t.Fatalf("verify: %v", rep.Problems)
	}
	if _, err := r.RebuildGraph(ctx); err != nil {
		t.Fatal(err)
	}
	graphVerifyClean(t, r)
	got, n := graphBundles(t, r)
	if got[hc.Tree] != right || len(got) != 56 || n != 56 {
		t.Fatalf("rebuilt: %d of %d records hold a hash; HEAD's %s, want %s", len(got), n, got[hc.Tree], right)
	}
}

// A tree of more bundle leaves than the writer hashes per commit gets a
// record without a hash (version 1), and its bundle hash is computed when
// asked for, as before.
func TestGraphBundleHashBounded(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	small := tree(t, r, "k", "v")
	if _, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: small, Message: "small"}); err != nil {
		t.Fatal(err)
	}
	var kv []string
	for i := range 1100 {
		kv = append(kv, fmt.Sprintf("k/%04d", i), fmt.Sprint(i))
	}
	big := tree(t, r, kv...)
	if _, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: big, Message: "big"}); err != nil {
		t.Fatal(err)
	}
	got, n := graphBundles(t, r)
	if _, ok := got[big]; ok || n != 2 {
		t.Fatalf("records %d, a tree of 1100 keys has a recorded hash: %v", n, ok)
	}
	if _, ok := got[small]; !ok {
		t.Fatal("a tree of one key has no recorded hash")
	}
	want, _ := objects.TreeBundleHash(ctx, r.Storage, big)
	if h, err := r.BundleHash(ctx, big); err != nil || h != want {
		t.Fatalf("bundle hash of the big tree %s, %v", h, err)
	}
	graphVerifyClean(t, r)
}
