package objects_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

func randBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	rand.NewChaCha8(key).Read(b)
	return b
}

// fakeSQLite returns content that looks like an SQLite database of pages pages.
func fakeSQLite(pages, pageSize int, seed uint64) []byte {
	b := randBytes(pages*pageSize, seed)
	copy(b, "SQLite format 3\x00")
	binary.BigEndian.PutUint16(b[16:18], uint16(pageSize))
	return b
}

func storeAll(t testing.TB, bs *memstore.Store, blocks []objects.Block) {
	t.Helper()
	if err := bs.Put(context.Background(), blocks...); err != nil {
		t.Fatal(err)
	}
}

func TestNewFileValueSmallIsRaw(t *testing.T) {
	for _, n := range []int{0, 1, objects.ChunkThreshold} {
		content := randBytes(n, 1)
		c, blocks := objects.NewFileValue(content)
		if c != objects.NewValue(content).CID || len(blocks) != 1 {
			t.Fatalf("%d bytes: got %s with %d blocks, want the raw value", n, c, len(blocks))
		}
	}
}

func TestChunkedRoundTrip(t *testing.T) {
	ctx := context.Background()
	for name, content := range map[string][]byte{
		"cdc":    randBytes(5<<20+123, 2),
		"sqlite": fakeSQLite(1200, 4096, 3),
		"zeros":  make([]byte, 3<<20), // every chunk identical: boundaries at the maximum
	} {
		t.Run(name, func(t *testing.T) {
			bs := memstore.New()
			c, blocks := objects.NewFileValue(content)
			if c.Codec() != objects.CodecDagCBOR || blocks[len(blocks)-1].CID != c {
				t.Fatalf("root %s is not a dag-cbor node stored last", c)
			}
			storeAll(t, bs, blocks)
			got, err := objects.ReadValue(ctx, bs, c)
			if err != nil || !bytes.Equal(got, content) {
				t.Fatalf("ReadValue: %d bytes, err %v; want the %d bytes written", len(got), err, len(content))
			}
			sum, err := objects.ContentSHA256(ctx, bs, c)
			if err != nil || sum != sha256.Sum256(content) {
				t.Fatalf("ContentSHA256 = %x, %v", sum, err)
			}
			size, err := objects.ContentSize(ctx, bs, c)
			if err != nil || size != uint64(len(content)) {
				t.Fatalf("ContentSize = %d, %v", size, err)
			}
			for _, b := range blocks {
				if b.CID.Codec() == objects.CodecDagCBOR {
					if len(b.Data) > 64*45 {
						t.Errorf("node %s is %d bytes", b.CID, len(b.Data))
					}
					if _, err := objects.DecodeChunkNode(b.Data); err != nil {
						t.Errorf("node %s: %v", b.CID, err)
					}
				}
			}
		})
	}
}

func TestSQLiteChunksArePages(t *testing.T) {
	content := fakeSQLite(1000, 4096, 4)
	if objects.SQLitePageSize(content) != 4096 {
		t.Fatal("page size not detected")
	}
	_, blocks := objects.NewFileValue(content)
	raw := 0
	for _, b := range blocks {
		if b.CID.Codec() == objects.CodecRaw {
			if len(b.Data) != 4096 {
				t.Fatalf("chunk of %d bytes, want 4096", len(b.Data))
			}
			raw++
		}
	}
	if raw != 1000 {
		t.Fatalf("%d chunks, want 1000", raw)
	}
	// Not a whole number of pages: content-defined chunks instead.
	if objects.SQLitePageSize(content[:len(content)-1]) != 0 {
		t.Fatal("truncated database still detected as page-aligned")
	}
}

// newBlocks counts the blocks of b that a does not have.
func newBlocks(a, b []objects.Block) (n, bytes int) {
	have := map[objects.CID]bool{}
	for _, x := range a {
		have[x.CID] = true
	}
	for _, x := range b {
		if !have[x.CID] {
			n++
			bytes += len(x.Data)
		}
	}
	return n, bytes
}

func TestChunkingIsLocal(t *testing.T) {
	// One changed page of an SQLite file: one new chunk plus the nodes above it.
	db := fakeSQLite(16384, 4096, 5)
	_, before := objects.NewFileValue(db)
	db2 := bytes.Clone(db)
	db2[4096*7000+17] ^= 1
	_, after := objects.NewFileValue(db2)
	if n, size := newBlocks(before, after); n > 6 || size > 4096+5*64*45 {
		t.Fatalf("one changed page wrote %d new blocks (%d bytes)", n, size)
	}
	// Bytes inserted into the middle of other content: chunks before and
	// after the edit are shared.
	content := randBytes(8<<20, 6)
	_, before = objects.NewFileValue(content)
	edited := append(append(bytes.Clone(content[:3<<20]), "inserted text"...), content[3<<20:]...)
	_, after = objects.NewFileValue(edited)
	if _, size := newBlocks(before, after); size > 1<<20 {
		t.Fatalf("a 13-byte insertion wrote %d new bytes", size)
	}
}

func TestChunkedBundleHashUnchanged(t *testing.T) {
	ctx := context.Background()
	content := fakeSQLite(600, 4096, 7)
	bs := memstore.New()
	c, blocks := objects.NewFileValue(content)
	storeAll(t, bs, blocks)
	raw := objects.NewValue(content)
	storeAll(t, bs, []objects.Block{raw})
	hash := func(v objects.CID) objects.BundleHash {
		tr := objects.NewTree(bs)
		if _, err := tr.Put(ctx, "memory.db", v); err != nil {
			t.Fatal(err)
		}
		root, err := tr.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		h, err := objects.TreeBundleHash(ctx, bs, root)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if hash(c) != hash(raw.CID) {
		t.Fatal("chunked and raw forms of the same content give different bundle hashes")
	}
}

// The frozen format: a fixed input's chunked CID. Changing any chunking
// parameter moves it; that is a format change (docs/performance.md).
func TestChunkedVector(t *testing.T) {
	c, blocks := objects.NewFileValue(randBytes(3<<20, 42))
	const want = "bafyreiartxwss6rinixva7iyh23qky3prmvzhseay7z367qfcldgv6ojri"
	if c.String() != want {
		t.Fatalf("chunked value CID %s (%d blocks), want %s", c, len(blocks), want)
	}
	d, _ := objects.NewFileValue(fakeSQLite(2000, 4096, 43))
	const wantDB = "bafyreihzmt5qvcz63f2cublm6fq4za47mvrdeifba72rh5qglzfidyhday"
	if d.String() != wantDB {
		t.Fatalf("chunked SQLite CID %s, want %s", d, wantDB)
	}
}

func TestChunkedCorruption(t *testing.T) {
	ctx := context.Background()
	content := randBytes(3<<20, 8)
	c, blocks := objects.NewFileValue(content)

	t.Run("missing chunk", func(t *testing.T) {
		bs := memstore.New()
		storeAll(t, bs, blocks[1:])
		if _, err := objects.ReadValue(ctx, bs, c); !errors.Is(err, objects.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
	t.Run("lying size", func(t *testing.T) {
		bs := memstore.New()
		storeAll(t, bs, blocks)
		cn, err := objects.DecodeChunkNode(blocks[len(blocks)-1].Data)
		if err != nil {
			t.Fatal(err)
		}
		// A file node claiming one byte more than its chunks hold.
		forged := objects.EncodeChunkNodeForTest(cn.Chunks, cn.Size+1, cn.SHA256)
		fb := objects.Block{CID: objects.Sum(objects.CodecDagCBOR, forged), Data: forged}
		storeAll(t, bs, []objects.Block{fb})
		if _, err := objects.ReadValue(ctx, bs, fb.CID); !errors.Is(err, objects.ErrBadObject) {
			t.Fatalf("err = %v, want ErrBadObject", err)
		}
		// And one whose sha256 is wrong.
		bad := bytes.Clone(cn.SHA256)
		bad[0] ^= 1
		forged = objects.EncodeChunkNodeForTest(cn.Chunks, cn.Size, bad)
		fb = objects.Block{CID: objects.Sum(objects.CodecDagCBOR, forged), Data: forged}
		storeAll(t, bs, []objects.Block{fb})
		if _, err := objects.ReadValue(ctx, bs, fb.CID); !errors.Is(err, objects.ErrHashMismatch) {
			t.Fatalf("err = %v, want ErrHashMismatch", err)
		}
	})
	t.Run("list node as value", func(t *testing.T) {
		bs := memstore.New()
		content := fakeSQLite(16384, 4096, 9) // deep enough to have list nodes
		c, blocks := objects.NewFileValue(content)
		storeAll(t, bs, blocks)
		var list objects.CID
		for _, b := range blocks {
			if b.CID.Codec() == objects.CodecDagCBOR && b.CID != c {
				list = b.CID
				break
			}
		}
		if list.IsZero() {
			t.Fatal("no list node")
		}
		if _, err := objects.ContentSHA256(ctx, bs, list); !errors.Is(err, objects.ErrBadObject) {
			t.Fatalf("err = %v, want ErrBadObject", err)
		}
	})
}

func TestDecodeChunkNodeStrict(t *testing.T) {
	_, blocks := objects.NewFileValue(randBytes(2<<20, 10))
	good := blocks[len(blocks)-1].Data
	if _, err := objects.DecodeChunkNode(good); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"empty":     nil,
		"truncated": good[:len(good)-1],
		"trailing":  append(bytes.Clone(good), 0),
		"long size": append([]byte{0xa3, 0x64, 's', 'i', 'z', 'e', 0x18, 0x05}, good[7:]...), // size 5 in two bytes
		"no chunks": {0xa2, 0x64, 's', 'i', 'z', 'e', 0x00, 0x66, 'c', 'h', 'u', 'n', 'k', 's', 0x80},
		"short sum": append(bytes.Clone(good[:len(good)-34]), 0x58, 0x1f),
	} {
		if _, err := objects.DecodeChunkNode(data); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func FuzzDecodeChunkNode(f *testing.F) {
	for _, content := range [][]byte{randBytes(2<<20, 11), fakeSQLite(20000, 4096, 12)} {
		_, blocks := objects.NewFileValue(content)
		for _, b := range blocks {
			if b.CID.Codec() == objects.CodecDagCBOR {
				f.Add(b.Data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cn, err := objects.DecodeChunkNode(data)
		if err != nil {
			return
		}
		if again := objects.EncodeChunkNodeForTest(cn.Chunks, cn.Size, cn.SHA256); !bytes.Equal(again, data) {
			t.Fatalf("accepted bytes that do not re-encode to themselves")
		}
	})
}
