package snapshot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/export/tarball"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/walrus"
	"github.com/agentstate/agentstate/walrus/httpstore"
	"github.com/agentstate/agentstate/walrus/localstore"
	"github.com/agentstate/agentstate/walrus/walrustest"
	car "github.com/ipld/go-car/v2"
	"github.com/ipld/go-ipld-prime/codec/dagcbor"
	"github.com/ipld/go-ipld-prime/datamodel"
	cidlink "github.com/ipld/go-ipld-prime/linking/cid"
	"github.com/ipld/go-ipld-prime/node/basicnode"
)

var brain = map[string]string{
	"system.md":             "You are lumen.\n",
	"skills/reentrancy.md":  "# Reentrancy\n",
	"skills/access.md":      "# Access\n",
	"memory/facts.json":     "{}\n",
	"patterns/" + long(120): "a long path needs a PAX record\n",
	"memory/big.bin":        string(bytes.Repeat([]byte("0123456789abcdef"), 70000)),
}

func long(n int) string { return string(bytes.Repeat([]byte("p"), n)) + ".md" }

func newRepo(t *testing.T) *repo.Repo {
	t.Helper()
	r, err := repo.Init(filepath.Join(t.TempDir(), "store"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// commitBrain commits files in the given key order through single-key edits.
func commitBrain(t *testing.T, r *repo.Repo, agent string, files map[string]string, order []string) objects.CID {
	t.Helper()
	ctx := context.Background()
	tr := objects.NewTree(r.Blocks)
	for _, k := range order {
		v, blocks := objects.NewFileValue([]byte(files[k]))
		if err := r.Blocks.Put(ctx, blocks...); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	root, err := tr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: agent, Tree: root, Message: "seed"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func keys(m map[string]string, reverse bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if (ks[j] < ks[i]) != reverse {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

func exportTar(t *testing.T, r *repo.Repo, commit objects.CID) []byte {
	t.Helper()
	cm, err := r.Commit(context.Background(), commit)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := snapshot.WriteTar(context.Background(), &buf, r.Blocks, cm.Tree, mustBundle(t, r, cm.Tree), nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestTarDependsOnlyOnTree(t *testing.T) {
	r1, r2 := newRepo(t), newRepo(t)
	r2.Now = func() int64 { return 12345 }
	c1 := commitBrain(t, r1, "a", brain, keys(brain, false))
	c2 := commitBrain(t, r2, "b", brain, keys(brain, true))
	if c1 == c2 {
		t.Fatal("commits at different times should differ")
	}
	t1, t2 := exportTar(t, r1, c1), exportTar(t, r2, c2)
	if !bytes.Equal(t1, t2) {
		t.Fatal("the same content exports to different tars")
	}
	// The tar reads back to the same tree, and its lock states the lineage.
	imp, err := snapshot.ReadTar(context.Background(), bytes.NewReader(t1), newRepo(t).Blocks, false)
	if err != nil {
		t.Fatal(err)
	}
	cm, _ := r1.Commit(context.Background(), c1)
	if imp.Tree != cm.Tree {
		t.Fatalf("tar imports as tree %s, want %s", imp.Tree, cm.Tree)
	}
	if err := imp.CheckLineage(nil); err != nil {
		t.Fatal(err)
	}
	h, _ := r1.BundleHash(context.Background(), cm.Tree)
	if imp.Lock.BundleHash != h.String() {
		t.Fatalf("lock claims %s, commit hashes to %s", imp.Lock.BundleHash, h)
	}
}

func TestCheckLineageRefusesForgedLock(t *testing.T) {
	ctx := context.Background()
	lock := snapshot.Lock{BundleHash: "0x" + fmt.Sprintf("%064x", 1), Version: 1}.Encode()
	var buf bytes.Buffer
	files := func(yield func(tarball.File, error) bool) {
		for _, f := range []struct{ p, c string }{{"bundle.lock.json", string(lock)}, {"system.md", "evil\n"}} {
			c := f.c
			if !yield(tarball.File{Path: f.p, Size: int64(len(c)), Open: func(context.Context) (io.ReadCloser, error) {
				return io.NopCloser(bytes.NewReader([]byte(c))), nil
			}}, nil) {
				return
			}
		}
	}
	if _, err := tarball.Write(ctx, &buf, files, tarball.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	imp, err := snapshot.ReadTar(ctx, &buf, newRepo(t).Blocks, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := imp.CheckLineage(nil); !errors.Is(err, snapshot.ErrLineageMismatch) {
		t.Fatalf("forged lock: %v", err)
	}
}

// TestCARReadByGoCar walks our CAR with go-car and go-ipld-prime: every
// block's CID recomputes, every link resolves, starting from the root.
func TestCARReadByGoCar(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	c1 := commitBrain(t, r, "a", brain, keys(brain, false))
	// A second commit so history is included.
	tr, _ := r.Tree(ctx, c1)
	v := objects.NewValue([]byte("new"))
	r.Blocks.Put(ctx, v)
	tr.Put(ctx, "skills/new.md", v.CID)
	root, _ := tr.Commit(ctx)
	c2, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: root, Message: "two"})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := snapshot.WriteCAR(ctx, &buf, r.Blocks, c2)
	if err != nil {
		t.Fatal(err)
	}
	br, err := car.NewBlockReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(br.Roots) != 1 || br.Roots[0].KeyString() != c2.KeyString() {
		t.Fatalf("roots %v, want [%s]", br.Roots, c2)
	}
	blocks := map[string][]byte{}
	for {
		b, err := br.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sum, err := b.Cid().Prefix().Sum(b.RawData())
		if err != nil || !sum.Equals(b.Cid()) {
			t.Fatalf("block %s does not hash to its CID", b.Cid())
		}
		blocks[b.Cid().KeyString()] = b.RawData()
	}
	if len(blocks) != st.Blocks {
		t.Fatalf("go-car read %d blocks, we wrote %d", len(blocks), st.Blocks)
	}
	// Walk every link from the root with go-ipld-prime's decoder.
	seen := 0
	var walk func(n datamodel.Node)
	var visit func(key string)
	visit = func(key string) {
		data, ok := blocks[key]
		if !ok {
			t.Fatalf("link to a block missing from the CAR")
		}
		seen++
		if data == nil {
			return
		}
		c, _ := objects.CIDFromBytes([]byte(key))
		if c.Codec() != objects.CodecDagCBOR {
			return
		}
		nb := basicnode.Prototype.Any.NewBuilder()
		if err := dagcbor.Decode(nb, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		blocks[key] = nil
		walk(nb.Build())
	}
	walk = func(n datamodel.Node) {
		switch n.Kind() {
		case datamodel.Kind_Link:
			l, _ := n.AsLink()
			visit(l.(cidlink.Link).Cid.KeyString())
		case datamodel.Kind_Map:
			it := n.MapIterator()
			for !it.Done() {
				_, v, _ := it.Next()
				walk(v)
			}
		case datamodel.Kind_List:
			it := n.ListIterator()
			for !it.Done() {
				_, v, _ := it.Next()
				walk(v)
			}
		}
	}
	visit(c2.KeyString())
	if len(blocks) < 10 {
		t.Fatalf("only %d blocks", len(blocks))
	}
	for k, v := range blocks {
		if v != nil {
			c, _ := objects.CIDFromBytes([]byte(k))
			if c.Codec() == objects.CodecDagCBOR {
				t.Fatalf("dag-cbor block %s not reached from the root", c)
			}
		}
	}
}

func testKey(t *testing.T) envelope.Cipher {
	var k envelope.Key
	for i := range k {
		k[i] = byte(i)
	}
	c, err := envelope.NewAESGCM(k, envelope.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func pipelines(t *testing.T) map[string]func(r *repo.Repo) walrus.Store {
	blobDir := t.TempDir()
	srv := walrustest.NewServer(t, walrustest.WithMaxBlobSize(512<<10))
	return map[string]func(r *repo.Repo) walrus.Store{
		"localstore": func(*repo.Repo) walrus.Store {
			s, err := localstore.Open(blobDir)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		"walrus-http": func(*repo.Repo) walrus.Store {
			c, err := httpstore.New(srv.URL, srv.URL, httpstore.WithHTTPClient(srv.Client()), httpstore.WithPartSize(400<<10), httpstore.WithRetry(5, 1, 10))
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
	}
}

// TestAmnesia pushes a brain, throws the store away, and restores it into a
// fresh store from the pointer alone.
func TestAmnesia(t *testing.T) {
	for name, blobs := range pipelines(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			ptr := snapshot.FilePointer{Dir: t.TempDir()}
			r1 := newRepo(t)
			c1 := commitBrain(t, r1, "lumen", brain, keys(brain, false))
			r1.Tape.Append(ctx, "lumen", []byte(`{"task":"t-1"}`), []byte(`{"task":"t-2"}`))
			p1 := &snapshot.Pipeline{Repo: r1, Cipher: testKey(t), Blobs: blobs(r1), Pointer: ptr}
			rec, err := p1.Push(ctx, "lumen", c1)
			if err != nil {
				t.Fatal(err)
			}
			// Pushing the same commit again gives the same blob (deterministic envelope).
			rec2, err := p1.Push(ctx, "lumen", c1)
			if err != nil || rec2.BlobID != rec.BlobID {
				t.Fatalf("re-push: %v, blob %s vs %s", err, rec2.BlobID, rec.BlobID)
			}
			r2 := newRepo(t) // the wiped operator
			p2 := &snapshot.Pipeline{Repo: r2, Cipher: testKey(t), Blobs: blobs(r2), Pointer: ptr}
			got, err := p2.Restore(ctx, "lumen", snapshot.RestoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cm1, _ := r1.Commit(ctx, c1)
			if got.Tree != cm1.Tree || got.BundleHash != rec.BundleHash {
				t.Fatalf("restored tree %s bundle %s, want %s %s", got.Tree, got.BundleHash, cm1.Tree, rec.BundleHash)
			}
			if got.Receipts != 2 {
				t.Fatalf("%d receipts re-ingested, want 2", got.Receipts)
			}
			nd, _ := r2.Tape.NDJSON(ctx, "lumen")
			if string(nd) != "{\"task\":\"t-1\"}\n{\"task\":\"t-2\"}\n" {
				t.Fatalf("tape after restore %q", nd)
			}
			h, _ := r2.Refs.Head(ctx, "lumen")
			if h.Commit != got.Commit {
				t.Fatal("HEAD is not at the restored commit")
			}
			rep, err := r2.Verify(ctx)
			if err != nil || len(rep.Problems) > 0 {
				t.Fatalf("verify after restore: %v %v", err, rep.Problems)
			}
			// Restoring again changes nothing.
			again, err := p2.Restore(ctx, "lumen", snapshot.RestoreOptions{})
			if err != nil || again.Commit != got.Commit || again.Receipts != 0 {
				t.Fatalf("second restore: %+v %v", again, err)
			}
		})
	}
}

func TestRestoreRefusals(t *testing.T) {
	ctx := context.Background()
	blobDir := t.TempDir()
	ls, _ := localstore.Open(blobDir)
	r := newRepo(t)
	c1 := commitBrain(t, r, "lumen", brain, keys(brain, false))
	ptr := snapshot.FilePointer{Dir: t.TempDir()}
	p := &snapshot.Pipeline{Repo: r, Cipher: testKey(t), Blobs: ls, Pointer: ptr}
	if _, err := p.Push(ctx, "lumen", c1); err != nil {
		t.Fatal(err)
	}
	// Wrong key: refused, nothing changes.
	other, _ := envelope.GenerateKey(nil)
	oc, _ := envelope.NewAESGCM(other, envelope.Options{})
	r2 := newRepo(t)
	bad := &snapshot.Pipeline{Repo: r2, Cipher: oc, Blobs: ls, Pointer: ptr}
	if _, err := bad.Restore(ctx, "lumen", snapshot.RestoreOptions{}); !errors.Is(err, envelope.ErrWrongKey) {
		t.Fatalf("wrong key: %v", err)
	}
	if ok, _ := r2.Refs.Exists(ctx, "lumen"); ok {
		t.Fatal("a failed restore created the agent")
	}
	// A blob whose content does not match the lineage it claims is refused.
	var tarBuf bytes.Buffer
	lock := snapshot.Lock{BundleHash: "0x" + fmt.Sprintf("%064x", 7), Version: 1}.Encode()
	files := func(yield func(tarball.File, error) bool) {
		yield(tarball.File{Path: "bundle.lock.json", Size: int64(len(lock)), Open: func(context.Context) (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(lock)), nil
		}}, nil)
	}
	tarball.Write(ctx, &tarBuf, files, tarball.WriteOptions{})
	var sealed bytes.Buffer
	if err := testKey(t).Encrypt(ctx, &sealed, bytes.NewReader(tarBuf.Bytes()), sha256.Sum256(tarBuf.Bytes())); err != nil {
		t.Fatal(err)
	}
	st, err := ls.Put(ctx, bytes.NewReader(sealed.Bytes()), int64(sealed.Len()), walrus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good := &snapshot.Pipeline{Repo: r2, Cipher: testKey(t), Blobs: ls, Pointer: ptr}
	if _, err := good.Restore(ctx, "lumen", snapshot.RestoreOptions{BlobID: st.BlobID}); !errors.Is(err, snapshot.ErrLineageMismatch) {
		t.Fatalf("forged lineage: %v", err)
	}
	// An expected bundle hash that differs is refused too.
	want := objects.BundleHash{1}
	if _, err := good.Restore(ctx, "lumen", snapshot.RestoreOptions{Expect: &want}); !errors.Is(err, snapshot.ErrLineageMismatch) {
		t.Fatalf("unexpected bundle: %v", err)
	}
	if ok, _ := r2.Refs.Exists(ctx, "lumen"); ok {
		t.Fatal("a refused restore created the agent")
	}
	// No pointer.
	if _, err := good.Restore(ctx, "ghost", snapshot.RestoreOptions{}); !errors.Is(err, snapshot.ErrNoPointer) {
		t.Fatalf("missing pointer: %v", err)
	}
}

type refusingStore struct{ walrus.Store }

func (refusingStore) Put(ctx context.Context, r io.Reader, size int64, opts walrus.StoreOptions) (walrus.Stored, error) {
	return walrus.Stored{}, fmt.Errorf("refused: %w", walrus.ErrUnavailable)
}

func TestFailedPushIsRecorded(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	c := commitBrain(t, r, "lumen", brain, keys(brain, false))
	p := &snapshot.Pipeline{Repo: r, Cipher: testKey(t), Blobs: refusingStore{}, Pointer: snapshot.FilePointer{Dir: t.TempDir()}}
	if _, err := p.Push(ctx, "lumen", c); !errors.Is(err, walrus.ErrUnavailable) {
		t.Fatalf("push to a refusing store: %v", err)
	}
	recs, err := snapshot.Records(ctx, r, "lumen")
	if err != nil || len(recs) != 1 || recs[0].Error == "" || recs[0].Commit != c {
		t.Fatalf("records after a failed push: %+v %v", recs, err)
	}
}

func mustBundle(t *testing.T, r *repo.Repo, tree objects.CID) objects.BundleHash {
	t.Helper()
	h, err := r.BundleHash(context.Background(), tree)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
