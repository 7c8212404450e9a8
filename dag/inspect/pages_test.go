package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
)

// longHistory is an agent whose history is n commits (a merge every 1000th).
func longHistory(tb testing.TB, n int) *inspect.View {
	ctx := context.Background()
	now := int64(1_700_000_000)
	r := repo.New(memory.New()).WithClock(func() int64 { now++; return now })
	v := inspect.New(r)
	if _, err := v.Put(ctx, "lumen", "a.md", []byte("a\n"), inspect.WriteOptions{}); err != nil {
		tb.Fatal(err)
	}
	head, err := v.Head(ctx, "lumen")
	if err != nil {
		tb.Fatal(err)
	}
	cm, err := r.Commit(ctx, head)
	if err != nil {
		tb.Fatal(err)
	}
	side := head
	for i := 1; i < n; i++ {
		parents := []objects.CID{head}
		if i%1000 == 0 {
			parents = append(parents, side)
		}
		id, _, err := r.WriteCommit(ctx, repo.CommitSpec{Tree: cm.Tree, Parents: parents, Message: fmt.Sprint("step ", i)})
		if err != nil {
			tb.Fatal(err)
		}
		if i%1000 == 500 {
			if side, _, err = r.WriteCommit(ctx, repo.CommitSpec{Tree: cm.Tree, Parents: []objects.CID{head}, Message: fmt.Sprint("side ", i)}); err != nil {
				tb.Fatal(err)
			}
		}
		head = id
	}
	if _, err := r.Reset(ctx, "lumen", head); err != nil {
		tb.Fatal(err)
	}
	return v
}

// A page of a history and the errors of what a client sends: a search of
// 1 MB, a forged cursor, another agent's.
func TestLogPageRefusals(t *testing.T) {
	ctx := context.Background()
	v := longHistory(t, 450)
	p, err := v.LogPage(ctx, "lumen", inspect.LogPageOptions{})
	if err != nil || len(p.Commits) != 200 || p.Next == "" || p.Commits[0].Message != "step 449" {
		t.Fatalf("first page: %d commits, next %q, %v", len(p.Commits), p.Next, err)
	}
	if _, err := v.Fork(ctx, "lumen", "", "other"); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]inspect.LogPageOptions{
		"a search of 1 MB":   {Grep: strings.Repeat("x", 1<<20)},
		"a forged cursor":    {Cursor: "eyJhIjoibHVtZW4ifQ"},
		"not a cursor":       {Cursor: "!!"},
		"a long prefix":      {Prefix: strings.Repeat("k", objects.MaxKeyLen+1)},
		"an invalid key":     {Path: "../x"},
		"another agent's":    {Cursor: p.Next, Rev: ""},
		"a cursor of 100 KB": {Cursor: strings.Repeat("A", 100<<10)},
	} {
		agent := "lumen"
		if name == "another agent's" {
			agent = "other"
		}
		if _, err := v.LogPage(ctx, agent, o); !errors.Is(err, inspect.ErrBadRequest) {
			t.Errorf("%s: %v, want a bad request", name, err)
		}
	}
	p2, err := v.LogPage(ctx, "lumen", inspect.LogPageOptions{Cursor: p.Next, Grep: "SIDE"})
	if err != nil || len(p2.Commits) != 0 || p2.Next != "" || p2.Scanned != 450-200 {
		t.Fatalf("searched on from the cursor: %d commits, %d scanned, %v", len(p2.Commits), p2.Scanned, err)
	}
}

// BenchmarkLogPage100k reads the first page (200 commits) of a history of
// 100,000 commits, then the page 50,000 commits down from its cursor.
func BenchmarkLogPage100k(b *testing.B) {
	ctx := context.Background()
	v := longHistory(b, 100_000)
	p, err := v.LogPage(ctx, "lumen", inspect.LogPageOptions{Limit: 50_000})
	if err != nil || p.Next == "" {
		b.Fatal(err)
	}
	deep := p.Next
	b.Run("first", func(b *testing.B) {
		for b.Loop() {
			if p, err := v.LogPage(ctx, "lumen", inspect.LogPageOptions{}); err != nil || len(p.Commits) != 200 {
				b.Fatal(err)
			}
		}
	})
	b.Run("at-50000", func(b *testing.B) {
		for b.Loop() {
			if p, err := v.LogPage(ctx, "lumen", inspect.LogPageOptions{Cursor: deep}); err != nil || len(p.Commits) != 200 {
				b.Fatal(err)
			}
		}
	})
}
