package export_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
)

// A database redacted in history and still on disk: committed again it is
// stored again (its pages are this version's content), gc then removes the
// pages the redaction covers, and a later commit of the database with one
// page changed must still store every page the new version has; none may be
// taken for stored from the redacted version's lists.
func TestImportDirAfterRedactionAndGC(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	brain := filepath.Join(dir, "brain")
	const pages, pageSize = 1024, 4096
	db := make([]byte, pages*pageSize)
	rand.NewChaCha8([32]byte{3}).Read(db)
	copy(db, "SQLite format 3\x00")
	binary.BigEndian.PutUint16(db[16:18], pageSize)
	writeFile(t, brain, "memory.db", db, 0)
	r, err := repo.Init(filepath.Join(dir, "store"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	commit := func() objects.CID {
		t.Helper()
		res, err := export.ImportDir(ctx, r.Blocks, brain, export.ImportOptions{Cache: r.StatCache()})
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "main", Tree: res.Tree, Message: "m"})
		if err != nil && !errors.Is(err, repo.ErrNoChange) {
			t.Fatal(err)
		}
		return c
	}
	c1 := commit()
	seed := sha256.Sum256([]byte("export redaction test key"))
	if _, err := r.Redact(ctx, repo.RedactRequest{Agent: "main", Key: "memory.db", At: c1, Reason: "test"}, ed25519.NewKeyFromSeed(seed[:])); err != nil {
		t.Fatal(err)
	}
	writeFile(t, brain, "memory.db", db, 1) // touched: read again, stored again
	commit()
	if _, err := r.GC(ctx, false); err != nil {
		t.Fatal(err)
	}
	copy(db[500*pageSize+64:], "one page changed")
	if err := os.WriteFile(filepath.Join(brain, "memory.db"), db, 0o644); err != nil {
		t.Fatal(err)
	}
	c3 := commit()
	tr, err := r.Tree(ctx, c3)
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := tr.Get(ctx, "memory.db")
	if err != nil {
		t.Fatal(err)
	}
	got, err := objects.ReadValue(ctx, r.Blocks, v)
	if err != nil || !bytes.Equal(got, db) {
		t.Fatalf("the new version read back: %v", err)
	}
	rep, err := r.Verify(ctx)
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}
