package export

import (
	"context"
	"encoding/binary"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
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

// dirent64 is one getdents64 record: inode, offset, length, type, name.
func dirent64(ino uint64, typ byte, name string) []byte {
	n := (19 + len(name) + 1 + 7) &^ 7
	b := make([]byte, n)
	binary.NativeEndian.PutUint64(b[0:], ino)
	binary.NativeEndian.PutUint16(b[16:], uint16(n))
	b[18] = typ
	copy(b[19:], name)
	return b
}

// On a file system that gives no types (DT_UNKNOWN), each entry is
// lstat'd for its type and one removed since the listing is left out;
// ".", ".." and deleted slots (inode 0) are never entries, and a damaged
// buffer is an error, not a panic.
func TestParseDirentsUnknownTypes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f", filepath.Join(dir, "l")); err != nil {
		t.Fatal(err)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var buf []byte
	for _, e := range []struct {
		ino  uint64
		name string
	}{{1, "."}, {1, ".."}, {5, "f"}, {6, "d"}, {7, "l"}, {8, "gone"}, {0, "slot"}} {
		buf = append(buf, dirent64(e.ino, unix.DT_UNKNOWN, e.name)...)
	}
	got := map[string]fs.FileMode{}
	err = parseDirents(int(d.Fd()), dir, buf, func(name []byte, typ fs.FileMode) { got[string(name)] = typ })
	want := map[string]fs.FileMode{"f": 0, "d": fs.ModeDir, "l": fs.ModeSymlink}
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("entries %v (%v), want %v", got, err, want)
	}
	for _, bad := range [][]byte{buf[:10], dirent64(5, unix.DT_REG, "f")[:20]} {
		if err := parseDirents(int(d.Fd()), dir, bad, func([]byte, fs.FileMode) {}); err == nil {
			t.Fatalf("damaged buffer %x accepted", bad)
		}
	}
	short := dirent64(5, unix.DT_REG, "f")
	binary.NativeEndian.PutUint16(short[16:], 3)
	if err := parseDirents(int(d.Fd()), dir, short, func([]byte, fs.FileMode) {}); err == nil {
		t.Fatal("a record shorter than its header accepted")
	}
}
