package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/internal/atomicfile"
)

func TestWriteReplacesWholeFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := atomicfile.WriteFile(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(p, []byte("two"), 0o640); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if string(data) != "two" || fi.Mode().Perm() != 0o640 {
		t.Fatalf("file = %q mode %v, want two 0640", data, fi.Mode().Perm())
	}
	// A writer that fails leaves the old file and no temporary file.
	boom := errors.New("boom")
	err := atomicfile.Write(p, 0o600, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Write = %v, want the writer's error", err)
	}
	data, _ = os.ReadFile(p)
	ents, _ := os.ReadDir(dir)
	if string(data) != "two" || len(ents) != 1 {
		t.Fatalf("after a failed write: %q and %d entries, want the old file alone", data, len(ents))
	}
}

func TestCommitIntoMissingDirectoryFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	f, err := atomicfile.Create(dir, "x-*", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	f.Write([]byte("data"))
	if err := f.Commit(filepath.Join(dir, "no", "such", "dir", "f")); err == nil {
		t.Fatal("Commit into a missing directory succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("a failed Commit left %d files", len(ents))
	}
}

// The NoSync variant replaces atomically too, with the mode asked for, and a
// target named with the longest allowed name still gets a temporary file.
func TestWriteFileNoSync(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, strings.Repeat("n", 255))
	for _, data := range []string{"one", "two"} {
		if err := atomicfile.WriteFileNoSync(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(p)
	fi, _ := os.Stat(p)
	ents, _ := os.ReadDir(dir)
	if string(data) != "two" || fi.Mode().Perm() != 0o644 || len(ents) != 1 {
		t.Fatalf("file = %q mode %v, %d entries; want two 0644 alone", data, fi.Mode().Perm(), len(ents))
	}
	f, err := atomicfile.CreateNoSync(dir, ".x-*", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("three"))
	if err := f.Commit(p); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); string(data) != "three" {
		t.Fatalf("after Commit: %q", data)
	}
}

// BenchmarkWriteFile replaces a 1 KiB file, durably and without fsync: the
// cost a checkout of thousands of files would pay per file for durability.
func BenchmarkWriteFile(b *testing.B) {
	data := make([]byte, 1024)
	for _, c := range []struct {
		name  string
		write func(string, []byte, os.FileMode) error
	}{{"sync", atomicfile.WriteFile}, {"nosync", atomicfile.WriteFileNoSync}} {
		b.Run(c.name, func(b *testing.B) {
			p := filepath.Join(b.TempDir(), "f")
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.write(p, data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
