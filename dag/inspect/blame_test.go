package inspect_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/runtime"
)

type origin struct {
	commit   objects.CID
	task     string
	boundary bool
}

func checkBlame(t *testing.T, b inspect.Blame, text []string, want []origin) {
	t.Helper()
	if len(b.Lines) != len(want) {
		t.Fatalf("%d lines, want %d: %+v", len(b.Lines), len(want), b.Lines)
	}
	for i, l := range b.Lines {
		if l.Line != i+1 || l.Text != text[i] || l.Commit != want[i].commit || l.Task != want[i].task || l.Boundary != want[i].boundary {
			t.Errorf("line %d: %d %q %s task %q boundary %v; want %q %s task %q boundary %v", i+1, l.Line, l.Text, l.Commit.Short(), l.Task, l.Boundary,
				text[i], want[i].commit.Short(), want[i].task, want[i].boundary)
		}
	}
}

// Lines a task left alone keep the commit that wrote them; a line a task
// changed is its commit's, with its task and time; a file a task wrote
// beside another task that landed first (a merge) is the writing task's
// commit, not the merge's.
func TestBlameTasksAndMerge(t *testing.T) {
	ctx := context.Background()
	v, ids := fixture(t)
	h, err := v.Head(ctx, "lumen")
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.Blame(ctx, "lumen", "", "notes.md")
	if err != nil {
		t.Fatal(err)
	}
	if b.Commit != h || b.Key != "notes.md" {
		t.Fatalf("blame of %s at %s, want HEAD %s", b.Key, b.Commit.Short(), h.Short())
	}
	// The base task put notes.md, then bin: one commit each.
	bc, err := v.R.Commit(ctx, ids["base"])
	if err != nil {
		t.Fatal(err)
	}
	base := bc.Parents[0]
	checkBlame(t, b, []string{"one", "TWO", "three"}, []origin{{base, "base", false}, {ids["fast"], "fast", false}, {base, "base", false}})
	cm, err := v.R.Commit(ctx, ids["fast"])
	if err != nil {
		t.Fatal(err)
	}
	if b.Lines[1].Time != cm.Time {
		t.Fatalf("line 2's time %d, its commit's %d", b.Lines[1].Time, cm.Time)
	}

	// The slow task landed as a merge (parents: fast, the task's own commit).
	sh, err := v.Show(ctx, "lumen", ids["slow"].String(), false)
	if err != nil || len(sh.Commit.Parents) != 2 {
		t.Fatalf("slow's landing %+v %v, want a merge", sh.Commit, err)
	}
	b, err = v.Blame(ctx, "lumen", "", "skills/a.md")
	if err != nil {
		t.Fatal(err)
	}
	checkBlame(t, b, []string{"<script>alert(1)</script>"}, []origin{{sh.Commit.Parents[1], "slow", false}})

	// At an older revision: before fast, line 2 is base's.
	b, err = v.Blame(ctx, "lumen", ids["base"].String(), "notes.md")
	if err != nil {
		t.Fatal(err)
	}
	checkBlame(t, b, []string{"one", "two", "three"}, []origin{{base, "base", false}, {base, "base", false}, {base, "base", false}})
}

// Blame refuses what it cannot read as lines, and names what is missing.
func TestBlameRefusals(t *testing.T) {
	ctx := context.Background()
	v, _ := fixture(t)
	for _, tc := range []struct {
		agent, rev, key string
		kind            error
		words           string
	}{
		{"lumen", "", "bin", inspect.ErrBadRequest, "is not text"},
		{"lumen", "", "nope.md", inspect.ErrNotFound, `key "nope.md" does not exist`},
		{"lumen", "", "../x", inspect.ErrBadRequest, ""},
		{"lumen", "HEAD~99", "notes.md", inspect.ErrNotFound, ""},
		{"nobody", "", "notes.md", inspect.ErrNotFound, ""},
	} {
		_, err := v.Blame(ctx, tc.agent, tc.rev, tc.key)
		if !errors.Is(err, tc.kind) || !strings.Contains(fmt.Sprint(err), tc.words) {
			t.Errorf("blame %s %s:%s: %v, want %v saying %q", tc.agent, tc.rev, tc.key, err, tc.kind, tc.words)
		}
	}
	// A large value: refused by its size, before its content is read.
	big := strings.Repeat("a line of text\n", inspect.MaxPatchValue/15+1)
	if _, err := v.Put(ctx, "lumen", "big.md", []byte(big), inspect.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := v.Blame(ctx, "lumen", "", "big.md")
	if !errors.Is(err, inspect.ErrBadRequest) || !strings.Contains(err.Error(), fmt.Sprintf("over the %d bytes blame reads", inspect.MaxPatchValue)) {
		t.Fatalf("blame of a large value: %v", err)
	}
	// An older version that was binary keeps nothing: every line is the
	// commit that made the value text.
	if _, err := v.Put(ctx, "lumen", "bin", []byte("now\ntext\n"), inspect.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	h, _ := v.Head(ctx, "lumen")
	b, err := v.Blame(ctx, "lumen", "", "bin")
	if err != nil {
		t.Fatal(err)
	}
	checkBlame(t, b, []string{"now", "text"}, []origin{{h, "", false}, {h, "", false}})
}

// Blame stops at a forget cut: a line the walk would follow past the cut
// is the commit below the cut's, marked as a boundary; a line changed
// after the cut is its own commit's.
func TestBlameCut(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		t.Fatal(err)
	}
	var steps []objects.CID
	for i, text := range []string{"a\nb\n", "a\nB\n", "a\nB\nc\n", "A\nB\nc\n"} {
		t.Setenv("SOURCE_DATE_EPOCH", fmt.Sprint(1_700_000_000+3600*i))
		rc, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: fmt.Sprint("t", i+1)}, put("skill.md", text))
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, rc.Commit)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	v := inspect.New(r)
	b, err := v.Blame(ctx, "lumen", "", "skill.md")
	if err != nil {
		t.Fatal(err)
	}
	checkBlame(t, b, []string{"A", "B", "c"}, []origin{{steps[3], "t4", false}, {steps[1], "t2", false}, {steps[2], "t3", false}})

	if _, err := r.Forget(ctx, "lumen", repo.Policy{Last: 2}, false); err != nil {
		t.Fatal(err)
	}
	b, err = v.Blame(ctx, "lumen", "", "skill.md")
	if err != nil {
		t.Fatal(err)
	}
	checkBlame(t, b, []string{"A", "B", "c"}, []origin{{steps[3], "t4", false}, {steps[2], "t3", true}, {steps[2], "t3", true}})
}

// The same on the shared cut store the windows' tests read: a fork that
// still reaches the cut commits blames through them; a fork made on the cut
// history ends at the gone commit.
func TestBlameCutStore(t *testing.T) {
	ctx := context.Background()
	c := inspecttest.NewCut(t)
	v := inspect.New(c.R)
	for _, tc := range []struct {
		agent, rev string
		want       origin
		text       string
	}{
		{inspecttest.A, "", origin{c.Steps[5], "step-6", false}, "step 6"},
		{inspecttest.A, "HEAD~1", origin{c.Steps[4], "step-5", true}, "step 5"},
		{inspecttest.A, "keep-me", origin{c.Steps[1], "step-2", true}, "step 2"},
		{inspecttest.Fork, "", origin{c.Steps[2], "step-3", false}, "step 3"},
		{inspecttest.Late, "", origin{c.Steps[4], "step-5", true}, "step 5"},
	} {
		b, err := v.Blame(ctx, tc.agent, tc.rev, "memory.md")
		if err != nil {
			t.Fatalf("%s %s: %v", tc.agent, tc.rev, err)
		}
		checkBlame(t, b, []string{tc.text}, []origin{tc.want})
	}
}

// countingStorage counts the reads of each block.
type countingStorage struct {
	*memory.Storage
	mu   sync.Mutex
	gets map[objects.CID]int
}

func (s *countingStorage) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	s.mu.Lock()
	s.gets[c]++
	s.mu.Unlock()
	return s.Storage.Get(ctx, c)
}

// Blame reads a value's content only where the key's value changed: a
// long history of commits that change other keys costs tree paths, not
// contents, and no other key's value is read.
func TestBlameReadsOnlyChangedValues(t *testing.T) {
	ctx := context.Background()
	s := &countingStorage{Storage: memory.New(), gets: map[objects.CID]int{}}
	v := inspect.New(repo.New(s))
	var skill []objects.CID
	for i := range 60 {
		key, text := "other", fmt.Sprint(i)
		if i%20 == 0 {
			key, text = "skill.md", strings.Repeat("x\n", i)+"line\n"
		}
		if _, err := v.Put(ctx, "lumen", key, []byte(text), inspect.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if key == "skill.md" {
			val, _ := objects.NewFileValue([]byte(text))
			skill = append(skill, val)
		}
	}
	clear(s.gets)
	b, err := v.Blame(ctx, "lumen", "", "skill.md")
	if err != nil || len(b.Lines) != 41 {
		t.Fatalf("blame: %d lines, %v", len(b.Lines), err)
	}
	read := 0
	for c, n := range s.gets {
		if c.Codec() == objects.CodecRaw {
			if !slices.Contains(skill, c) || n > 2 {
				t.Errorf("value %s read %d times", c.Short(), n)
			}
			read++
		}
	}
	if read != len(skill) {
		t.Fatalf("%d values read, want the %d versions of skill.md", read, len(skill))
	}
}
