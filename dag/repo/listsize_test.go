package repo_test

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

// verify checks every list size record against its node and reports each
// that is damaged, names no stored node, names a block that is no list
// node, or gives another size; all of them are cache problems, and
// RebuildListSizes repairs them.
func TestVerifyListSizes(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A database-shaped value of 600 pages, cut at every page.
	content := make([]byte, 600*4096)
	copy(content, "SQLite format 3\x00")
	binary.BigEndian.PutUint16(content[16:], 4096)
	for i := 1; i < 600; i++ {
		binary.BigEndian.PutUint32(content[i*4096:], uint32(i))
	}
	v, blocks := objects.NewFileValue(content)
	var lists []objects.CID
	for _, b := range blocks {
		if _, ok := objects.ListNodeSize(b.Data); ok {
			lists = append(lists, b.CID)
		}
	}
	if len(lists) < 3 {
		t.Fatalf("%d list nodes: not a test", len(lists))
	}
	if _, err := r.Edit(ctx, repo.EditRequest{Agent: "a", Message: "big", Create: true, Blocks: blocks,
		Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) {
			_, err := tr.Put(ctx, "big", v)
			return true, err
		}}); err != nil {
		t.Fatal(err)
	}
	rep, err := r.Verify(ctx)
	if err != nil || len(rep.Problems) != 0 || rep.ListSizeRecords != len(lists) {
		t.Fatalf("clean store: %d records for %d list nodes, problems %v (%v)", rep.ListSizeRecords, len(lists), rep.Problems, err)
	}
	name := func(c objects.CID) string { return badger.ListSizePrefix + string(c.Bytes()) }
	set := func(n string, rec []byte) {
		if err := r.Storage.SetMeta(ctx, n, rec); err != nil {
			t.Fatal(err)
		}
	}
	set(name(lists[0]), badger.EncodeListSize(lists[0], 12345))  // another size
	set(name(lists[1]), []byte{1, 2, 3, 4, 5})                   // does not decode
	set(name(v), badger.EncodeListSize(v, uint64(len(content)))) // the file node
	ghost := objects.Sum(objects.CodecDagCBOR, []byte("\xa0"))   // not stored
	set(name(ghost), badger.EncodeListSize(ghost, 4096))
	set(badger.ListSizePrefix+"not a cid", badger.EncodeListSize(ghost, 1)) // no CID
	rep, err = r.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"records 12345 bytes", "does not decode", "no chunk list node", "not stored", "holds no CID"} {
		if !slices.ContainsFunc(rep.Problems, func(p string) bool { return strings.Contains(p, w) }) {
			t.Errorf("verify did not report %q: %v", w, rep.Problems)
		}
	}
	if rep.ListSizeProblems != 5 || len(rep.Problems) != 5 {
		t.Fatalf("%d list size problems of %d: %v", rep.ListSizeProblems, len(rep.Problems), rep.Problems)
	}
	if n, err := r.RebuildListSizes(ctx); err != nil || n != len(lists) {
		t.Fatalf("rebuild wrote %d records (%v), want %d", n, err, len(lists))
	}
	rep, err = r.Verify(ctx)
	if err != nil || len(rep.Problems) != 0 || rep.ListSizeRecords != len(lists) {
		t.Fatalf("after rebuild: %d records, problems %v (%v)", rep.ListSizeRecords, rep.Problems, err)
	}
}

// A served store's client cannot write a list size record: a lying one
// would make a reader's diff fail, so only the store writes them, from
// the nodes themselves.
func TestClientCannotWriteListSizes(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := objects.Sum(objects.CodecDagCBOR, []byte("\xa0"))
	if err := r.CheckClientMeta(ctx, badger.ListSizePrefix+string(c.Bytes()), badger.EncodeListSize(c, 4096)); err == nil {
		t.Fatal("a client's list size record was accepted")
	}
}
