package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentstate/agentstate/export"
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

// A rewrite that keeps the size, the mtime and the inode (written in place,
// then dated back) changes only the ctime: the scan sees it. (The runtime's
// former cache compared size, mtime and inode only, and missed it.)
func TestDirTaskSeesCtimeChange(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	work := filepath.Join(t.TempDir(), "brain")
	past := time.Now().Add(-time.Hour)
	_, _, err := rt.RunDirTask(ctx, "a", Task{ID: "one"}, work, func(ctx context.Context, dir string) error {
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, []byte("aaaa"), 0o644); err != nil {
			return err
		}
		return os.Chtimes(p, past, past)
	})
	if err != nil {
		t.Fatal(err)
	}
	var ino uint64
	_, stats, err := rt.RunDirTask(ctx, "a", Task{ID: "two"}, work, func(ctx context.Context, dir string) error {
		p := filepath.Join(dir, "f")
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		ino = inodeOf(fi)
		time.Sleep(20 * time.Millisecond) // a later ctime tick than the recorded one
		if err := os.WriteFile(p, []byte("bbbb"), 0o644); err != nil {
			return err
		}
		if err := os.Chtimes(p, past, past); err != nil {
			return err
		}
		fi2, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi2.Size() != fi.Size() || !fi2.ModTime().Equal(fi.ModTime()) || inodeOf(fi2) != ino {
			return errors.New("the rewrite changed size, mtime or inode: the test shows nothing")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := getAt(t, rt, "a", "", "f"); got != "bbbb" || stats.Read != 1 {
		t.Fatalf("f = %q after a ctime-only change, read %d files; want bbbb, 1", got, stats.Read)
	}
}

// What a checkout wrote is recorded in the stat cache: the scan after the
// task reads only what the task wrote (the racy window shortened to 1ns, so
// the checkout's files are out of it when it records them).
func TestDirTaskScanTrustsCheckout(t *testing.T) {
	ctx := context.Background()
	old := racyWindow
	racyWindow = time.Nanosecond
	defer func() { racyWindow = old }()
	rt := openTest(t, Options{})
	rt.RunTask(ctx, "a", Task{ID: "seed"}, put("system.md", "sys", "skills/a.md", "A", "skills/b.md", "B", "memory/facts.json", "{}"))
	work := filepath.Join(t.TempDir(), "brain")
	rec, stats, err := rt.RunDirTask(ctx, "a", Task{ID: "d1"}, work, func(ctx context.Context, dir string) error {
		return os.WriteFile(filepath.Join(dir, "skills/c.md"), []byte("C"), 0o644)
	})
	if err != nil || rec == nil {
		t.Fatalf("%+v %v", rec, err)
	}
	if stats.Files != 5 || stats.Read != 1 {
		t.Fatalf("scan after a checkout of 4 files and one new file: %+v; want 5 files, 1 read", stats)
	}
}

// The stat cache lives in the store directory when there is one.
func TestDirTaskStatCacheInStore(t *testing.T) {
	ctx := context.Background()
	store := filepath.Join(t.TempDir(), "store")
	rt := openTest(t, Options{Store: store})
	work := filepath.Join(t.TempDir(), "brain")
	_, _, err := rt.RunDirTask(ctx, "a", Task{ID: "d1"}, work, func(ctx context.Context, dir string) error {
		return os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(work)
	if _, ok, err := (export.FileMeta{Dir: filepath.Join(store, "statcache")}).GetMeta("statcache/" + abs); err != nil || !ok {
		t.Fatalf("no stat cache record in %s/statcache (%v)", store, err)
	}
}

// gc drops the in-memory stat cache with the blocks it deletes, and a
// directory task after it commits a tree whose every block is there, even
// for content whose blocks gc deleted.
func TestDirTaskAfterGC(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	work := filepath.Join(t.TempDir(), "brain")
	abs, _ := filepath.Abs(work)
	past := time.Now().Add(-time.Hour)
	writeOld := func(dir, key, content string) error {
		p := filepath.Join(dir, key)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
		return os.Chtimes(p, past, past)
	}
	_, _, err := rt.RunDirTask(ctx, "a", Task{ID: "d1"}, work, func(ctx context.Context, dir string) error {
		if err := writeOld(dir, "f", "one"); err != nil {
			return err
		}
		return writeOld(dir, "g", "keep")
	})
	if err != nil {
		t.Fatal(err)
	}
	// Outside a task, the directory is edited and imported through the
	// runtime's cache: the cache now names a tree and a value nothing reaches.
	if err := writeOld(work, "f", "junk"); err != nil {
		t.Fatal(err)
	}
	cache := rt.repo.StatCache()
	if _, err := export.ImportDir(ctx, rt.repo.Blocks, work, export.ImportOptions{Cache: cache}); err != nil {
		t.Fatal(err)
	}
	rep, err := rt.repo.GC(ctx, false)
	if err != nil || rep.Deleted == 0 {
		t.Fatalf("gc: %+v %v; want the unreachable tree and value deleted", rep, err)
	}
	if _, ok, _ := cache.GetMeta("statcache/" + abs); ok {
		t.Fatal("gc left the in-memory stat cache")
	}
	// The task writes the deleted content again: it must be read and stored.
	_, stats, err := rt.RunDirTask(ctx, "a", Task{ID: "d2"}, work, func(ctx context.Context, dir string) error {
		if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "one" {
			return errors.New("checkout after gc did not restore HEAD")
		}
		return writeOld(dir, "f", "junk")
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := getAt(t, rt, "a", "", "f"); got != "junk" || stats.Read == 0 {
		t.Fatalf("f = %q, read %d; want junk read back", got, stats.Read)
	}
	vr, err := rt.repo.Verify(ctx)
	if err != nil || len(vr.Problems) != 0 {
		t.Fatalf("verify after gc and a directory task: %v %v", vr.Problems, err)
	}
}

// The first task in a directory that is not the runtime's (a project with
// a .git and files of its own) fails before anything changes and before
// the task runs; a directory the runtime made before, in a runtime opened
// again on the same store, is its own (the stat cache says so).
func TestDirTaskFirstCheckoutOwnsOnlyItsFiles(t *testing.T) {
	ctx := context.Background()
	store := filepath.Join(t.TempDir(), "store")
	rt := openTest(t, Options{Store: store})
	rt.RunTask(ctx, "a", Task{ID: "seed"}, put("system.md", "sys"))
	proj := t.TempDir()
	for name, content := range map[string]string{".git/HEAD": "ref: refs/heads/main\n", "main.go": "package main\n"} {
		p := filepath.Join(proj, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ran := false
	_, _, err := rt.RunDirTask(ctx, "a", Task{ID: "d0"}, proj, func(ctx context.Context, dir string) error {
		ran = true
		return nil
	})
	if !errors.Is(err, export.ErrNotOwned) || ran {
		t.Fatalf("first task in a project directory: %v (ran %v), want ErrNotOwned", err, ran)
	}
	for _, name := range []string{".git/HEAD", "main.go"} {
		if _, err := os.Stat(filepath.Join(proj, name)); err != nil {
			t.Fatalf("%s gone: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(proj, "system.md")); err == nil {
		t.Fatal("the refused checkout wrote system.md")
	}

	work := filepath.Join(t.TempDir(), "brain")
	if _, _, err := rt.RunDirTask(ctx, "a", Task{ID: "d1"}, work, func(ctx context.Context, dir string) error {
		return os.WriteFile(filepath.Join(dir, "notes.md"), []byte("n"), 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	rt.RunTask(ctx, "a", Task{ID: "kv"}, put("system.md", "sys 2"))
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	rt2 := openTest(t, Options{Store: store})
	_, _, err = rt2.RunDirTask(ctx, "a", Task{ID: "d2"}, work, func(ctx context.Context, dir string) error {
		if b, _ := os.ReadFile(filepath.Join(dir, "system.md")); string(b) != "sys 2" {
			return errors.New("directory does not follow HEAD")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("a reopened runtime in the directory it made: %v", err)
	}
}
