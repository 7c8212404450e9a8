package inspect_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
)

// A range A..B is what B reaches and A does not, as git's: across a merge,
// a side branch A does not reach is in it, though older than A.
func TestLogRange(t *testing.T) {
	ctx := context.Background()
	now := int64(1_700_000_000)
	r := repo.New(memory.New()).WithClock(func() int64 { now += 3600; return now })
	v := inspect.New(r)
	if _, err := v.Put(ctx, "lumen", "a.md", []byte("a\n"), inspect.WriteOptions{Message: "root"}); err != nil {
		t.Fatal(err)
	}
	root, err := v.Head(ctx, "lumen")
	if err != nil {
		t.Fatal(err)
	}
	cm, err := r.Commit(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(msg string, task string, parents ...objects.CID) objects.CID {
		t.Helper()
		id, _, err := r.WriteCommit(ctx, repo.CommitSpec{Tree: cm.Tree, Parents: parents, Message: msg, Metadata: map[string]string{"task": task}})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	side := commit("side", "t-side", root) // older than m1
	m1 := commit("m1", "t-1", root)
	x := commit("merge", "t-1", m1, side)
	m2 := commit("m2", "t-2", x)
	if _, err := r.Reset(ctx, "lumen", m2); err != nil {
		t.Fatal(err)
	}
	msgs := func(o inspect.LogOptions) string {
		t.Helper()
		h, err := v.Log(ctx, "lumen", o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		var s []string
		for _, c := range h.Commits {
			s = append(s, c.Message)
		}
		return strings.Join(s, ",")
	}
	at := func(n int) time.Time { return time.Unix(1_700_000_000+3600*int64(n), 0) }
	for _, c := range []struct {
		o    inspect.LogOptions
		want string
	}{
		{inspect.LogOptions{}, "m2,merge,m1,side,root"},
		{inspect.LogOptions{Rev: m1.String() + "..HEAD"}, "m2,merge,side"},
		{inspect.LogOptions{Rev: m1.String() + ".."}, "m2,merge,side"},
		{inspect.LogOptions{Rev: "HEAD", Exclude: side.String()}, "m2,merge,m1"},
		{inspect.LogOptions{Rev: ".." + m1.String()}, ""},
		{inspect.LogOptions{Rev: side.String() + ".." + x.String(), Limit: 1}, "merge"},
		{inspect.LogOptions{Task: "t-1"}, "merge,m1"},
		{inspect.LogOptions{Grep: "MERGE"}, "merge"},
		{inspect.LogOptions{Grep: "t-side"}, "side"},
		{inspect.LogOptions{Since: at(3)}, "m2,merge,m1"},
		{inspect.LogOptions{Until: at(3)}, "m1,side,root"},
		{inspect.LogOptions{Since: at(2), Until: at(3), Rev: m1.String() + "..HEAD"}, "side"},
		{inspect.LogOptions{Paths: []string{"b.md", "a.md"}}, "root"},
	} {
		if got := msgs(c.o); got != c.want {
			t.Errorf("log %+v: %q, want %q", c.o, got, c.want)
		}
	}
	for _, c := range []struct {
		o    inspect.LogOptions
		want string
	}{
		{inspect.LogOptions{Rev: "HEAD...HEAD~1"}, "A...B is not supported"},
		{inspect.LogOptions{Rev: "a..b..c"}, "one .."},
		{inspect.LogOptions{Rev: "HEAD~1..HEAD", Exclude: "HEAD~2"}, "give one"},
		{inspect.LogOptions{Rev: "nope..HEAD"}, "nope"},
		{inspect.LogOptions{Grep: strings.Repeat("x", 1<<20)}, "search text of 1048576 bytes"},
		{inspect.LogOptions{Task: strings.Repeat("x", 1<<20)}, "task id of 1048576 bytes"},
		{inspect.LogOptions{Paths: []string{"ok.md", "../x"}}, "key"},
		{inspect.LogOptions{Since: at(3), Until: at(2)}, "is before since"},
	} {
		_, err := v.Log(ctx, "lumen", c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, inspect.ErrBadRequest) {
			t.Errorf("log %.80v: %v, want a bad request saying %q", c.o, err, c.want)
		}
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"2026-11-20T10:00:00Z":      time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC),
		"2026-11-20T10:00:00+02:00": time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC),
		"2026-11-20":                time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC),
		"2 days ago":                now.Add(-48 * time.Hour),
		"1 day ago":                 now.Add(-24 * time.Hour),
		"3 Hours Ago":               now.Add(-3 * time.Hour),
		"90 seconds ago":            now.Add(-90 * time.Second),
		"1 week ago":                now.Add(-7 * 24 * time.Hour),
		"10 minutes ago":            now.Add(-10 * time.Minute),
	} {
		got, err := inspect.ParseWhen(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseWhen(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "yesterday", "2 days", "-2 days ago", "2 fortnights ago", "9999999999 days ago", "999999999 weeks ago", "2026-13-01", strings.Repeat("1", 1<<20)} {
		if _, err := inspect.ParseWhen(in, now); err == nil || !errors.Is(err, inspect.ErrBadRequest) {
			t.Errorf("ParseWhen(%.40q): %v, want a bad request", in, err)
		}
	}
}

// The cost of a range over a long history: A..B walks what A reaches once
// (here HEAD~10..HEAD over 10,000 commits), and a filter walks the whole log.
func BenchmarkLogRange10k(b *testing.B) {
	ctx := context.Background()
	v := longHistory(b, 10_000)
	for _, c := range []struct {
		name string
		o    inspect.LogOptions
	}{
		{"range", inspect.LogOptions{Rev: "HEAD~10..HEAD", NoBundleHash: true}},
		{"grep", inspect.LogOptions{Grep: "no such text", NoBundleHash: true}},
		{"since", inspect.LogOptions{Since: time.Unix(1_700_000_000+9_990, 0), NoBundleHash: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := v.Log(ctx, "lumen", c.o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
