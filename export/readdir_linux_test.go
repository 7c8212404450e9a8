package export

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// readDirSorted lists what os.ReadDir lists, with the same types, in name
// order, over a directory larger than one getdents buffer (long names) and
// with every kind of entry the scan tells apart.
func TestReadDirSortedAsReadDir(t *testing.T) {
	dir := t.TempDir()
	for i := range 1500 {
		name := fmt.Sprintf("%04d-%s.md", (i*7919)%1500, strings.Repeat("n", 40))
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := readDirSorted(f, dir)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].name != w.Name() || got[i].typ != w.Type() {
			t.Fatalf("entry %d: %q %v, want %q %v", i, got[i].name, got[i].typ, w.Name(), w.Type())
		}
	}
}

// A scan allocates about two strings per file (its path, whose tail is its
// key, and the name as the kernel's lstat takes it), not a directory entry
// and a name besides: a 10k-file brain is scanned on every commit, and what
// it allocates is fresh memory the kernel faults in.
func TestScanAllocationsPerFile(t *testing.T) {
	dir := t.TempDir()
	const n = 2000
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%10), fmt.Sprintf("note-%04d.md", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(3, func() {
		files, _, err := Scan(context.Background(), dir)
		if err != nil || len(files) != n {
			t.Fatalf("scan: %d files, %v", len(files), err)
		}
	})
	if per := allocs / n; per > 2.5 {
		t.Fatalf("a scan of %d files made %.0f allocations, %.2f a file; want about two", n, allocs, per)
	}
}
