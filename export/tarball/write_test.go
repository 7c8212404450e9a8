package tarball

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.tar")

// goldenFiles is the golden vector of docs/tar.md. It covers a top-level
// file, an empty file, nested directories, a name that sorts between a
// directory and its files ("a.txt" < "a/"), a name split into the USTAR
// prefix field, a name that needs a PAX record for its length, and one that
// needs it for its non-ASCII bytes.
var goldenFiles = []kv{
	{"MEMORY.md", "# Memory\n\n- the user prefers short answers\n"},
	{"a.txt", ""},
	{"a/b/c.txt", "c\n"},
	{"bundle.lock.json", `{"bundleHash":"0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470","version":1}` + "\n"},
	{"patterns/" + strings.Repeat("p", 100) + "/retry.md", "retry with backoff\n"},
	{"skills/" + strings.Repeat("s", 120) + ".md", "a skill with a long name\n"},
	{"skills/ünïcode.md", "non-ASCII name\n"},
}

// goldenSHA256 pins the projection of goldenFiles. Changing it changes every
// exported snapshot: it must never change once released.
const goldenSHA256 = "855e02138a9d5fa601cd1cd649a8540e25ee38fa29058e4715ef4c112d11d5ae"

func TestGolden(t *testing.T) {
	got := mustWrite(t, goldenFiles)
	sum := sha256.Sum256(got)
	path := filepath.Join("testdata", "golden.tar")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes), sha256 %x", path, len(got), sum)
	}
	if hex.EncodeToString(sum[:]) != goldenSHA256 {
		t.Errorf("sha256 of golden projection = %x, want %s", sum, goldenSHA256)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("projection differs from %s", path)
	}
}

func TestDeterministic(t *testing.T) {
	a := mustWrite(t, goldenFiles)
	b := mustWrite(t, goldenFiles)
	if !bytes.Equal(a, b) {
		t.Fatal("two projections of the same list differ")
	}
	c := mustWrite(t, []kv{{"MEMORY.md", "other"}})
	if bytes.Equal(a, c) {
		t.Fatal("different lists gave the same bytes")
	}
}

// TestMatchesArchiveTar checks the projection against archive/tar used as
// an independent writer of the same rules (docs/tar.md says how).
func TestMatchesArchiveTar(t *testing.T) {
	cases := map[string][]kv{
		"golden": goldenFiles,
		"empty":  nil,
		"deep":   {{strings.Repeat("d/", 40) + "f", "x"}},
		// Names around the 100-byte name field and 155-byte prefix field.
		"boundaries": {
			{strings.Repeat("a", 100), "1"},
			{strings.Repeat("b", 101), "2"},
			{strings.Repeat("c", 155) + "/" + strings.Repeat("c", 100), "3"},
			{strings.Repeat("d", 156) + "/" + strings.Repeat("d", 99), "4"},
			{strings.Repeat("e", 154) + "/" + strings.Repeat("e", 101), "5"},
			{"f/" + strings.Repeat("f", 100), "6"},
			{"g/" + strings.Repeat("g", 99), "7"},
		},
		// Non-ASCII cut at 100 bytes, and a cut leaving '/' as 100th byte.
		"cuts": {
			{strings.Repeat("é", 60) + "/x", "1"},
			{strings.Repeat("h", 99) + "/" + strings.Repeat("h", 150), "2"},
			{"ü/" + strings.Repeat("i", 97) + "/j", "3"},
			{"k/" + strings.Repeat("\u00ff", 10) + "/" + strings.Repeat("k", 96) + "/z", "4"},
		},
		"contents": {{"one", "x"}, {"block", strings.Repeat("y", 512)}, {"blockplus", strings.Repeat("z", 513)}},
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			files = sorted(files)
			got := mustWrite(t, files)
			want := referenceTar(t, files)
			if !bytes.Equal(got, want) {
				t.Fatalf("projection (%d bytes) differs from archive/tar (%d bytes) at byte %d",
					len(got), len(want), firstDiff(got, want))
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestHeaderBytes inspects the bytes themselves: no PAX header for a short
// ASCII name, fixed fields, and a PAX header holding only "path" when
// needed, never a time record.
func TestHeaderBytes(t *testing.T) {
	data := mustWrite(t, []kv{{"a/f", "hello"}})
	// a/ header, a/f header, 1 content block, 2 end blocks.
	if len(data) != 5*blockSize {
		t.Fatalf("len = %d, want %d", len(data), 5*blockSize)
	}
	for i, want := range []struct {
		name, mode, size string
		typ              byte
	}{{"a/", "0000755\x00", "00000000000\x00", '5'}, {"a/f", "0000644\x00", "00000000005\x00", '0'}} {
		h := data[i*blockSize : (i+1)*blockSize]
		fields := []struct {
			what string
			got  string
			want string
		}{
			{"name", string(h[0:100]), want.name + strings.Repeat("\x00", 100-len(want.name))},
			{"mode", string(h[100:108]), want.mode},
			{"uid", string(h[108:116]), "0000000\x00"},
			{"gid", string(h[116:124]), "0000000\x00"},
			{"size", string(h[124:136]), want.size},
			{"mtime", string(h[136:148]), "00000000000\x00"},
			{"typeflag", string(h[156:157]), string(want.typ)},
			{"linkname", string(h[157:257]), strings.Repeat("\x00", 100)},
			{"magic+version", string(h[257:265]), "ustar\x0000"},
			{"uname+gname", string(h[265:329]), strings.Repeat("\x00", 64)},
			{"devmajor+devminor", string(h[329:345]), "0000000\x000000000\x00"},
			{"prefix+pad", string(h[345:512]), strings.Repeat("\x00", 167)},
		}
		for _, f := range fields {
			if f.got != f.want {
				t.Errorf("entry %d %s = %q, want %q", i, f.what, f.got, f.want)
			}
		}
		var sum int64
		for j, c := range h {
			if j >= 148 && j < 156 {
				c = ' '
			}
			sum += int64(c)
		}
		if got, want := string(h[148:156]), fmt.Sprintf("%06o\x00 ", sum); got != want {
			t.Errorf("entry %d checksum = %q, want %q", i, got, want)
		}
	}
	if got := string(data[2*blockSize : 2*blockSize+6]); got != "hello\x00" {
		t.Errorf("content block starts %q", got)
	}
	if !bytes.Equal(data[3*blockSize:], make([]byte, 2*blockSize)) {
		t.Error("archive does not end with two zero blocks")
	}

	long := "x/" + strings.Repeat("y", 198) // 200 bytes, no USTAR split
	data = mustWrite(t, []kv{{long, "z"}})
	// x/ header; x header + 1 record block; main header; content; end.
	if len(data) != 7*blockSize {
		t.Fatalf("len = %d, want %d", len(data), 7*blockSize)
	}
	xh := data[blockSize : 2*blockSize]
	if xh[156] != 'x' {
		t.Fatalf("typeflag %q, want 'x'", xh[156])
	}
	if got, want := cString(xh[0:100]), "x/PaxHeaders.0/"+strings.Repeat("y", 85); got != want {
		t.Errorf("PAX header name %q, want %q", got, want)
	}
	rec := "210 path=" + long + "\n"
	if got := string(data[2*blockSize : 2*blockSize+len(rec)]); got != rec {
		t.Errorf("PAX records %q, want %q", got, rec)
	}
	if bytes.Contains(data, []byte("time=")) {
		t.Error("PAX time record present")
	}
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// TestHugeSizeHeader checks the header of a file of 8 GiB and more: a PAX
// "size" record, size field 0, exactly as archive/tar writes it.
func TestHugeSizeHeader(t *testing.T) {
	for _, name := range []string{"big.bin", "d/" + strings.Repeat("n", 120)} {
		for _, size := range []int64{maxUSTARSize, maxUSTARSize + 1, 1 << 40} {
			got := appendHeader(nil, name, typeReg, modeFile, size)
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			h := &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR}
			if err := tw.WriteHeader(h); err != nil {
				h.Format = tar.FormatPAX
				if err := tw.WriteHeader(h); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, buf.Bytes()) {
				t.Errorf("%q size %d: header differs from archive/tar at byte %d", name, size, firstDiff(got, buf.Bytes()))
			}
			if pax := size > maxUSTARSize; pax != bytes.Contains(got, []byte(" size=")) {
				t.Errorf("%q size %d: PAX size record present = %v", name, size, !pax)
			}
		}
	}
}

func TestPAXRecordLength(t *testing.T) {
	// A record whose length field gains a digit once counted: 3+4+93 = 100.
	for _, v := range []string{strings.Repeat("v", 92), strings.Repeat("v", 93), strings.Repeat("v", 94), "x"} {
		rec := paxRecord("path", v)
		n, _, _ := strings.Cut(rec, " ")
		if fmt.Sprint(len(rec)) != n {
			t.Errorf("record for %d-byte value has length field %s but is %d bytes", len(v), n, len(rec))
		}
	}
}

func TestWriteRefuses(t *testing.T) {
	cases := []struct {
		name  string
		files []kv
		want  error
		index int
	}{
		{"unsorted", []kv{{"b", "1"}, {"a", "2"}}, ErrUnsorted, 1},
		{"unsorted nested", []kv{{"a/b", "1"}, {"a.txt", "2"}}, ErrUnsorted, 1},
		{"duplicate", []kv{{"a", "1"}, {"a", "2"}}, ErrDuplicatePath, 1},
		{"file then dir", []kv{{"a", "1"}, {"a/b", "2"}}, ErrFileDirConflict, 1},
		{"file then dir later", []kv{{"a", "1"}, {"a!", "2"}, {"a.b/c", "3"}, {"a/b", "4"}}, ErrFileDirConflict, 3},
		{"absolute", []kv{{"/etc/passwd", "1"}}, ErrInvalidPath, 0},
		{"dotdot", []kv{{"a/../b", "1"}}, ErrInvalidPath, 0},
		{"dot", []kv{{"./a", "1"}}, ErrInvalidPath, 0},
		{"empty segment", []kv{{"a//b", "1"}}, ErrInvalidPath, 0},
		{"trailing slash", []kv{{"a/", "1"}}, ErrInvalidPath, 0},
		{"empty", []kv{{"", "1"}}, ErrInvalidPath, 0},
		{"nul", []kv{{"a\x00b", "1"}}, ErrInvalidPath, 0},
		{"bad utf8", []kv{{"a\xffb", "1"}}, ErrInvalidPath, 0},
		{"too long", []kv{{strings.Repeat("a/", 2048) + "b", "1"}}, ErrInvalidPath, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := Write(context.Background(), &buf, seqOf(tc.files), WriteOptions{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var ee *EntryError
			if !errors.As(err, &ee) || ee.Index != tc.index || ee.Path != tc.files[tc.index].path {
				t.Fatalf("err = %#v, want *EntryError for entry %d", err, tc.index)
			}
			// Nothing after the files before the bad one: their projection
			// minus its end marker.
			want := mustWrite(t, tc.files[:tc.index])
			want = want[:len(want)-2*blockSize]
			if !bytes.Equal(buf.Bytes(), want) {
				t.Fatalf("wrote %d bytes, want the %d bytes of the earlier files only", buf.Len(), len(want))
			}
		})
	}
}

type fileFunc func(context.Context) (io.ReadCloser, error)

func seqFiles(files ...File) func(func(File, error) bool) {
	return func(yield func(File, error) bool) {
		for _, f := range files {
			if !yield(f, nil) {
				return
			}
		}
	}
}

func opener(s string) fileFunc {
	return func(context.Context) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(s)), nil }
}

func TestWriteContentErrors(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name string
		f    File
		want error
	}{
		{"short", File{Path: "f", Size: 10, Open: opener("12345")}, ErrSizeMismatch},
		{"long", File{Path: "f", Size: 3, Open: opener("12345")}, ErrSizeMismatch},
		{"negative", File{Path: "f", Size: -1, Open: opener("")}, ErrInvalidFile},
		{"no open", File{Path: "f", Size: 0}, ErrInvalidFile},
		{"data short", File{Path: "f", Size: 10, Data: []byte("12345")}, ErrSizeMismatch},
		{"data long", File{Path: "f", Size: 3, Data: []byte("12345")}, ErrSizeMismatch},
		{"open returns nothing", File{Path: "f", Size: 1, Open: func(context.Context) (io.ReadCloser, error) { return nil, nil }}, nil},
		{"open fails", File{Path: "f", Size: 1, Open: func(context.Context) (io.ReadCloser, error) { return nil, boom }}, boom},
		{"read fails", File{Path: "f", Size: 1, Open: func(context.Context) (io.ReadCloser, error) {
			return io.NopCloser(io.MultiReader(strings.NewReader(""), errReader{boom})), nil
		}}, boom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := Write(context.Background(), &buf, seqFiles(File{Path: "a", Size: 1, Open: opener("a")}, tc.f, File{Path: "g", Size: 1, Open: opener("g")}), WriteOptions{})
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			var ee *EntryError
			if !errors.As(err, &ee) || ee.Path != "f" || ee.Index != 1 {
				t.Fatalf("err = %v, want an *EntryError for f", err)
			}
			if bytes.Contains(buf.Bytes(), []byte("g\x00\x00")) {
				t.Fatal("the file after the failing one was written")
			}
			if _, _, err := readAll(buf.Bytes(), ReadOptions{}); !errors.Is(err, ErrTruncated) {
				t.Fatalf("reading the partial output: err = %v, want ErrTruncated", err)
			}
		})
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestNilArguments(t *testing.T) {
	if _, err := Write(context.Background(), nil, seqOf(goldenFiles), WriteOptions{}); err == nil {
		t.Error("Write with nil writer succeeded")
	}
	if _, err := Write(context.Background(), io.Discard, nil, WriteOptions{}); err == nil {
		t.Error("Write with nil sequence succeeded")
	}
	if _, err := Read(context.Background(), bytes.NewReader(mustWrite(t, nil)), nil, ReadOptions{}); err == nil {
		t.Error("Read with nil callback succeeded")
	}
	if _, err := Read(context.Background(), nil, func(string, int64, io.Reader) error { return nil }, ReadOptions{}); err == nil {
		t.Error("Read with nil reader succeeded")
	}
}

func TestWriteIteratorError(t *testing.T) {
	boom := errors.New("listing failed")
	seq := func(yield func(File, error) bool) {
		if yield(File{Path: "a", Size: 1, Open: opener("a")}, nil) {
			yield(File{}, boom)
		}
	}
	_, err := Write(context.Background(), io.Discard, seq, WriteOptions{})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
}

func TestWriteCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	seq := func(yield func(File, error) bool) {
		if yield(File{Path: "a", Size: 1, Open: opener("a")}, nil) {
			cancel()
			yield(File{Path: "b", Size: 1, Open: opener("b")}, nil)
		}
	}
	st, err := Write(ctx, io.Discard, seq, WriteOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if st.Files != 1 {
		t.Fatalf("Files = %d, want 1", st.Files)
	}
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		n := f.n
		f.n = 0
		return n, errors.New("disk full")
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriteWriterFails(t *testing.T) {
	_, err := Write(context.Background(), &failWriter{n: 700}, seqOf(goldenFiles), WriteOptions{})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v, want the writer's error", err)
	}
}

func TestWriteStats(t *testing.T) {
	var buf bytes.Buffer
	var progress []string
	st, err := Write(context.Background(), &buf, seqOf(goldenFiles), WriteOptions{
		Progress: func(p string, n int64) { progress = append(progress, fmt.Sprintf("%s:%d", p, n)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	var content int64
	for _, f := range goldenFiles {
		content += int64(len(f.content))
	}
	// Directories: a/ a/b/ patterns/ patterns/ppp.../ skills/
	want := Stats{Files: len(goldenFiles), Dirs: 5, ContentBytes: content, TarBytes: int64(buf.Len())}
	if st != want {
		t.Fatalf("Stats = %+v, want %+v", st, want)
	}
	if len(progress) != len(goldenFiles) || progress[0] != fmt.Sprintf("MEMORY.md:%d", len(goldenFiles[0].content)) {
		t.Fatalf("progress = %v", progress)
	}
}

// TestDirectoryOrder checks that entry names of a projection are strictly
// increasing bytewise, directories included, and each directory precedes
// its contents.
func TestDirectoryOrder(t *testing.T) {
	files := sorted([]kv{{"a/b!", "1"}, {"a/b/c", "2"}, {"a/b.d/e", "3"}, {"a.txt", "4"}, {"a-b/c", "5"}, {"z", "6"}, {"a/b/c!/d", "7"}})
	tr := tar.NewReader(bytes.NewReader(mustWrite(t, files)))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	want := []string{"a-b/", "a-b/c", "a.txt", "a/", "a/b!", "a/b.d/", "a/b.d/e", "a/b/", "a/b/c", "a/b/c!/", "a/b/c!/d", "z"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Fatalf("entries\n %q\nwant\n %q", names, want)
	}
}

// Content held in memory (File.Data) writes the bytes Open would, whatever
// its length next to the write buffer, and Open is not called.
func TestWriteData(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), copyBufSize/16*3+7) // past the buffer, not a multiple of it
	files := []kv{{"a.md", "short\n"}, {"b/big.bin", string(big)}, {"b/c.md", ""}, {"d.md", string(big[:copyBufSize])}}
	want := mustWrite(t, files)
	var buf bytes.Buffer
	st, err := Write(context.Background(), &buf, func(yield func(File, error) bool) {
		for _, f := range files {
			open := func(context.Context) (io.ReadCloser, error) {
				t.Fatal("Open called for a file with Data")
				return nil, nil
			}
			if !yield(File{Path: f.path, Size: int64(len(f.content)), Data: []byte(f.content), Open: open}, nil) {
				return
			}
		}
	}, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatal("content from Data differs from the same content through Open")
	}
	if st.Files != 4 || st.ContentBytes != int64(len(big)+copyBufSize+6) || st.TarBytes != int64(len(want)) {
		t.Fatalf("stats %+v", st)
	}
}
