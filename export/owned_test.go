package export_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// snapshotDir records every entry under dir: type, mode, and content or
// link target.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			m[rel] = "link " + target
		case fi.IsDir():
			m[rel] = "dir " + fi.Mode().String()
		default:
			data, _ := os.ReadFile(p)
			m[rel] = fi.Mode().String() + " " + string(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func under(m map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		if k == prefix || strings.HasPrefix(k, prefix+string(filepath.Separator)) {
			out[k] = v
		}
	}
	return out
}

// treeOf stores files (key → content) as a tree.
// treeOf stores a tree of files (key: content) built directly, not through
// a directory's import: a tree may hold keys an import leaves out (a .git),
// as one from a tar, a CAR or put may.
func treeOf(t *testing.T, bs objects.BlockStore, files map[string]string) objects.CID {
	t.Helper()
	ctx := context.Background()
	tr := objects.NewTree(bs)
	for k, content := range files {
		v := objects.NewValue([]byte(content))
		if err := bs.Put(ctx, v); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Put(ctx, k, v.CID); err != nil {
			t.Fatal(err)
		}
	}
	root, err := tr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// gitRepo makes dir a git repository with two committed files and an
// untracked one, with git itself when it is installed, else by hand.
func gitRepo(t *testing.T, dir string) {
	t.Helper()
	write(t, filepath.Join(dir, "README.md"), "my project\n")
	write(t, filepath.Join(dir, "src/main.go"), "package main\n")
	write(t, filepath.Join(dir, "notes.txt"), "untracked work\n")
	if _, err := exec.LookPath("git"); err != nil {
		write(t, filepath.Join(dir, ".git/HEAD"), "ref: refs/heads/main\n")
		write(t, filepath.Join(dir, ".git/config"), "[core]\n")
		write(t, filepath.Join(dir, ".git/objects/ab/cdef"), "object")
		return
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "README.md", "src/main.go"}, {"commit", "-q", "-m", "first"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// A checkout into a git repository that is not a brain is refused before a
// byte changes, naming the files; with Force the user's files go but .git
// stays whole; a tree that would write into .git is refused even with Force.
func TestCheckoutOverAGitRepository(t *testing.T) {
	ctx := context.Background()
	bs := memstore.New()
	tree := treeOf(t, bs, map[string]string{"README.md": "the brain's readme\n", "memory/facts.md": "facts\n"})
	proj := t.TempDir()
	gitRepo(t, proj)
	before := snapshotDir(t, proj)
	cache := &export.MemMeta{}

	_, err := export.CheckoutWith(ctx, bs, tree, proj, export.CheckoutOptions{Cache: cache})
	var fe *export.ForeignFilesError
	if !errors.As(err, &fe) || !errors.Is(err, export.ErrNotOwned) {
		t.Fatalf("checkout over a git repository: %v, want ErrNotOwned", err)
	}
	if fe.Count != 3 || strings.Join(fe.Paths, ",") != "README.md,notes.txt,src/main.go" {
		t.Fatalf("refusal names %d: %v", fe.Count, fe.Paths)
	}
	for _, name := range []string{`"README.md"`, `"notes.txt"`, `"src/main.go"`, "nothing was changed"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the error does not say %s: %v", name, err)
		}
	}
	if after := snapshotDir(t, proj); !maps.Equal(before, after) {
		t.Fatalf("the refused checkout changed the directory:\nbefore %v\nafter  %v", before, after)
	}

	// Force: the user's files are overwritten or removed, .git is whole.
	gitBefore := under(before, ".git")
	if len(gitBefore) < 3 {
		t.Fatalf("the repository has no .git: %v", before)
	}
	rep, err := export.CheckoutWith(ctx, bs, tree, proj, export.CheckoutOptions{Cache: cache, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	after := snapshotDir(t, proj)
	if !maps.Equal(gitBefore, under(after, ".git")) {
		t.Fatal("checkout --force changed .git")
	}
	if rep.Written != 2 || after["README.md"] != "-rw-r--r-- the brain's readme\n" || after["notes.txt"] != "" || after["src"] != "" {
		t.Fatalf("forced checkout %+v left %v", rep, after)
	}
	if _, err := exec.LookPath("git"); err == nil {
		cmd := exec.Command("git", "rev-parse", "--verify", "HEAD")
		cmd.Dir = proj
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git no longer reads the repository: %v\n%s", err, out)
		}
	}

	// A tree holding a .git is refused, Force or not, and writes nothing.
	for _, files := range []map[string]string{
		{"a.md": "a", ".git/hooks/post-checkout": "#!/bin/sh\necho pwned\n"},
		{"a.md": "a", ".git/config": "[core]\n\thooksPath = /tmp\n"},
		{"a.md": "a", "sub/.GIT/config": "x"},
	} {
		hostile := treeOf(t, bs, files)
		before := snapshotDir(t, proj)
		for _, force := range []bool{false, true} {
			_, err := export.CheckoutWith(ctx, bs, hostile, proj, export.CheckoutOptions{Cache: cache, Force: force})
			if !errors.Is(err, export.ErrGitDir) {
				t.Fatalf("tree %v, force %v: %v, want ErrGitDir", files, force, err)
			}
			if after := snapshotDir(t, proj); !maps.Equal(before, after) {
				t.Fatalf("the refused checkout changed the directory")
			}
		}
		// Into an empty directory too: a checkout never makes a .git.
		empty := filepath.Join(t.TempDir(), "new")
		if _, err := export.Checkout(ctx, bs, hostile, empty); !errors.Is(err, export.ErrGitDir) {
			t.Fatalf("tree %v into a new directory: %v, want ErrGitDir", files, err)
		}
		if _, err := os.Stat(empty); err == nil {
			t.Fatal("the refused checkout created the directory")
		}
	}
	// A target that is, or is inside, a .git is refused.
	for _, target := range []string{".git", ".git/hooks", ".GIT/new"} {
		if _, err := export.CheckoutWith(ctx, bs, tree, filepath.Join(proj, target), export.CheckoutOptions{Force: true}); !errors.Is(err, export.ErrGitDir) {
			t.Fatalf("checkout into %s: %v, want ErrGitDir", target, err)
		}
	}
	if got := under(snapshotDir(t, proj), ".git"); !maps.Equal(gitBefore, got) {
		t.Fatal("a refused checkout into .git changed it")
	}
	// A .git file (a git worktree's link) in a directory the tree lacks is
	// kept, with the directory, when the rest goes; a tree file replacing a
	// directory that holds a .git is refused.
	write(t, filepath.Join(proj, "wt/.git"), "gitdir: /elsewhere\n")
	write(t, filepath.Join(proj, "wt/x.go"), "x")
	_, err = export.CheckoutWith(ctx, bs, tree, proj, export.CheckoutOptions{Cache: cache, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(filepath.Join(proj, "wt/.git")); err != nil || string(data) != "gitdir: /elsewhere\n" {
		t.Fatalf("a .git file was not kept: %q %v", data, err)
	}
	if _, err := os.Stat(filepath.Join(proj, "wt/x.go")); err == nil {
		t.Fatal("a forced checkout kept wt/x.go")
	}
	replace := treeOf(t, bs, map[string]string{"wt": "a file now"})
	if _, err := export.CheckoutWith(ctx, bs, replace, proj, export.CheckoutOptions{Cache: cache, Force: true}); !errors.Is(err, export.ErrGitDir) {
		t.Fatalf("a file replacing a directory holding a .git: %v, want ErrGitDir", err)
	}
}

// What a checkout wrote, it may replace and remove at the next one; a file
// the user added or changed since is refused (bounded list, count); a file
// identical to the tree's is fine, recorded or not.
func TestCheckoutReplacesOnlyItsOwnFiles(t *testing.T) {
	ctx := context.Background()
	bs := memstore.New()
	t1 := treeOf(t, bs, map[string]string{"a.md": "a1", "b.md": "b1", "dir/c.md": "c1"})
	t2 := treeOf(t, bs, map[string]string{"a.md": "a2", "d.md": "d2"})
	dir := filepath.Join(t.TempDir(), "brain")
	cache := &export.MemMeta{}
	opts := export.CheckoutOptions{Cache: cache}
	if _, err := export.CheckoutWith(ctx, bs, t1, dir, opts); err != nil {
		t.Fatal(err)
	}
	// Twice into the same directory: its own files are replaced and removed.
	rep, err := export.CheckoutWith(ctx, bs, t2, dir, opts)
	if err != nil {
		t.Fatalf("second checkout into the directory it wrote: %v", err)
	}
	if rep.Written != 2 || rep.Removed != 3 { // b.md, dir/c.md, dir
		t.Fatalf("report %+v", rep)
	}
	if got := snapshotDir(t, dir); len(got) != 3 || got["a.md"] != "-rw-r--r-- a2" || got["d.md"] != "-rw-r--r-- d2" {
		t.Fatalf("directory %v", got)
	}
	// Back again: still its own.
	if _, err := export.CheckoutWith(ctx, bs, t1, dir, opts); err != nil {
		t.Fatal(err)
	}

	// The user edits one file and adds another: both refused, nothing changed.
	write(t, filepath.Join(dir, "a.md"), "my edit")
	write(t, filepath.Join(dir, "mine.md"), "mine")
	before := snapshotDir(t, dir)
	_, err = export.CheckoutWith(ctx, bs, t2, dir, opts)
	var fe *export.ForeignFilesError
	if !errors.As(err, &fe) || fe.Count != 2 || strings.Join(fe.Paths, ",") != "a.md,mine.md" {
		t.Fatalf("checkout over a user's edit and file: %v", err)
	}
	if !maps.Equal(before, snapshotDir(t, dir)) {
		t.Fatal("the refused checkout changed the directory")
	}
	// A file identical to the tree's is fine, recorded or not.
	write(t, filepath.Join(dir, "a.md"), "a1")
	write(t, filepath.Join(dir, "d.md"), "d2") // not recorded, but what t2 wants
	if err := os.Remove(filepath.Join(dir, "mine.md")); err != nil {
		t.Fatal(err)
	}
	if _, err := export.CheckoutWith(ctx, bs, t2, dir, opts); err != nil {
		t.Fatalf("checkout over files identical to the tree's: %v", err)
	}
	// Without a stat cache (a plain Checkout), only identical files: a
	// non-empty directory of other content is refused.
	other := t.TempDir()
	write(t, filepath.Join(other, "a.md"), "a2")
	if _, err := export.Checkout(ctx, bs, t2, other); err != nil {
		t.Fatalf("checkout over an identical file: %v", err)
	}
	if _, err := export.Checkout(ctx, bs, t1, other); !errors.Is(err, export.ErrNotOwned) {
		t.Fatalf("checkout without a record over other content: %v", err)
	}

	// The list is bounded; the count is whole.
	many := t.TempDir()
	for i := range 25 {
		write(t, filepath.Join(many, fmt.Sprintf("f%02d", i)), "x")
	}
	_, err = export.Checkout(ctx, bs, t1, many)
	if !errors.As(err, &fe) || fe.Count != 25 || len(fe.Paths) != 10 || !strings.Contains(err.Error(), "and 15 more") {
		t.Fatalf("25 foreign files: %v", err)
	}
}

// An empty directory the tree lacks, there before, is left alone; so are
// the derived files.
func TestCheckoutLeavesEmptyDirectories(t *testing.T) {
	ctx := context.Background()
	bs := memstore.New()
	tree := treeOf(t, bs, map[string]string{"a.md": "a"})
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "build/out"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "receipts.ndjson"), "{}\n")
	if _, err := export.Checkout(ctx, bs, tree, dir); err != nil {
		t.Fatal(err)
	}
	got := snapshotDir(t, dir)
	if _, ok := got[filepath.Join("build", "out")]; !ok || got["receipts.ndjson"] == "" {
		t.Fatalf("directory %v", got)
	}
}
