package export

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The scan stats each file relative to its open directory (lstatIn): what
// it records must be exactly what lstat of the whole path gives, the
// stat cache's inputs (size, mtime, ctime, inode, device), for files at
// every depth, or the cache would distrust (or wrongly trust) a file.
func TestScanStatsAsLstat(t *testing.T) {
	dir := t.TempDir()
	for i, k := range []string{"a.md", "d/b.md", "d/e/c.bin", "d/e/f/g/h.txt"} {
		p := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, 100*i+1), 0o644); err != nil {
			t.Fatal(err)
		}
		when := time.Unix(1_700_000_000+int64(i), 123_456_789)
		if err := os.Chtimes(p, when, when); err != nil {
			t.Fatal(err)
		}
	}
	files, _, err := Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 {
		t.Fatalf("scan found %d files, want 4", len(files))
	}
	for _, f := range files {
		fi, err := os.Lstat(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if want := fileStatOf(fi); f.stat != want || f.Size != fi.Size() {
			t.Errorf("%s: scan recorded %+v (size %d), lstat gives %+v (size %d)", f.Key, f.stat, f.Size, want, fi.Size())
		}
	}
}

// A name the directory listed as a regular file that is something else by
// the time it is stat'd is skipped and named, not read.
func TestLstatInNotRegular(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, regular, err := lstatIn(d, filepath.Join(dir, "x"), "x"); err != nil || regular {
		t.Fatalf("a directory: regular %v, err %v", regular, err)
	}
	if _, _, err := lstatIn(d, filepath.Join(dir, "gone"), "gone"); !os.IsNotExist(err) {
		t.Fatalf("a missing name: %v, want not-exist", err)
	}
}

// Scan's keys are in bytewise order when a directory's files and a
// subdirectory's interleave ("a/b.md" < "a/b/c" < "a/b0.md"), which the
// per-directory sorted lists alone do not give.
func TestScanOrderAcrossDirectories(t *testing.T) {
	dir := t.TempDir()
	keys := []string{"a/b.md", "a/b/c", "a/b/c0", "a/b0.md", "a/b0/x", "a.md", "a0", "b", "a/b/c/d/e"}
	for _, k := range keys {
		p := filepath.Join(dir, filepath.FromSlash(k))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if k == "a/b/c" { // a file and, below, a directory of the same name cannot both be
			continue
		}
		if err := os.WriteFile(p, []byte(k), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, _, err := Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Key)
	}
	want := []string{"a.md", "a/b.md", "a/b/c/d/e", "a/b/c0", "a/b0.md", "a/b0/x", "a0", "b"}
	if !slices.Equal(got, want) {
		t.Fatalf("keys %q, want %q", got, want)
	}
}
