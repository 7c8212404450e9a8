package export

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

func manyEntries(n int) *statCache {
	c := &statCache{start: 1_700_000_000_000_000_000}
	for i := range n {
		v, _ := objects.NewFileValue([]byte(fmt.Sprint(i)))
		c.entries = append(c.entries, statEntry{key: fmt.Sprintf("notes-%03d/note-%03d.md", i/100, i%100), value: v,
			stat: fileStat{size: 1024, mtime: c.start - 5e9 + int64(i), ctime: c.start - 4e9 + int64(i), ino: 1e6 + uint64(i), dev: 2049}})
	}
	c.tree = c.entries[0].value
	return c
}

// Reading a record costs a few allocations whatever its size (keys and
// CIDs are substrings of one copy of the record), not two per entry: a
// 10k-file brain's record is read on every commit.
func TestStatCacheDecodeAllocations(t *testing.T) {
	data := manyEntries(2000).encode()
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := decodeStatCache(data, false); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 8 {
		t.Fatalf("decoding a 2000-entry record made %.0f allocations, want a few", allocs)
	}
}

// The strings a decoded record holds are its own copy: changing the bytes
// it was read from changes nothing in it.
func TestStatCacheDecodeDoesNotAlias(t *testing.T) {
	data := manyEntries(3).encode()
	c, err := decodeStatCache(data, false)
	if err != nil {
		t.Fatal(err)
	}
	want := c.entry(1)
	for i := range data {
		data[i] = 'x'
	}
	if c.entry(1) != want || want.value.Codec() != objects.CodecRaw {
		t.Fatalf("decoded record changed with its input: %+v", c.entry(1))
	}
}

// An entry carried over unchanged is written back as the bytes it was read
// as, and those are exactly what encoding its fields gives: a record
// written after a commit that changed one file reads back as the same
// entries as one encoded from scratch, with the changed file's new stat.
func TestStatCacheCarriedEntriesAsEncoded(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for i := range 50 {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i/10), fmt.Sprintf("f%02d.md", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprint("file ", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bs, cache := memstore.New(), &MemMeta{}
	opts := ImportOptions{Cache: cache, RacyWindow: 1}
	if _, err := ImportDir(ctx, bs, dir, opts); err != nil {
		t.Fatal(err)
	}
	changed := filepath.Join(dir, "d03", "f31.md")
	if err := os.WriteFile(changed, []byte("changed, and longer than before"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := ImportDir(ctx, bs, dir, opts)
	if err != nil || res.Read != 1 {
		t.Fatalf("second import read %d (%v), want 1", res.Read, err)
	}
	abs, _ := filepath.Abs(dir)
	data, ok, _ := cache.GetMeta(statCacheName(abs))
	c, err := decodeStatCache(data, false)
	if !ok || err != nil {
		t.Fatalf("record: %v %v", ok, err)
	}
	scratch := &statCache{tree: c.tree, start: c.start}
	for i := range c.len() {
		scratch.entries = append(scratch.entries, c.entry(i))
	}
	if !bytes.Equal(scratch.encode(), data) {
		t.Fatal("the record written with carried entries differs from the same entries encoded")
	}
	e, ok := c.lookup("d03/f31.md")
	fi, _ := os.Lstat(changed)
	if !ok || e.stat != fileStatOf(fi) || e.value != fresh(t, changed) {
		t.Fatalf("changed file's entry %+v, want its new stat and value", e)
	}
	if res.Tree != c.tree {
		t.Fatal("record names another tree")
	}
}

func fresh(t *testing.T, p string) objects.CID {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := objects.NewFileValue(b)
	return v
}

// The record's reader takes varints exactly as encoding/binary does: the
// same values, lengths and refusals (records written before read the same).
func TestCacheReaderVarintsAsBinary(t *testing.T) {
	var inputs [][]byte
	for _, v := range []uint64{0, 1, 127, 128, 300, 1 << 35, 1<<63 - 1, 1 << 63, ^uint64(0)} {
		inputs = append(inputs, binary.AppendUvarint(nil, v))
	}
	inputs = append(inputs, nil, []byte{0x80}, []byte{0x80, 0x00}, bytes.Repeat([]byte{0xff}, 10),
		append(bytes.Repeat([]byte{0xff}, 9), 0x01), append(bytes.Repeat([]byte{0xff}, 9), 0x02),
		append(bytes.Repeat([]byte{0x80}, 10), 0x00))
	for i := range 2000 {
		b := binary.AppendUvarint(nil, uint64(i)*0x9e3779b97f4a7c15)
		inputs = append(inputs, b, b[:len(b)-1])
	}
	for _, in := range inputs {
		wv, wn := binary.Uvarint(in)
		r := cacheReader{s: string(in)}
		gv := r.uvarint()
		if ok := wn > 0; ok != (r.err == nil) || (ok && (gv != wv || r.off != wn)) {
			t.Fatalf("%x: uvarint %d at %d (%v), binary %d %d", in, gv, r.off, r.err, wv, wn)
		}
		sv, sn := binary.Varint(in)
		r = cacheReader{s: string(in)}
		if g := r.varint(); (sn > 0) != (r.err == nil) || (sn > 0 && (g != sv || r.off != sn)) {
			t.Fatalf("%x: varint %d (%v), binary %d %d", in, g, r.err, sv, sn)
		}
	}
}
