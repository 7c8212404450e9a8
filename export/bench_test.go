package export_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// benchBrain writes n files of size bytes in 20 directories, dated out of
// the racy window.
func benchBrain(b *testing.B, n, size int) (string, int64) {
	dir := b.TempDir()
	buf := make([]byte, size)
	for i := range n {
		for j := range buf {
			buf[j] = byte('a' + (i*31+j*7)%26)
		}
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%20), fmt.Sprintf("f%05d.md", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(p, past, past); err != nil {
			b.Fatal(err)
		}
	}
	return dir, int64(n * size)
}

// BenchmarkImportDir imports 2000 1 KiB files: cold (every file read) and
// through a warm stat cache (nothing read).
func BenchmarkImportDir(b *testing.B) {
	ctx := context.Background()
	dir, total := benchBrain(b, 2000, 1024)
	b.Run("cold", func(b *testing.B) {
		b.SetBytes(total)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := export.ImportDir(ctx, memstore.New(), dir, export.ImportOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		bs, cache := memstore.New(), &metaMap{}
		if _, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache}); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache})
			if err != nil || res.Read != 0 {
				b.Fatalf("read %d files, err %v", res.Read, err)
			}
		}
	})
}

// BenchmarkCheckout writes 2000 1 KiB files into an empty directory.
func BenchmarkCheckout(b *testing.B) {
	ctx := context.Background()
	dir, total := benchBrain(b, 2000, 1024)
	bs := memstore.New()
	res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{})
	if err != nil {
		b.Fatal(err)
	}
	out := b.TempDir()
	b.SetBytes(total)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := export.Checkout(ctx, bs, res.Tree, filepath.Join(out, fmt.Sprint(i))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckoutReplace checks out, in turn, two trees of 2000 1 KiB
// files that differ in every file over the same directory: every file is
// replaced (temporary file and rename).
func BenchmarkCheckoutReplace(b *testing.B) {
	ctx := context.Background()
	bs := memstore.New()
	var trees [2]objects.CID
	var total int64
	for i := range trees {
		dir, n := benchBrain(b, 2000, 1024)
		if i == 1 {
			// The same keys and sizes, other bytes.
			for j := range 2000 {
				p := filepath.Join(dir, fmt.Sprintf("d%02d", j%20), fmt.Sprintf("f%05d.md", j))
				if err := os.WriteFile(p, bytes.Repeat([]byte{'z'}, 1024), 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
		res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{})
		if err != nil {
			b.Fatal(err)
		}
		trees[i], total = res.Tree, n
	}
	out := filepath.Join(b.TempDir(), "out")
	// The directory's stat cache records what each checkout wrote, so the
	// next may replace it (as the CLI's and the runtime's checkouts do).
	opts := export.CheckoutOptions{Cache: &export.MemMeta{}}
	if _, err := export.CheckoutWith(ctx, bs, trees[0], out, opts); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(total)
	b.ReportAllocs()
	for i := 1; b.Loop(); i++ {
		rep, err := export.CheckoutWith(ctx, bs, trees[i%2], out, opts)
		if err != nil || rep.Written != 2000 {
			b.Fatalf("%+v %v", rep, err)
		}
	}
}

// BenchmarkWriteTar exports a 64 MiB brain (64 files of 1 MiB) as the
// deterministic tar, to io.Discard.
func BenchmarkWriteTar(b *testing.B) {
	ctx := context.Background()
	dir, total := benchBrain(b, 64, 1<<20)
	bs := memstore.New()
	res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(total)
	b.ReportAllocs()
	for b.Loop() {
		bundle, err := objects.TreeBundleHash(ctx, bs, res.Tree)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := snapshot.WriteTar(ctx, io.Discard, bs, res.Tree, bundle, nil); err != nil {
			b.Fatal(err)
		}
	}
}
