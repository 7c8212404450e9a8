package tarball

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"
)

// kv is one brain file for tests.
type kv struct{ path, content string }

// seqOf yields files in the given order (not sorted: tests of the order
// check need that).
func seqOf(files []kv) iter.Seq2[File, error] {
	return func(yield func(File, error) bool) {
		for _, f := range files {
			c := f.content
			ff := File{Path: f.path, Size: int64(len(c)), Open: func(context.Context) (io.ReadCloser, error) {
				return io.NopCloser(strings.NewReader(c)), nil
			}}
			if !yield(ff, nil) {
				return
			}
		}
	}
}

func sorted(files []kv) []kv {
	out := slices.Clone(files)
	slices.SortFunc(out, func(a, b kv) int { return strings.Compare(a.path, b.path) })
	return out
}

func mustWrite(t testing.TB, files []kv) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := Write(context.Background(), &buf, seqOf(files), WriteOptions{}); err != nil {
		t.Fatalf("Write: %v", err)
	}
	return buf.Bytes()
}

// readAll runs Read and collects what fn saw.
func readAll(data []byte, opts ReadOptions) ([]kv, ReadReport, error) {
	var got []kv
	rep, err := Read(context.Background(), bytes.NewReader(data), func(p string, size int64, r io.Reader) error {
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if int64(len(b)) != size {
			return errors.New("content length differs from size")
		}
		got = append(got, kv{p, string(b)})
		return nil
	}, opts)
	return got, rep, err
}

// referenceTar builds the projection of sorted files with archive/tar, an
// independent writer: every entry gets Format USTAR when archive/tar accepts
// that and PAX otherwise, with fixed mode, zero times, ids and names.
func referenceTar(t testing.TB, files []kv) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	seen := map[string]bool{}
	put := func(name string, typ byte, mode int64, content string) {
		h := &tar.Header{Name: name, Typeflag: typ, Mode: mode, Size: int64(len(content)),
			ModTime: time.Unix(0, 0), Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			h.Format = tar.FormatPAX
			if err := tw.WriteHeader(h); err != nil {
				t.Fatalf("archive/tar header %q: %v", name, err)
			}
		}
		if _, err := io.WriteString(tw, content); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		for i := range len(f.path) {
			if d := f.path[:i+1]; f.path[i] == '/' && !seen[d] {
				seen[d] = true
				put(d, tar.TypeDir, 0o755, "")
			}
		}
		put(f.path, tar.TypeReg, 0o644, f.content)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// build makes a tar with archive/tar from raw headers, for Read tests.
func build(t testing.TB, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.hdr
		if h.Typeflag == tar.TypeReg || h.Typeflag == 0 {
			h.Size = int64(len(e.content))
		}
		if h.Mode == 0 && h.Typeflag != tar.TypeXGlobalHeader {
			h.Mode = 0o644
		}
		// archive/tar refuses a regular file named with a trailing '/':
		// write another name and patch the header afterwards.
		patch := h.Typeflag == tar.TypeReg && strings.HasSuffix(h.Name, "/")
		want := h.Name
		if patch {
			h.Name = strings.TrimSuffix(h.Name, "/") + "_"
			h.Format = tar.FormatUSTAR
		}
		if err := tw.Flush(); err != nil {
			t.Fatal(err)
		}
		at := buf.Len()
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatalf("archive/tar header %q: %v", h.Name, err)
		}
		if patch {
			hdr := buf.Bytes()[at : at+blockSize]
			copy(hdr, want)
			fixChecksum(hdr)
		}
		if _, err := io.WriteString(tw, e.content); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type tarEntry struct {
	hdr     tar.Header
	content string
}

func reg(name, content string) tarEntry {
	return tarEntry{tar.Header{Name: name, Typeflag: tar.TypeReg, Format: tar.FormatPAX}, content}
}

func dir(name string) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755, Format: tar.FormatPAX}}
}

func symlink(name, target string) tarEntry {
	return tarEntry{hdr: tar.Header{Name: name, Linkname: target, Typeflag: tar.TypeSymlink, Mode: 0o777, Format: tar.FormatPAX}}
}
