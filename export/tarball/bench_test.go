package tarball

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"testing"
)

// patternReader yields n bytes of a fixed pattern without allocating.
type patternReader struct{ n int64 }

var pattern = func() []byte {
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}()

func (p *patternReader) Read(b []byte) (int, error) {
	if p.n == 0 {
		return 0, io.EOF
	}
	if int64(len(b)) > p.n {
		b = b[:p.n]
	}
	n := 0
	for n < len(b) {
		n += copy(b[n:], pattern)
	}
	p.n -= int64(n)
	return n, nil
}

func (p *patternReader) Close() error { return nil }

// synthetic yields count files of size bytes each.
func synthetic(count int, size int64) iter.Seq2[File, error] {
	return func(yield func(File, error) bool) {
		for i := range count {
			f := File{Path: fmt.Sprintf("data/%02d/file-%06d.bin", i/100%100, i), Size: size,
				Open: func(context.Context) (io.ReadCloser, error) { return &patternReader{n: size}, nil }}
			if !yield(f, nil) {
				return
			}
		}
	}
}

// sink discards writes but, unlike io.Discard, has no ReadFrom, so every
// byte goes through Write's buffer as it would to a file or a cipher.
type sink struct{}

func (sink) Write(p []byte) (int, error) { return len(p), nil }

// BenchmarkWrite1GiB projects a 1 GiB brain (16 files of 64 MiB) into a
// sink: the cost of the tar layer alone.
func BenchmarkWrite1GiB(b *testing.B) {
	const files, size = 16, 64 << 20
	b.SetBytes(files * size)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Write(context.Background(), sink{}, synthetic(files, size), WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteSmallFiles projects 10k files of 1 KiB: header cost.
func BenchmarkWriteSmallFiles(b *testing.B) {
	const files, size = 10000, 1 << 10
	b.SetBytes(files * size)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Write(context.Background(), sink{}, synthetic(files, size), WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTrip1GiB streams a 1 GiB projection through a pipe into
// Read, which drains every file.
func BenchmarkRoundTrip1GiB(b *testing.B) {
	const files, size = 16, 64 << 20
	b.SetBytes(files * size)
	b.ReportAllocs()
	buf := make([]byte, 256<<10)
	for b.Loop() {
		pr, pw := io.Pipe()
		go func() {
			_, err := Write(context.Background(), pw, synthetic(files, size), WriteOptions{})
			pw.CloseWithError(err)
		}()
		_, err := Read(context.Background(), pr, func(_ string, _ int64, r io.Reader) error {
			_, err := io.CopyBuffer(io.Discard, r, buf)
			return err
		}, ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadSmallFiles reads a projection of 10k files of 1 KiB.
func BenchmarkReadSmallFiles(b *testing.B) {
	const files, size = 10000, 1 << 10
	var tarball bytes.Buffer
	if _, err := Write(context.Background(), &tarball, synthetic(files, size), WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(files * size)
	b.ReportAllocs()
	for b.Loop() {
		_, err := Read(context.Background(), bytes.NewReader(tarball.Bytes()), func(_ string, _ int64, r io.Reader) error {
			_, err := io.Copy(io.Discard, r)
			return err
		}, ReadOptions{})
		if err != nil {
			b.Fatal(err)
		}
	}
}
