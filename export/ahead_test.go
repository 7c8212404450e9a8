package export_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects/memstore"
)

// A scan started ahead (while a store opens) gives ImportDir exactly what
// its own scan would: the same tree, files, reads and skipped entries, cold
// and from the stat cache.
func TestImportDirScanAhead(t *testing.T) {
	ctx := context.Background()
	dir := makeBrain(t)
	if err := os.Symlink("system.md", filepath.Join(dir, "link.md")); err != nil {
		t.Fatal(err)
	}
	own, ahead := memstore.New(), memstore.New()
	ownCache, aheadCache := &metaMap{}, &metaMap{}
	for round := range 3 {
		if round == 2 {
			writeFile(t, dir, "skills/s03.md", []byte("skill 3, revised\n"), time.Minute)
		}
		want, err := export.ImportDir(ctx, own, dir, export.ImportOptions{Cache: ownCache})
		if err != nil {
			t.Fatal(err)
		}
		a := export.StartScan(ctx, dir)
		got, err := export.ImportDir(ctx, ahead, dir, export.ImportOptions{Cache: aheadCache, Ahead: a})
		a.Stop()
		if err != nil {
			t.Fatal(err)
		}
		if got.Tree != want.Tree || got.Files != want.Files || got.Read != want.Read || !slices.Equal(got.Skipped, want.Skipped) {
			t.Fatalf("round %d: with the scan ahead %+v, without %+v", round, got, want)
		}
		if len(got.Skipped) != 1 {
			t.Fatalf("round %d: skipped %v, want the symlink", round, got.Skipped)
		}
	}
	if ahead.Len() != own.Len() {
		t.Fatalf("the store holds %d blocks, %d without the scan ahead", ahead.Len(), own.Len())
	}
}

// The stat cache's recording time is the scan's start, taken before any
// file was stat'd, not ImportDir's later start: a file modified at about the
// time the scan began is within the racy window of the recording and is read
// again by the next import.
func TestImportDirScanAheadRecordsItsStart(t *testing.T) {
	ctx := context.Background()
	dir := makeBrain(t)
	now := time.Now()
	if err := os.Chtimes(filepath.Join(dir, "system.md"), now, now); err != nil {
		t.Fatal(err)
	}
	const window = 100 * time.Millisecond
	bs, cache := memstore.New(), &metaMap{}
	a := export.StartScan(ctx, dir)
	time.Sleep(3 * window) // a store's open, long
	if _, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache, Ahead: a, RacyWindow: window}); err != nil {
		t.Fatal(err)
	}
	a.Stop()
	res, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache, RacyWindow: window})
	if err != nil {
		t.Fatal(err)
	}
	if res.Read != 1 {
		t.Fatalf("next import read %d files, want 1 (system.md, modified as the scan began)", res.Read)
	}
}

// A scan started ahead of another directory is refused before anything is
// written.
func TestImportDirScanAheadOfAnotherDirectory(t *testing.T) {
	ctx := context.Background()
	dir, other := makeBrain(t), makeBrain(t)
	a := export.StartScan(ctx, other)
	defer a.Stop()
	bs, cache := memstore.New(), &metaMap{}
	_, err := export.ImportDir(ctx, bs, dir, export.ImportOptions{Cache: cache, Ahead: a})
	if err == nil || !strings.Contains(err.Error(), "started ahead") {
		t.Fatalf("import with the scan of another directory: %v", err)
	}
	if bs.Len() != 0 || cache.sets != 0 {
		t.Fatalf("a refused import wrote %d blocks and %d cache records", bs.Len(), cache.sets)
	}
}

// Stop ends a scan nobody waits for (the store did not open), at once or
// after it finished, as often as it is called.
func TestScanAheadStop(t *testing.T) {
	ctx := context.Background()
	dir := makeBrain(t)
	export.StartScan(ctx, dir).Stop()
	a := export.StartScan(ctx, dir)
	a.Stop()
	a.Stop()
	missing := export.StartScan(ctx, filepath.Join(dir, "missing"))
	_, err := export.ImportDir(ctx, memstore.New(), filepath.Join(dir, "missing"), export.ImportOptions{Ahead: missing})
	if err == nil || !strings.Contains(err.Error(), "brain directory") {
		t.Fatalf("import of a missing directory scanned ahead: %v", err)
	}
	missing.Stop()
}
