package tarball

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

// FuzzRead: Read never panics, never hands fn an invalid key, a duplicate,
// a file/directory conflict or content of the wrong length, and whatever it
// accepts round-trips through Write and Read again.
func FuzzRead(f *testing.F) {
	golden := mustWrite(f, goldenFiles)
	f.Add(golden)
	f.Add(golden[:len(golden)-blockSize])
	f.Add(golden[:5752])
	f.Add(mustWrite(f, externalFiles))
	f.Add(mustWrite(f, nil))
	f.Add(build(f, dir("./"), reg("./a/f", "1"), symlink("l", "../../etc/passwd"), reg("../evil", "x")))
	f.Add(build(f, reg("a", "1"), reg("a/b", "2")))
	f.Add(build(f, reg("dup", "1"), reg("dup", "2")))
	f.Add(build(f, tarEntry{tar.Header{Name: strings.Repeat("l", 300), Typeflag: tar.TypeReg, Format: tar.FormatGNU}, "gnu"}))
	f.Add(build(f, tarEntry{hdr: tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"path": "/abs"}}}, reg("f", "x")))
	f.Add(build(f, tarEntry{hdr: tar.Header{Name: "/dev/null", Typeflag: tar.TypeChar, Format: tar.FormatPAX}}))
	f.Add(v7File(&testing.T{}, "old", "v7"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, skip := range []bool{false, true} {
			var got []kv
			seen := map[string]bool{}
			rep, err := Read(context.Background(), bytes.NewReader(data), func(p string, size int64, r io.Reader) error {
				if err := validKey(p); err != nil {
					t.Fatalf("fn got invalid key %q: %v", p, err)
				}
				if seen[p] {
					t.Fatalf("fn got %q twice", p)
				}
				seen[p] = true
				b, err := io.ReadAll(r)
				if err != nil {
					return err
				}
				if int64(len(b)) != size {
					t.Fatalf("%q: content %d bytes, size %d", p, len(b), size)
				}
				got = append(got, kv{p, string(b)})
				return nil
			}, ReadOptions{SkipUnsupported: skip})
			for _, s := range rep.Skipped {
				if err := validKey(s.Path); err != nil {
					t.Fatalf("skipped entry with invalid key %q", s.Path)
				}
			}
			if err != nil {
				continue
			}
			for p := range seen {
				for i := range len(p) {
					if p[i] == '/' && seen[p[:i]] {
						t.Fatalf("%q is a file and a directory of %q", p[:i], p)
					}
				}
			}
			got = sorted(got)
			again, _, err := readAll(mustWrite(t, got), ReadOptions{})
			if err != nil {
				t.Fatalf("re-reading the projection of what was read: %v", err)
			}
			if fmt.Sprint(again) != fmt.Sprint(got) {
				t.Fatal("round trip through Write changed the files")
			}
		}
	})
}

// FuzzWrite: for any set of valid paths, the projection equals what
// archive/tar writes under the documented rules, and reads back; a refused
// set really has a file that is also a directory.
func FuzzWrite(f *testing.F) {
	var paths []string
	for _, kv := range externalFiles {
		paths = append(paths, kv.path)
	}
	f.Add(strings.Join(paths, "\n"))
	f.Add("a\na.txt\na/b\n" + strings.Repeat("é", 60) + "/x")
	f.Add(strings.Repeat("p", 155) + "/" + strings.Repeat("q", 100) + "\n" + strings.Repeat("r", 99) + "/" + strings.Repeat("s", 101))
	f.Add("x/" + strings.Repeat("\u00ff", 50) + "/" + strings.Repeat("y", 97) + "/z")
	f.Fuzz(func(t *testing.T, list string) {
		var files []kv
		for p := range strings.SplitSeq(list, "\n") {
			if validKey(p) == nil {
				files = append(files, kv{p, p[:len(p)/2]})
			}
		}
		files = sorted(files)
		files = slices.CompactFunc(files, func(a, b kv) bool { return a.path == b.path })
		var buf bytes.Buffer
		_, err := Write(context.Background(), &buf, seqOf(files), WriteOptions{})
		if errors.Is(err, ErrFileDirConflict) {
			for _, a := range files {
				for _, b := range files {
					if strings.HasPrefix(b.path, a.path+"/") {
						return
					}
				}
			}
			t.Fatalf("conflict reported for %q but none exists", files)
		}
		if err != nil {
			t.Fatalf("Write: %v", err)
		}
		if want := referenceTar(t, files); !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("projection differs from archive/tar at byte %d", firstDiff(buf.Bytes(), want))
		}
		got, _, err := readAll(buf.Bytes(), ReadOptions{})
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if len(got) != len(files) || (len(got) > 0 && fmt.Sprint(got) != fmt.Sprint(files)) {
			t.Fatal("read back differs")
		}
	})
}
