package repo_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// graphHistory makes a history with two lines of work merged back, as
// sync and task landings make: 40 commits on "a", a branch of 10 on "b"
// from a's 20th, and a merge of b into a; then 5 more on a.
func graphHistory(t *testing.T, r *repo.Repo) objects.CID {
	t.Helper()
	ctx := context.Background()
	t.Setenv("SOURCE_DATE_EPOCH", "1700000000") // many commits in one second: the log orders them by the graph
	var fork, head objects.CID
	for i := range 40 {
		id, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: tree(t, r, "k", fmt.Sprint(i)), Message: fmt.Sprintf("a %d", i),
			Metadata: map[string]string{"task": fmt.Sprint("t", i)}})
		if err != nil {
			t.Fatal(err)
		}
		if i == 19 {
			fork = id
		}
		head = id
	}
	if _, err := r.Fork(ctx, "a", fork, "b"); err != nil {
		t.Fatal(err)
	}
	var bh objects.CID
	for i := range 10 {
		id, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "b", Tree: tree(t, r, "j", fmt.Sprint(i)), Message: fmt.Sprintf("b %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		bh = id
	}
	m, _, err := r.WriteCommit(ctx, repo.CommitSpec{Tree: tree(t, r, "k", "m", "j", "m"), Parents: []objects.CID{head, bh}, Message: "merge"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reset(ctx, "a", m); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if head, _, err = r.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: tree(t, r, "k", fmt.Sprint("after ", i)), Message: "after"}); err != nil {
			t.Fatal(err)
		}
	}
	return head
}

// graphLogOf is the log from start as CIDs and messages, read through bs.
func graphLogOf(t *testing.T, bs objects.BlockStore, start objects.CID) []string {
	t.Helper()
	var out []string
	for e, err := range dag.Log(context.Background(), bs, start) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.CID.String()+" "+e.Commit.Message+" "+fmt.Sprint(e.Commit.Parents))
	}
	return out
}

// objectLog is the log read from the commit objects alone (no graph).
func objectLog(t *testing.T, r *repo.Repo, start objects.CID) []string {
	return graphLogOf(t, dag.WithCommitCache(r.Storage, 1<<10), start)
}

func graphRecords(t *testing.T, r *repo.Repo) int {
	t.Helper()
	n := 0
	if err := r.Storage.MetaPrefix(context.Background(), dag.GraphRecordPrefix, func(string, []byte) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

func graphVerifyClean(t *testing.T, r *repo.Repo) repo.VerifyReport {
	t.Helper()
	rep, err := r.Verify(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 {
		t.Fatalf("verify: %v", rep.Problems)
	}
	return rep
}

// A store keeps a commit-graph record of every commit its writer makes,
// and a log read through the graph is the log of the commit objects.
func TestGraphKeptByTheWriter(t *testing.T) {
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	head := graphHistory(t, r)
	if n := graphRecords(t, r); n != 56 {
		t.Fatalf("%d graph records for 56 commits", n)
	}
	got, want := graphLogOf(t, r.Blocks, head), objectLog(t, r, head)
	if !slices.Equal(got, want) || len(got) != 56 {
		t.Fatalf("log through the graph (%d commits) differs from the objects' (%d)", len(got), len(want))
	}
	rep := graphVerifyClean(t, r)
	if rep.GraphRecords != 56 {
		t.Fatalf("verify counted %d graph records", rep.GraphRecords)
	}
}

// Records that are damaged, that name the wrong commit, or that lie about
// a parent or a generation are never used: the log is the objects' log,
// verify names each bad record, and RebuildGraph makes the graph whole.
func TestGraphDamageIgnoredVerifiedRebuilt(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Close() }() // the repository open at the end
	head := graphHistory(t, r)
	want := objectLog(t, r, head)
	var names []string
	var vals [][]byte
	r.Storage.MetaPrefix(ctx, dag.GraphRecordPrefix, func(n string, v []byte) error {
		names, vals = append(names, n), append(vals, v)
		return nil
	})
	// 1: flipped bits (the checksum); 2: another commit's record under this
	// number (a record that names the wrong commit); 3: a parent number
	// pointing at the wrong record; 4: a wrong generation, checksum redone.
	flip := slices.Clone(vals[1])
	flip[len(flip)/2] ^= 0x40
	r.Storage.SetMeta(ctx, names[1], flip)
	r.Storage.SetMeta(ctx, names[2], vals[10])
	rec, err := dag.DecodeGraphRecord(vals[3])
	if err != nil || len(rec.ParentSeqs) == 0 {
		t.Fatalf("record 3: %v", err)
	}
	rec.ParentSeqs[0] = 1 // record 0: the first commit, not its parent
	r.Storage.SetMeta(ctx, names[3], rec.Encode())
	rec, _ = dag.DecodeGraphRecord(vals[4])
	rec.Gen += 3
	r.Storage.SetMeta(ctx, names[4], rec.Encode())
	// A fresh open (no positions in memory) reads the damaged graph.
	dir := r.Dir
	r.Close()
	if r, err = repo.Open(dir, repo.Options{}); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := graphLogOf(t, r.Blocks, head); !slices.Equal(got, want) {
		t.Fatalf("log through a damaged graph:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	rep, err := r.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"checksum mismatch", "does not hold it", "is not record", "generation"} {
		if !slices.ContainsFunc(rep.Problems, func(p string) bool { return strings.Contains(p, w) }) {
			t.Errorf("verify did not report %q: %v", w, rep.Problems)
		}
	}
	if rep.GraphProblems == 0 || rep.GraphProblems != len(rep.Problems) {
		t.Errorf("graph problems %d of %d", rep.GraphProblems, len(rep.Problems))
	}
	if n, err := r.RebuildGraph(ctx); err != nil || n != 56 {
		t.Fatalf("rebuild: %d records, %v", n, err)
	}
	graphVerifyClean(t, r)
	if got := graphLogOf(t, r.Blocks, head); !slices.Equal(got, want) {
		t.Fatal("log after rebuild differs")
	}
}

// A graph that is behind (history from before it, records lost) is read
// where it has records and the objects elsewhere; the next commit adds
// the missing history, parents first.
func TestGraphBehindIsFilledIn(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { r.Close() }() // the repository open at the end
	head := graphHistory(t, r)
	want := objectLog(t, r, head)
	// Lose the index of every other commit, and half the records.
	i := 0
	var drop []string
	r.Storage.MetaPrefix(ctx, dag.GraphPrefix, func(n string, _ []byte) error {
		if i++; i%2 == 0 {
			drop = append(drop, n)
		}
		return nil
	})
	for _, n := range drop {
		if err := r.Storage.DeleteMetaPrefix(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	dir := r.Dir
	r.Close()
	if r, err = repo.Open(dir, repo.Options{}); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := graphLogOf(t, r.Blocks, head); !slices.Equal(got, want) {
		t.Fatal("log through a graph missing records differs")
	}
	// No graph at all: a store from before it.
	if err := r.Storage.DeleteMetaPrefix(ctx, dag.GraphPrefix); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if r, err = repo.Open(dir, repo.Options{}); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := graphLogOf(t, r.Blocks, head); !slices.Equal(got, want) {
		t.Fatal("log with no graph differs")
	}
	graphVerifyClean(t, r)
	if _, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: tree(t, r, "k", "new"), Message: "new"}); err != nil {
		t.Fatal(err)
	}
	if n := graphRecords(t, r); n != 57 {
		t.Fatalf("after one commit on a store with no graph: %d records, want 57", n)
	}
	graphVerifyClean(t, r)
}

// gc deletes what forget cut and the graph follows: no record names a
// deleted commit, and the log of the cut history is the objects' log.
func TestGraphAfterForget(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	graphHistory(t, r)
	if _, err := r.Forget(ctx, "a", repo.Policy{Last: 3}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Forget(ctx, "b", repo.Policy{Last: 2}, false); err != nil {
		t.Fatal(err)
	}
	graphVerifyClean(t, r)
	h, err := r.Refs.Head(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	lo, _, err := r.LogOptions(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	var got, want []objects.CID
	for e, err := range dag.LogWith(ctx, r.Blocks, h.Commit, lo) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.CID)
	}
	for e, err := range dag.LogWith(ctx, dag.WithCommitCache(r.Storage, 64), h.Commit, lo) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, e.CID)
	}
	if !slices.Equal(got, want) || len(got) == 0 {
		t.Fatalf("log after forget: %d commits through the graph, %d from the objects", len(got), len(want))
	}
	if n := graphRecords(t, r); n == 0 || n >= 56 {
		t.Fatalf("%d graph records after forget", n)
	}
}

// Two agents writing by turns interleave their records: each one's log
// reads the graph in passes that skip the other's records, and is the
// objects' log.
func TestGraphInterleavedAgents(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	now := int64(1_700_000_000)
	r.Now = func() int64 { now++; return now }
	for i := range 600 {
		agent := []string{"a", "b", "b"}[i%3]
		if _, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: agent, Tree: tree(t, r, "k", fmt.Sprint(i)), Message: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, agent := range []string{"a", "b"} {
		h, err := r.Refs.Head(ctx, agent)
		if err != nil {
			t.Fatal(err)
		}
		got, want := graphLogOf(t, r.Blocks, h.Commit), objectLog(t, r, h.Commit)
		if !slices.Equal(got, want) || len(got) != map[string]int{"a": 200, "b": 400}[agent] {
			t.Fatalf("%s: %d commits through the graph, %d from the objects", agent, len(got), len(want))
		}
	}
	graphVerifyClean(t, r)
	// The graph alone serves the walk: with every commit object deleted
	// from the store, the log is the same.
	h, _ := r.Refs.Head(ctx, "b")
	want := graphLogOf(t, r.Blocks, h.Commit)
	var commits []objects.CID
	for e, err := range dag.Log(ctx, r.Blocks, h.Commit) {
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, e.CID)
	}
	if err := r.Storage.(objects.BlockDeleter).Delete(ctx, commits...); err != nil {
		t.Fatal(err)
	}
	dir := r.Dir
	r.Close()
	if r, err = repo.Open(dir, repo.Options{}); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := graphLogOf(t, r.Blocks, h.Commit); !slices.Equal(got, want) {
		t.Fatalf("log from the graph alone: %d commits, want %d", len(got), len(want))
	}
}
