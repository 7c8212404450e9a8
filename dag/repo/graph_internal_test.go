package repo

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

// A new commit's graph record is written with it without a lookup of a
// record it cannot have (the write's existence check of the commit tells),
// and a commit written again, identical, gets no second record.
func TestNewCommitWritesItsGraphRecordWithoutLookingItUp(t *testing.T) {
	ctx := context.Background()
	r, err := Init(filepath.Join(t.TempDir(), "s"), Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Now = func() int64 { return 1700000000 }
	tree, err := r.EmptyTree(ctx)
	if err != nil {
		t.Fatal(err)
	}
	spec := func(parent objects.CID, msg string) CommitSpec {
		s := CommitSpec{Tree: tree, Message: msg, ParentTime: 1700000000}
		if !parent.IsZero() {
			s.Parents = []objects.CID{parent}
		}
		return s
	}
	first, _, err := r.WriteCommit(ctx, spec(objects.CID{}, "first"))
	if err != nil {
		t.Fatal(err)
	}
	before := graphLookups.Load()
	last, child := first, objects.CID{}
	for i, d := range []context.Context{Deferred(ctx), Deferred(ctx), ctx} {
		if last, _, err = r.WriteCommit(d, spec(last, string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			child = last
		}
	}
	if n := graphLookups.Load() - before; n != 0 {
		t.Fatalf("three new commits on a known parent looked up %d graph records, want 0", n)
	}
	again, _, err := r.WriteCommit(ctx, spec(first, "a"))
	if err != nil || again != child {
		t.Fatalf("the first child written again: %s, %v; want %s", again, err, child)
	}
	rep, err := r.VerifyGraph(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 || rep.Records != 4 {
		t.Fatalf("graph after writing %s again: %d records, problems %q; want 4, none", again.Short(), rep.Records, rep.Problems)
	}
	if p, ok, err := r.graphPosOf(ctx, last); err != nil || !ok || p.gen != 4 {
		t.Fatalf("record of the last commit: %+v, %v, %v", p, ok, err)
	}
}
