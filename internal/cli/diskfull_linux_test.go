//go:build linux

package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A full disk gives a clean error (exit 1, one line, no SIGBUS) from every
// command, and once space is freed the store opens and verifies clean with
// every put that printed a commit still there (issue 13, finding 6).
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs to fill needs root")
	}
	bin := cliBin(t)
	src := t.TempDir()
	fs := filepath.Join(t.TempDir(), "fs")
	if err := os.Mkdir(fs, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", fs, "tmpfs", 0, "size=3m"); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("root without the right to mount (a restricted container): %v", err)
		}
		t.Fatalf("mounting a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(fs, 0); err != nil {
			t.Errorf("unmounting %s: %v", fs, err)
		}
	})
	dir := filepath.Join(fs, "store")
	if r := execCLI(t, bin, dir, nil, "init"); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}

	kept := map[string][]byte{}
	full := false
	for i := 0; i < 40 && !full; i++ {
		n := 100 << 10
		if i%2 == 1 {
			n = 300 << 10 // above the value threshold: the value log
		}
		p, val := randomFile(t, src, i, n)
		key := fmt.Sprintf("k%02d", i)
		r := execCLI(t, bin, dir, nil, "put", key, p)
		switch r.code {
		case 0:
			kept[key] = val
		default:
			if !strings.Contains(r.stderr, "not enough free space") || strings.Count(r.stderr, "\n") != 1 {
				t.Fatalf("put %s on a filling disk:\n%s", key, r.stderr)
			}
			full = true
		}
	}
	if !full || len(kept) == 0 {
		t.Fatalf("a 3 MiB file system: %d puts landed, full=%v", len(kept), full)
	}
	t.Logf("%d puts landed before the disk was full", len(kept))

	// Take the rest of the space; reads still work, writes fail cleanly.
	ballast := filepath.Join(fs, "ballast")
	f, err := os.Create(ballast)
	if err != nil {
		t.Fatal(err)
	}
	for err == nil {
		_, err = f.Write(make([]byte, 4096))
	}
	f.Close()
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"ls"}, {"verify"}, {"log", "--oneline"}, {"get", "k00"}} {
		if r := execCLI(t, bin, dir, nil, args...); r.code != 0 {
			t.Errorf("%v with no space left: exit %d: %s", args, r.code, r.stderr)
		}
	}
	for _, args := range [][]string{{"put", "more", "-"}, {"rm", "k00"}, {"gc"}} {
		r := execCLI(t, bin, dir, []byte("x"), args...)
		if r.code != 1 || !strings.Contains(r.stderr, "not enough free space") {
			t.Errorf("%v with no space left: exit %d: %s", args, r.code, r.stderr)
		}
	}

	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	if r := execCLI(t, bin, dir, nil, "verify"); r.code != 0 {
		t.Fatalf("verify after freeing space: %s%s", r.stdout, r.stderr)
	}
	for key, val := range kept {
		r := execCLI(t, bin, dir, nil, "get", key)
		if r.code != 0 || !bytes.Equal([]byte(r.stdout), val) {
			t.Fatalf("get %s after freeing space: exit %d, %d bytes, %s", key, r.code, len(r.stdout), r.stderr)
		}
	}
	if r := execCLI(t, bin, dir, []byte("after"), "put", "after", "-"); r.code != 0 {
		t.Fatalf("put after freeing space: %s", r.stderr)
	}
}
