package repo_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

// sqliteVersions returns n versions of a 2 MiB SQLite-like file (4 KiB
// pages of text), each changing a few bytes of about 1% of the pages.
func sqliteVersions(n int, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, seed))
	const pages, ps = 512, 4096
	db := make([]byte, pages*ps)
	for i := range db {
		db[i] = "ab c\n"[rng.IntN(5)]
	}
	copy(db, "SQLite format 3\x00")
	binary.BigEndian.PutUint16(db[16:18], ps)
	out := [][]byte{db}
	for range n - 1 {
		db = nextSQLiteVersion(db, rng)
		out = append(out, db)
	}
	return out
}

// nextSQLiteVersion changes a few bytes of about 1% of db's pages.
func nextSQLiteVersion(db []byte, rng *rand.Rand) []byte {
	const ps = 4096
	pages := len(db) / ps
	db = bytes.Clone(db)
	for range pages / 100 {
		p := 1 + rng.IntN(pages-1)
		for range 16 {
			db[p*ps+rng.IntN(ps)] = byte('a' + rng.IntN(26))
		}
	}
	return db
}

// packedStore commits versions of memory.db and runs gc, which packs them.
func packedStore(t *testing.T, versions [][]byte) (*repo.Repo, []objects.CID, repo.GCReport) {
	t.Helper()
	r, _ := newStore(t)
	var commits []objects.CID
	for _, v := range versions {
		commits = append(commits, putCommit(t, r, "a", "memory.db", v))
	}
	rep, err := r.GC(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	return r, commits, rep
}

// packsHolding returns the ids of the packs whose records hold c.
func packsHolding(t *testing.T, r *repo.Repo, c objects.CID) []string {
	t.Helper()
	packs, err := r.Storage.(*badger.Store).PackMembers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for id, ms := range packs {
		if slices.Contains(ms, c) {
			out = append(out, id)
		}
	}
	return out
}

func checkVersions(t *testing.T, r *repo.Repo, commits []objects.CID, versions [][]byte) {
	t.Helper()
	for i, c := range commits {
		got, err := objects.ReadValueMax(context.Background(), r.Blocks, valueAt(t, r, c, "memory.db"), 1<<30)
		if err != nil || !bytes.Equal(got, versions[i]) {
			t.Fatalf("version %d reads %d bytes, %v; want its %d bytes", i, len(got), err, len(versions[i]))
		}
	}
}

// TestGCPacks: gc stores a chunked value's versions in packs, far smaller
// than its blocks; every version reads whole, verify is clean, a second gc
// changes nothing, and a store fetching from it gets whole blocks.
func TestGCPacks(t *testing.T) {
	ctx := context.Background()
	versions := sqliteVersions(8, 1)
	r, commits, rep := packedStore(t, versions)
	if rep.Packed < 512 || rep.PackBytes > int64(len(versions[0]))/2 {
		t.Fatalf("gc packed %d blocks in %d bytes; want at least the 512 pages, in under half a version's bytes", rep.Packed, rep.PackBytes)
	}
	checkVersions(t, r, commits, versions)
	mustVerify(t, r)
	again, err := r.GC(ctx, false)
	if err != nil || again.Packed != 0 {
		t.Fatalf("a second gc packed %d blocks (%v); want none", again.Packed, err)
	}
	checkVersions(t, r, commits, versions)
	// A fetch copies whole blocks: the copy reads and verifies without
	// the source's packs.
	dst, err := repo.Init(filepath.Join(t.TempDir(), "dst"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := dst.Fetch(ctx, r, commits[len(commits)-1]); err != nil {
		t.Fatal(err)
	}
	checkVersions(t, dst, commits, versions)
	if packs, _ := dst.Storage.(*badger.Store).PackMembers(ctx); len(packs) != 0 {
		t.Fatalf("the fetched store holds %d packs", len(packs))
	}
}

// TestVerifyPackMissing: a packed block whose pack is gone is a problem
// verify reports, naming the block and the pack.
func TestVerifyPackMissing(t *testing.T) {
	ctx := context.Background()
	r, commits, _ := packedStore(t, sqliteVersions(3, 2))
	v := valueAt(t, r, commits[0], "memory.db")
	data, err := r.Blocks.Get(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	cn, err := objects.DecodeChunkNode(data)
	if err != nil {
		t.Fatal(err)
	}
	var page objects.CID
	for _, c := range cn.Chunks {
		d, _ := r.Blocks.Get(ctx, c)
		if ln, err := objects.DecodeChunkNode(d); err == nil {
			page = ln.Chunks[0]
			break
		}
	}
	ids := packsHolding(t, r, page)
	if len(ids) != 1 {
		t.Fatalf("the first page is in %d packs, want 1", len(ids))
	}
	if err := r.Storage.(*badger.Store).DropPackForTest([]byte(ids[0])); err != nil {
		t.Fatal(err)
	}
	vr, err := r.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range vr.Problems {
		found = found || (strings.Contains(p, page.String()) && strings.Contains(p, "pack"))
	}
	if !found {
		t.Fatalf("verify did not report the page whose pack is gone: %v", vr.Problems)
	}
	// Repair drops the dangling pointers: the page reads as missing, and
	// storing its content again (as a commit of the same file would)
	// stores it, after which verify is clean.
	n, err := r.RepairPacks(ctx)
	if err != nil || n == 0 {
		t.Fatalf("RepairPacks: %d, %v", n, err)
	}
	if ok, _ := r.Blocks.Has(ctx, page); ok {
		t.Fatal("the page whose pack is gone still looks stored")
	}
	db := sqliteVersions(3, 2)
	for _, v := range db {
		_, blocks := objects.NewFileValue(v)
		if err := r.Blocks.Put(ctx, blocks...); err != nil {
			t.Fatal(err)
		}
	}
	mustVerify(t, r)
}

// TestRedactPacked: a redacted version's blocks leave every pack; the
// versions stored beside them in the same packs still read whole.
func TestRedactPacked(t *testing.T) {
	ctx := context.Background()
	versions := sqliteVersions(5, 3)
	r, commits, _ := packedStore(t, versions)
	// The newest version (its changed pages its own) is redacted, once a
	// later commit has replaced it.
	putCommit(t, r, "a", "memory.db", []byte("small now"))
	if len(packsHolding(t, r, valueAt(t, r, commits[4], "memory.db"))) == 0 {
		t.Fatal("the version to redact is not packed")
	}
	rep, err := r.Redact(ctx, repo.RedactRequest{Agent: "a", Key: "memory.db", At: commits[4], Reason: "x"}, redactKey())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed == 0 {
		t.Fatalf("report %+v", rep)
	}
	for _, c := range rep.Record.Blocks {
		if ids := packsHolding(t, r, c); len(ids) > 0 {
			t.Fatalf("redacted block %s is still in pack(s) %x", c, ids)
		}
		if ok, _ := r.Blocks.Has(ctx, c); ok {
			t.Fatalf("redacted block %s is still stored", c)
		}
	}
	mustVerify(t, r)
	rest, restV := commits[:4], versions[:4]
	checkVersions(t, r, rest, restV)
	if _, err := r.GC(ctx, false); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, r)
	checkVersions(t, r, rest, restV)
	for _, c := range rep.Record.Blocks {
		if ids := packsHolding(t, r, c); len(ids) > 0 {
			t.Fatalf("gc packed redacted block %s again", c)
		}
	}
}

// TestForgetPacked: gc deletes forgotten versions' blocks out of the packs
// they shared with kept ones, which still read whole.
func TestForgetPacked(t *testing.T) {
	ctx := context.Background()
	versions := sqliteVersions(6, 4)
	r, commits, _ := packedStore(t, versions)
	old := map[objects.CID]bool{}
	for _, c := range commits[:4] {
		old[valueAt(t, r, c, "memory.db")] = true
	}
	if _, err := r.Forget(ctx, "a", repo.Policy{Last: 2}, false); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, r)
	checkVersions(t, r, commits[4:], versions[4:])
	for v := range old {
		if ok, _ := r.Blocks.Has(ctx, v); ok {
			t.Fatalf("forgotten version %s still stored", v)
		}
		if ids := packsHolding(t, r, v); len(ids) > 0 {
			t.Fatalf("forgotten version %s still in a pack", v)
		}
	}
}
