package repo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// history writes n puts to agent, one an hour from a fixed start; every put
// changes "big" (a value of its own) and "n". It returns the commits, oldest
// first.
func hourly(t *testing.T, r *repo.Repo, clock *int64, agent string, n int) []objects.CID {
	t.Helper()
	var out []objects.CID
	for i := range n {
		*clock += 3600
		out = append(out, mustPut(t, r, agent, "big", strings.Repeat(fmt.Sprint(i), 1000)))
		*clock += 1
		out = append(out, mustPut(t, r, agent, "n", fmt.Sprint(i)))
	}
	return out
}

func logOf(t *testing.T, r *repo.Repo, agent string) []dag.LogEntry {
	t.Helper()
	ctx := context.Background()
	o, _, err := r.LogOptions(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	var out []dag.LogEntry
	for le, err := range dag.LogWith(ctx, r.Blocks, headOf(t, r, agent), o) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, le)
	}
	return out
}

func verifyClean(t *testing.T, r *repo.Repo) {
	t.Helper()
	rep, err := r.Verify(context.Background())
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}

func TestForgetKeepLast(t *testing.T) {
	owners(t, func(t *testing.T, r *repo.Repo) {
		ctx := context.Background()
		clock := int64(1_700_000_000)
		r = r.WithClock(func() int64 { return clock })
		cs := hourly(t, r, &clock, "a", 20) // 40 commits, 40 operations
		hashes := map[objects.CID]objects.BundleHash{}
		for _, c := range cs {
			h, err := r.CommitBundleHash(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			hashes[c] = h
		}
		dry, err := r.Forget(ctx, "a", repo.Policy{Last: 5}, true)
		if err != nil {
			t.Fatal(err)
		}
		if dry.GC.Deleted == 0 || dry.CutOps != 35 || len(dry.Forgotten) != 35 {
			t.Fatalf("dry run: %+v", dry)
		}
		if got := len(logOf(t, r, "a")); got != 40 {
			t.Fatalf("a dry run changed the log: %d commits", got)
		}
		rep, err := r.Forget(ctx, "a", repo.Policy{Last: 5}, false)
		if err != nil {
			t.Fatal(err)
		}
		if rep.GC.Deleted != dry.GC.Deleted || rep.GC.BytesFreed != dry.GC.BytesFreed || rep.Horizon != cs[35] {
			t.Fatalf("forget %+v, dry run said %+v", rep, dry)
		}
		verifyClean(t, r)
		// The log: the five kept states, the oldest marked as cut.
		log := logOf(t, r, "a")
		if len(log) != 5 || log[4].CID != cs[35] || len(log[4].Cut) != 1 || log[4].Cut[0] != cs[34] {
			t.Fatalf("log after forget: %d entries, last %+v", len(log), log[len(log)-1])
		}
		// Every kept commit reads as before.
		for _, c := range cs[35:] {
			if h, err := r.CommitBundleHash(ctx, c); err != nil || h != hashes[c] {
				t.Fatalf("kept commit %s: %v %v", c.Short(), h, err)
			}
		}
		if _, err := r.Tree(ctx, cs[20]); err == nil {
			t.Fatal("a forgotten commit's tree still reads")
		}
		// The log is cut: verify proves it from the cut; undo stops at the
		// horizon.
		es, err := r.Refs.Entries(ctx, "a")
		if err != nil || len(es) != 5 || es[0].Seq != 36 {
			t.Fatalf("entries after forget: %d %v", len(es), err)
		}
		for range 4 {
			if _, err := r.Undo(ctx, "a"); err != nil {
				t.Fatal(err)
			}
		}
		if headOf(t, r, "a") != cs[35] {
			t.Fatal("undo did not walk back to the horizon")
		}
		if _, err := r.Undo(ctx, "a"); !errors.Is(err, repo.ErrHorizon) {
			t.Fatalf("undo past the horizon: %v", err)
		}
		verifyClean(t, r)
		// New work after a forget, then a second forget.
		clock += 3600
		mustPut(t, r, "a", "later", "x")
		if _, err := r.Forget(ctx, "a", repo.Policy{Last: 2}, false); err != nil {
			t.Fatal(err)
		}
		verifyClean(t, r)
		if _, err := r.GC(ctx, false); err != nil {
			t.Fatal(err)
		}
		verifyClean(t, r)
		// A fork of the cut history walks it as a's log does, and forgets
		// on its own; a's third forget keeps the old cuts the fork needs.
		if _, err := r.Fork(ctx, "a", headOf(t, r, "a"), "c"); err != nil {
			t.Fatal(err)
		}
		clock += 3600
		mustPut(t, r, "c", "c-only", "y")
		if got := len(logOf(t, r, "c")); got < 3 {
			t.Fatalf("the fork's log has %d commits", got)
		}
		verifyClean(t, r)
		clock += 3600
		mustPut(t, r, "a", "more", "z")
		if _, err := r.Forget(ctx, "a", repo.Policy{Last: 1}, false); err != nil {
			t.Fatal(err)
		}
		verifyClean(t, r)
		if _, err := r.Forget(ctx, "c", repo.Policy{Last: 1}, false); err != nil {
			t.Fatal(err)
		}
		verifyClean(t, r)
		if got := len(logOf(t, r, "c")); got != 1 {
			t.Fatalf("the fork's log after its forget has %d commits", got)
		}
	})
}

func TestForgetIslandsTagsAndForks(t *testing.T) {
	owners(t, func(t *testing.T, r *repo.Repo) {
		ctx := context.Background()
		clock := int64(1_700_000_000)
		r = r.WithClock(func() int64 { return clock })
		cs := hourly(t, r, &clock, "a", 48) // two days of hourly states
		if err := r.SetTag(ctx, "a", "golden", cs[30]); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Fork(ctx, "a", cs[10], "b"); err != nil {
			t.Fatal(err)
		}
		rep, err := r.Forget(ctx, "a", repo.Policy{Last: 3, Daily: 3}, false)
		if err != nil {
			t.Fatal(err)
		}
		verifyClean(t, r)
		// Kept: the last 3 states, the last state of each day (two days and
		// the first), and the tag.
		if rep.Islands < 3 {
			t.Fatalf("islands %+v", rep)
		}
		log := logOf(t, r, "a")
		var inLog []objects.CID
		for _, le := range log {
			inLog = append(inLog, le.CID)
		}
		if !contains(inLog, cs[30]) {
			t.Fatalf("the tagged commit is not in the log: %v", inLog)
		}
		if _, err := r.Tree(ctx, cs[30]); err != nil {
			t.Fatalf("tagged commit: %v", err)
		}
		// b forked at cs[10]: its history is whole.
		n := 0
		for _, err := range dag.Log(ctx, r.Blocks, headOf(t, r, "b")) {
			if err != nil {
				t.Fatalf("b's history after a's forget: %v", err)
			}
			n++
		}
		if n != 11 {
			t.Fatalf("b's log has %d commits, want 11", n)
		}
		// Deleting the tag lets the next forget take it.
		if ok, err := r.DeleteTag(ctx, "a", "golden"); err != nil || !ok {
			t.Fatal(err)
		}
		if _, err := r.Forget(ctx, "a", repo.Policy{Last: 3}, false); err != nil {
			t.Fatal(err)
		}
		verifyClean(t, r)
		if _, err := r.Tree(ctx, cs[30]); err == nil {
			t.Fatal("an untagged, unkept commit survived forget")
		}
	})
}

// A checkpoint written and nothing else (a forget killed before trimming
// and deleting) verifies clean, and the next forget or gc finishes the job.
func TestForgetInterrupted(t *testing.T) {
	owners(t, func(t *testing.T, r *repo.Repo) {
		ctx := context.Background()
		clock := int64(1_700_000_000)
		r = r.WithClock(func() int64 { return clock })
		hourly(t, r, &clock, "a", 10)
		if err := r.WriteCheckpointOnly(ctx, "a", repo.Policy{Last: 2}); err != nil {
			t.Fatal(err)
		}
		verifyClean(t, r)
		es, err := r.Refs.Entries(ctx, "a")
		if err != nil || len(es) != 2 {
			t.Fatalf("entries with the checkpoint written: %d %v", len(es), err)
		}
		gc, err := r.GC(ctx, false)
		if err != nil || gc.Deleted == 0 {
			t.Fatalf("gc after an interrupted forget: %+v %v", gc, err)
		}
		verifyClean(t, r)
		if _, err := r.Forget(ctx, "a", repo.Policy{Last: 2}, false); err != nil {
			t.Fatal(err)
		}
		verifyClean(t, r)
	})
}

func contains(cs []objects.CID, c objects.CID) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

var _ = time.Second

func TestDiskUsage(t *testing.T) {
	owners(t, func(t *testing.T, r *repo.Repo) {
		ctx := context.Background()
		clock := int64(1_700_000_000)
		r = r.WithClock(func() int64 { return clock })
		cs := hourly(t, r, &clock, "a", 10)
		u, err := r.DiskUsage(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		if len(u.Commits) != 20 || u.Commits[0].CID != cs[19] || u.Commits[19].CID != cs[0] {
			t.Fatalf("commits %d", len(u.Commits))
		}
		var added int64
		for _, c := range u.Commits {
			if c.Size != c.Added+c.Shared || c.Added <= 0 {
				t.Fatalf("commit %+v", c)
			}
			added += c.Added
		}
		// Every live block was added by exactly one commit.
		if added != u.Store.LiveBytes || u.Store.Reclaimable != 0 || u.Store.Bytes != u.Store.LiveBytes {
			t.Fatalf("added %d, store %+v", added, u.Store)
		}
		// "big" had 10 values of 1000 bytes; "n" 10 of one byte.
		if len(u.Keys) != 2 || u.Keys[0].Key != "big" || u.Keys[0].Versions != 10 || u.Keys[0].Bytes != 10000 || u.Keys[0].Current != 1000 {
			t.Fatalf("keys %+v", u.Keys)
		}
		// After a forget planned but not yet pruned, the cut blocks are
		// reclaimable.
		if err := r.WriteCheckpointOnly(ctx, "a", repo.Policy{Last: 2}); err != nil {
			t.Fatal(err)
		}
		u2, err := r.DiskUsage(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		gc, err := r.GC(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		if u2.Store.ReclaimableBytes != gc.BytesFreed || u2.Store.Reclaimable != gc.Deleted || len(u2.Commits) != 2 {
			t.Fatalf("after the checkpoint: %+v, gc would free %+v, %d commits", u2.Store, gc, len(u2.Commits))
		}
	})
}

// Forgetting several agents cuts each as Forget does and collects once:
// the one collection frees what the agents' cuts left unreachable, and a
// gc after it finds nothing more. An agent that fails is named in the
// error; the others are cut and collected all the same.
func TestForgetAgentsCollectsOnce(t *testing.T) {
	owners(t, func(t *testing.T, r *repo.Repo) {
		ctx := context.Background()
		clock := int64(1_700_000_000)
		r = r.WithClock(func() int64 { return clock })
		for _, a := range []string{"a", "b", "c"} {
			hourly(t, r, &clock, a, 10)
		}
		p := repo.Policy{Last: 2}
		dry, dgc, err := r.ForgetAgents(ctx, []string{"a", "b", "c"}, p, true)
		if err != nil || len(dry) != 3 || dgc.Deleted == 0 {
			t.Fatalf("dry run: %v, %d reports, %+v", err, len(dry), dgc)
		}
		if len(logOf(t, r, "a")) != 20 {
			t.Fatal("a dry run cut history")
		}
		reps, gc, err := r.ForgetAgents(ctx, []string{"a", "b", "c"}, p, false)
		if err != nil || len(reps) != 3 {
			t.Fatalf("forget: %v, %d reports", err, len(reps))
		}
		if gc.Deleted != dgc.Deleted || gc.BytesFreed != dgc.BytesFreed {
			t.Fatalf("freed %+v, the dry run said %+v", gc, dgc)
		}
		for i, a := range []string{"a", "b", "c"} {
			if reps[i].Agent != a || reps[i].CutOps == 0 || reps[i].GC != (repo.GCReport{}) || reps[i].DryRun {
				t.Fatalf("report %d: %+v", i, reps[i])
			}
			if n := len(logOf(t, r, a)); n != 2 {
				t.Fatalf("%s keeps %d commits, want 2", a, n)
			}
		}
		if more, err := r.GC(ctx, true); err != nil || more.Deleted != 0 {
			t.Fatalf("gc after the collection would free %+v (%v)", more, err)
		}
		verifyClean(t, r)

		hourly(t, r, &clock, "a", 3)
		hourly(t, r, &clock, "b", 3)
		reps, gc, err = r.ForgetAgents(ctx, []string{"a", "nobody", "b"}, p, false)
		if err == nil || !strings.Contains(err.Error(), "nobody") || len(reps) != 2 || reps[0].Agent != "a" || reps[1].Agent != "b" || gc.Deleted == 0 {
			t.Fatalf("a round with a missing agent: %v, %d reports, %+v", err, len(reps), gc)
		}
		if len(logOf(t, r, "a")) != 2 || len(logOf(t, r, "b")) != 2 {
			t.Fatalf("after the round a keeps %d, b %d commits", len(logOf(t, r, "a")), len(logOf(t, r, "b")))
		}
		if more, err := r.GC(ctx, true); err != nil || more.Deleted != 0 {
			t.Fatalf("gc after the round would free %+v (%v)", more, err)
		}
		verifyClean(t, r)
	})
}

// A tag keeps a commit from forget: an existing tag is never moved
// silently. Re-tagging the same commit is a no-op; moving needs MoveTag.
func TestSetTagRefusesToMoveATag(t *testing.T) {
	owners(t, func(t *testing.T, r *repo.Repo) {
		ctx := context.Background()
		c1 := mustPut(t, r, "a", "k", "1")
		c2 := mustPut(t, r, "a", "k", "2")
		if err := r.SetTag(ctx, "a", "keep", c1); err != nil {
			t.Fatal(err)
		}
		if err := r.SetTag(ctx, "a", "keep", c1); err != nil {
			t.Fatalf("re-tagging the same commit: %v", err)
		}
		err := r.SetTag(ctx, "a", "keep", c2)
		var te *repo.TagExistsError
		if !errors.Is(err, repo.ErrTagExists) || !errors.As(err, &te) || te.Commit != c1 || te.Want != c2 {
			t.Fatalf("moving a tag with SetTag: %v", err)
		}
		tagOf := func() objects.CID {
			tags, err := r.Tags(ctx, "a")
			if err != nil || len(tags["a"]) != 1 {
				t.Fatalf("tags %v %v", tags, err)
			}
			return tags["a"][0].Commit
		}
		if got := tagOf(); got != c1 {
			t.Fatalf("the refused SetTag moved the tag to %s", got)
		}
		if err := r.MoveTag(ctx, "a", "keep", c2); err != nil {
			t.Fatal(err)
		}
		if got := tagOf(); got != c2 {
			t.Fatalf("MoveTag left the tag on %s", got)
		}
		// Another agent's tag of the same name is its own.
		mustPut(t, r, "b", "k", "x")
		if err := r.SetTag(ctx, "b", "keep", c1); err != nil {
			t.Fatal(err)
		}
	})
}
