package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestDirTask(t *testing.T) {
	ctx := context.Background()
	old := racyWindow
	racyWindow = 10 * time.Millisecond
	defer func() { racyWindow = old }()
	rt := openTest(t, Options{})
	rt.RunTask(ctx, "a", Task{ID: "seed"}, put("system.md", "sys", "skills/a.md", "A", "skills/b.md", "B", "memory/facts.json", "{}"))
	work := filepath.Join(t.TempDir(), "brain")

	// First task: the directory is materialised from HEAD.
	rec, stats, err := rt.RunDirTask(ctx, "a", Task{ID: "d1"}, work, func(ctx context.Context, dir string) error {
		b, err := os.ReadFile(filepath.Join(dir, "skills/a.md"))
		if err != nil || string(b) != "A" {
			return errors.New("HEAD not materialised")
		}
		os.WriteFile(filepath.Join(dir, "skills/c.md"), []byte("C"), 0o644)
		return os.Remove(filepath.Join(dir, "skills/b.md"))
	})
	if err != nil || rec == nil || rec.Writes != 1 {
		t.Fatalf("%+v %v", rec, err)
	}
	if stats.Files != 4 {
		t.Fatalf("stats %+v", stats)
	}
	v, _ := rt.View(ctx, "a", "")
	keys, _ := v.List(ctx, "skills/")
	if len(keys) != 2 || keys[0] != "skills/a.md" || keys[1] != "skills/c.md" {
		t.Fatalf("keys %v", keys)
	}

	time.Sleep(30 * time.Millisecond) // let every recorded stat leave the racy window
	// Second task edits one file: only that one is re-read.
	rec, stats, err = rt.RunDirTask(ctx, "a", Task{ID: "d2"}, work, func(ctx context.Context, dir string) error {
		return os.WriteFile(filepath.Join(dir, "memory/facts.json"), []byte(`{"x":1}`), 0o644)
	})
	if err != nil || rec == nil {
		t.Fatal(err)
	}
	if stats.Read != 1 {
		t.Fatalf("re-read %d files, want 1 (stats %+v)", stats.Read, stats)
	}
	if getAt(t, rt, "a", "", "memory/facts.json") != `{"x":1}` {
		t.Fatal("edit not committed")
	}

	// A task that changes nothing lands nothing.
	rec, _, err = rt.RunDirTask(ctx, "a", Task{ID: "d3"}, work, func(ctx context.Context, dir string) error { return nil })
	if err != nil || rec != nil {
		t.Fatalf("%+v %v", rec, err)
	}

	// A failed task moves nothing; the next task starts from HEAD again.
	head := mustHead(t, rt, "a")
	_, _, err = rt.RunDirTask(ctx, "a", Task{ID: "d4"}, work, func(ctx context.Context, dir string) error {
		os.WriteFile(filepath.Join(dir, "system.md"), []byte("garbage"), 0o644)
		return errors.New("tool failed")
	})
	if err == nil || mustHead(t, rt, "a") != head {
		t.Fatal("failed directory task moved HEAD")
	}
	// Meanwhile a KV task lands; the directory follows HEAD at the next task.
	rt.RunTask(ctx, "a", Task{ID: "kv"}, put("skills/kv.md", "KV"))
	_, _, err = rt.RunDirTask(ctx, "a", Task{ID: "d5"}, work, func(ctx context.Context, dir string) error {
		if b, _ := os.ReadFile(filepath.Join(dir, "system.md")); string(b) != "sys" {
			return errors.New("failed task's edit survived")
		}
		if b, _ := os.ReadFile(filepath.Join(dir, "skills/kv.md")); string(b) != "KV" {
			return errors.New("directory does not follow HEAD")
		}
		return os.Symlink("/etc/passwd", filepath.Join(dir, "link"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := getValueOrErr(rt, "a", "link"); !errors.Is(err, ErrKeyNotFound) {
		t.Fatal("a symlink was committed")
	}
}

func getValueOrErr(rt *Runtime, agent, key string) ([]byte, error) {
	v, err := rt.View(context.Background(), agent, "")
	if err != nil {
		return nil, err
	}
	return v.Get(context.Background(), key)
}

// A same-size rewrite inside the racy window is still seen.
func TestDirTaskRacyRewrite(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	work := filepath.Join(t.TempDir(), "brain")
	for i, content := range []string{"aaaa", "bbbb", "cccc"} {
		_, _, err := rt.RunDirTask(ctx, "a", Task{ID: content}, work, func(ctx context.Context, dir string) error {
			return os.WriteFile(filepath.Join(dir, "f"), []byte(content), 0o644)
		})
		if err != nil {
			t.Fatal(i, err)
		}
		if got := getAt(t, rt, "a", "", "f"); got != content {
			t.Fatalf("round %d: f = %q", i, got)
		}
	}
}
