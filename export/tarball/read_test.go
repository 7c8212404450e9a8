package tarball

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

func TestRoundTrip(t *testing.T) {
	cases := map[string][]kv{
		"golden":              goldenFiles,
		"empty":               nil,
		"200-byte path (PAX)": {{strings.Repeat("x", 199) + "z", "long"}},
		"200-byte path split": {{strings.Repeat("x", 99) + "/" + strings.Repeat("y", 100), "split"}},
		"4095-byte path":      {{strings.Repeat("abcdefg/", 511) + "zzzzzzz", "max"}},
		"backslashes":         {{`a\..\b`, "1"}, {`c\d`, "2"}},
		"binary content":      {{"memory.db", "SQLite format 3\x00" + strings.Repeat("\x00\xff", 3000)}},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			files = sorted(files)
			data := mustWrite(t, files)
			got, rep, err := readAll(data, ReadOptions{})
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if fmt.Sprint(got) != fmt.Sprint(files) && !(len(got) == 0 && len(files) == 0) {
				t.Fatalf("read back %d files, want %d: %q", len(got), len(files), got)
			}
			if rep.Files != len(files) || len(rep.Skipped) != 0 {
				t.Fatalf("report %+v", rep)
			}
		})
	}
}

func TestReadGolden(t *testing.T) {
	got, rep, err := readAll(mustWrite(t, goldenFiles), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(goldenFiles) {
		t.Fatalf("got %q", got)
	}
	var n int64
	for _, f := range goldenFiles {
		n += int64(len(f.content))
	}
	if want := (ReadReport{Files: 7, Dirs: 5, Bytes: n}); fmt.Sprint(rep) != fmt.Sprint(want) {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
}

// TestReadAccepts covers archives other writers produce.
func TestReadAccepts(t *testing.T) {
	long := strings.Repeat("l", 150) + "/" + strings.Repeat("m", 150)
	cases := []struct {
		name string
		data []byte
		want []kv
	}{
		{"dot-slash names and root dir", build(t, dir("./"), dir("./a/"), reg("./a/f", "1"), reg("./g", "2")),
			[]kv{{"a/f", "1"}, {"g", "2"}}},
		{"root as dot", build(t, dir("."), reg("f", "1")), []kv{{"f", "1"}}},
		{"GNU long name", build(t, tarEntry{tar.Header{Name: long, Typeflag: tar.TypeReg, Format: tar.FormatGNU}, "gnu"}),
			[]kv{{long, "gnu"}}},
		{"PAX path", build(t, tarEntry{tar.Header{Name: long, Typeflag: tar.TypeReg, Format: tar.FormatPAX}, "pax"}),
			[]kv{{long, "pax"}}},
		{"USTAR prefix", build(t, tarEntry{tar.Header{Name: strings.Repeat("p", 150) + "/q", Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}, "u"}),
			[]kv{{strings.Repeat("p", 150) + "/q", "u"}}},
		{"V7 regular typeflag NUL", v7File(t, "old.txt", "v7"), []kv{{"old.txt", "v7"}}},
		{"global header ignored", build(t,
			tarEntry{hdr: tar.Header{Typeflag: tar.TypeXGlobalHeader, PAXRecords: map[string]string{"comment": "0123456789abcdef0123456789abcdef01234567"}}},
			reg("f", "x")), []kv{{"f", "x"}}},
		{"unsorted is fine", build(t, reg("z", "1"), reg("a", "2")), []kv{{"z", "1"}, {"a", "2"}}},
		{"dir entry after its files", build(t, reg("d/f", "1"), dir("d/")), []kv{{"d/f", "1"}}},
		{"empty dir ignored", build(t, dir("empty/")), nil},
		{"backslash is a character", build(t, reg(`..\evil`, "1")), []kv{{`..\evil`, "1"}}},
		{"one zero block at end", oneZeroBlock(t, build(t, reg("f", "1"))), []kv{{"f", "1"}}},
		{"GNU record padding", append(build(t, reg("f", "1")), make([]byte, 8192)...), []kv{{"f", "1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := readAll(tc.data, ReadOptions{})
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// v7File builds a one-file archive whose header has typeflag NUL.
func v7File(t *testing.T, name, content string) []byte {
	data := build(t, reg(name, content))
	data[156] = 0
	fixChecksum(data[:blockSize])
	return data
}

func fixChecksum(h []byte) {
	copy(h[148:156], "        ")
	var sum int64
	for _, c := range h {
		sum += int64(c)
	}
	copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
}

func oneZeroBlock(t *testing.T, data []byte) []byte {
	t.Helper()
	if !bytes.Equal(data[len(data)-1024:], make([]byte, 1024)) {
		t.Fatal("no end marker")
	}
	return data[:len(data)-blockSize]
}

// TestReadRefuses: each case is a good file, then the bad entry, then
// another good file; Read must fail on the bad entry with the right error
// and must have passed on only the first file.
func TestReadRefuses(t *testing.T) {
	devices := func(typ byte) tarEntry {
		return tarEntry{hdr: tar.Header{Name: "dev", Typeflag: typ, Devmajor: 1, Devminor: 3, Format: tar.FormatPAX}}
	}
	cases := []struct {
		name string
		bad  []tarEntry // the offending entry is the last one
		want error
	}{
		{"absolute", []tarEntry{reg("/etc/passwd", "x")}, ErrInvalidPath},
		{"dotdot", []tarEntry{reg("../evil", "x")}, ErrInvalidPath},
		{"dotdot inside", []tarEntry{reg("a/../../evil", "x")}, ErrInvalidPath},
		{"dot-slash dotdot", []tarEntry{reg("./../evil", "x")}, ErrInvalidPath},
		{"double dot-slash", []tarEntry{reg("././a", "x")}, ErrInvalidPath},
		{"dot segment", []tarEntry{reg("a/./b", "x")}, ErrInvalidPath},
		{"empty segment", []tarEntry{reg("a//b", "x")}, ErrInvalidPath},
		{"file named dot", []tarEntry{reg(".", "x")}, ErrInvalidPath},
		{"file with trailing slash", []tarEntry{reg("a/", "x")}, ErrInvalidPath},
		{"absolute dir", []tarEntry{dir("/tmp/")}, ErrInvalidPath},
		{"dotdot dir", []tarEntry{dir("../")}, ErrInvalidPath},
		{"invalid UTF-8", []tarEntry{{tar.Header{Name: "bad\xff", Typeflag: tar.TypeReg, Format: tar.FormatGNU}, "x"}}, ErrInvalidPath},
		{"too long", []tarEntry{reg(strings.Repeat("a/", 2048)+"b", "x")}, ErrInvalidPath},
		{"segment too long", []tarEntry{reg(strings.Repeat("n", 256), "x")}, ErrInvalidPath},
		{"store manifest", []tarEntry{reg(".agentstate/MANIFEST", "x")}, ErrInvalidPath},
		{"store config", []tarEntry{reg("./.agentstate/config.json", "{}")}, ErrInvalidPath},
		{"store dir", []tarEntry{dir(".agentstate/")}, ErrInvalidPath},
		{"derived file as a dir", []tarEntry{reg("bundle.lock.json/x", "x")}, ErrInvalidPath},
		{"escape sequence", []tarEntry{reg("a\x1b[2Jb", "x")}, ErrInvalidPath},
		{"newline", []tarEntry{reg("a\nb", "x")}, ErrInvalidPath},
		{"C1 control", []tarEntry{reg("a\u009bb", "x")}, ErrInvalidPath},
		{"symlink", []tarEntry{symlink("link", "/etc/passwd")}, ErrUnsupportedEntry},
		{"symlink escaping name", []tarEntry{symlink("../link", "x")}, ErrInvalidPath},
		{"hard link", []tarEntry{{hdr: tar.Header{Name: "hl", Linkname: "first", Typeflag: tar.TypeLink, Format: tar.FormatPAX}}}, ErrUnsupportedEntry},
		{"char device", []tarEntry{devices(tar.TypeChar)}, ErrUnsupportedEntry},
		{"block device", []tarEntry{devices(tar.TypeBlock)}, ErrUnsupportedEntry},
		{"fifo", []tarEntry{{hdr: tar.Header{Name: "fifo", Typeflag: tar.TypeFifo, Format: tar.FormatPAX}}}, ErrUnsupportedEntry},
		{"duplicate", []tarEntry{reg("dup", "1"), reg("dup", "2")}, ErrDuplicatePath},
		{"duplicate of first", []tarEntry{reg("first", "again")}, ErrDuplicatePath},
		{"file then subfile", []tarEntry{reg("a", "1"), reg("a/b", "2")}, ErrFileDirConflict},
		{"subfile then file", []tarEntry{reg("a/b/c", "1"), reg("a/b", "2")}, ErrFileDirConflict},
		{"dir entry then file", []tarEntry{dir("a/"), reg("a", "2")}, ErrFileDirConflict},
		{"file then dir entry", []tarEntry{reg("a", "1"), dir("a/")}, ErrFileDirConflict},
		{"file then deep dir entry", []tarEntry{reg("a", "1"), dir("a/b/")}, ErrFileDirConflict},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entries := append([]tarEntry{reg("first", "ok")}, tc.bad...)
			entries = append(entries, reg("last", "never"))
			var seen []string
			_, err := Read(context.Background(), bytes.NewReader(build(t, entries...)), func(p string, _ int64, _ io.Reader) error {
				seen = append(seen, p)
				return nil
			}, ReadOptions{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var ee *EntryError
			if !errors.As(err, &ee) {
				t.Fatalf("err = %v is not an *EntryError", err)
			}
			bad := tc.bad[len(tc.bad)-1].hdr
			if ee.Path != bad.Name || ee.Index != len(tc.bad) || ee.Type != EntryType(bad.Typeflag) {
				t.Fatalf("EntryError names entry %d %q (%s), want %d %q", ee.Index, ee.Path, ee.Type, len(tc.bad), bad.Name)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%q", bad.Name)) {
				t.Fatalf("message %q does not name the entry", err)
			}
			for _, p := range seen {
				if p == "last" {
					t.Fatalf("fn was called after the bad entry: %q", seen)
				}
			}
			if seen[0] != "first" {
				t.Fatalf("seen %q", seen)
			}
		})
	}
}

func TestReadSkipUnsupported(t *testing.T) {
	data := build(t,
		reg("a", "1"),
		symlink("skills/current", "v2.md"),
		tarEntry{hdr: tar.Header{Name: "hl", Linkname: "a", Typeflag: tar.TypeLink, Format: tar.FormatPAX}},
		tarEntry{hdr: tar.Header{Name: "pipe", Typeflag: tar.TypeFifo, Format: tar.FormatPAX}},
		reg("skills/v2.md", "2"),
	)
	got, rep, err := readAll(data, ReadOptions{SkipUnsupported: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := []kv{{"a", "1"}, {"skills/v2.md", "2"}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	want := []Skipped{{"skills/current", '2'}, {"hl", '1'}, {"pipe", '6'}}
	if fmt.Sprint(rep.Skipped) != fmt.Sprint(want) {
		t.Fatalf("skipped %v, want %v", rep.Skipped, want)
	}
	if rep.Skipped[0].Type.String() != "symlink" {
		t.Fatalf("type name %q", rep.Skipped[0].Type)
	}
	// An escaping name is refused even when its type would be skipped.
	_, _, err = readAll(build(t, symlink("/abs", "x")), ReadOptions{SkipUnsupported: true})
	if !errors.Is(err, ErrInvalidPath) {
		t.Fatalf("err = %v, want ErrInvalidPath", err)
	}
}

// TestReadTruncated cuts the golden projection at every byte before its
// final zero block: every cut must be ErrTruncated, never a smaller brain.
func TestReadTruncated(t *testing.T) {
	data := mustWrite(t, goldenFiles)
	for n := 0; n < len(data)-blockSize; n++ {
		_, _, err := readAll(data[:n], ReadOptions{})
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d of %d: err = %v, want ErrTruncated", n, len(data), err)
		}
	}
	// fn that does not read the content: truncation is still found.
	_, err := Read(context.Background(), bytes.NewReader(data[:3*blockSize+10]), func(string, int64, io.Reader) error { return nil }, ReadOptions{})
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("err = %v, want ErrTruncated", err)
	}
}

func TestReadMalformed(t *testing.T) {
	data := mustWrite(t, goldenFiles)
	bad := bytes.Clone(data)
	bad[148] ^= 1 // checksum of the first header
	if _, _, err := readAll(bad, ReadOptions{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("bad checksum: err = %v, want ErrMalformed", err)
	}
	oneZero := oneZeroBlock(t, bytes.Clone(data))
	garbage := append(oneZero, bytes.Repeat([]byte{'g'}, blockSize)...)
	if _, _, err := readAll(garbage, ReadOptions{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("zero block then garbage: err = %v, want ErrMalformed", err)
	}
	if _, _, err := readAll([]byte(strings.Repeat("not a tar ", 200)), ReadOptions{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("text: err = %v, want ErrMalformed", err)
	}
}

func TestReadCallbackError(t *testing.T) {
	boom := errors.New("staging full")
	calls := 0
	_, err := Read(context.Background(), bytes.NewReader(mustWrite(t, goldenFiles)), func(p string, _ int64, _ io.Reader) error {
		calls++
		if p == "a.txt" {
			return boom
		}
		return nil
	}, ReadOptions{})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `"a.txt"`) {
		t.Fatalf("err = %v, want %v naming a.txt", err, boom)
	}
	if calls != 2 {
		t.Fatalf("fn called %d times, want 2", calls)
	}
}

func TestReadContentReaderExpires(t *testing.T) {
	var kept io.Reader
	_, err := Read(context.Background(), bytes.NewReader(mustWrite(t, goldenFiles)), func(p string, _ int64, r io.Reader) error {
		if kept == nil {
			kept = r
		}
		return nil
	}, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kept.Read(make([]byte, 1)); !errors.Is(err, errReaderDone) {
		t.Fatalf("reading after fn returned: err = %v", err)
	}
}

func TestReadCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Read(ctx, bytes.NewReader(mustWrite(t, goldenFiles)), func(string, int64, io.Reader) error {
		cancel()
		return nil
	}, ReadOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestValidKey(t *testing.T) {
	long := strings.Repeat("abcdefghi/", 409) + "abcde" // objects.MaxKeyLen bytes
	good := []string{"a", "a/b", "MEMORY.md", `a\b`, "..a", "a..", ".hidden/x", "ü", "a b", "a/.agentstate/x",
		"bundle.lock.json", strings.Repeat("k", objects.MaxSegmentLen), long}
	bad := []string{"", "/", "/a", "a/", "a//b", ".", "..", "a/.", "a/..", "./a", "a\x00", "\xff",
		".agentstate", ".agentstate/MANIFEST", "bundle.lock.json/x", "receipts.ndjson/x", "a\x1bb", "a\nb", "a\u0085b",
		strings.Repeat("k", objects.MaxSegmentLen+1), long + "e"}
	for _, k := range good {
		if err := validKey(k); err != nil {
			t.Errorf("validKey(%q) = %v", k, err)
		}
	}
	for _, k := range bad {
		if err := validKey(k); !errors.Is(err, ErrInvalidPath) || !errors.Is(err, objects.ErrBadKey) {
			t.Errorf("validKey(%q) = %v, want ErrInvalidPath and objects.ErrBadKey", k, err)
		}
	}
}
