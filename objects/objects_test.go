package objects_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
	"github.com/ipld/go-ipld-prime/codec/dagcbor"
	"github.com/ipld/go-ipld-prime/node/basicnode"
)

func TestValueCIDIsSHA256(t *testing.T) {
	content := []byte("You are lumen, an auditor.\n")
	b := objects.NewValue(content)
	if b.CID.Codec() != objects.CodecRaw {
		t.Fatalf("codec %x", b.CID.Codec())
	}
	if b.CID.Digest() != sha256.Sum256(content) {
		t.Fatal("value digest is not sha256(content)")
	}
	if got := b.CID.String(); got[:7] != "bafkrei" {
		t.Fatalf("value CID %s does not start with bafkrei", got)
	}
}

func TestParseCID(t *testing.T) {
	c := objects.NewValue([]byte("x")).CID
	got, err := objects.ParseCID(c.String())
	if err != nil || got != c {
		t.Fatalf("ParseCID(%s) = %v, %v", c, got, err)
	}
	for _, bad := range []string{
		"", "bafy", "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG", // v0
		"bafyreiz", "zzzz",
		"bagaaierasords4njcts6vs7qvdjfcvgnume4hqohf65zsfguprqphs3icwea", // dag-json
	} {
		if _, err := objects.ParseCID(bad); !errors.Is(err, objects.ErrBadCID) {
			t.Errorf("ParseCID(%q) error = %v, want ErrBadCID", bad, err)
		}
	}
}

func TestEmptyBundleHash(t *testing.T) {
	ctx := context.Background()
	bs := memstore.New()
	root := build(t, bs, nil, nil)
	h, err := objects.TreeBundleHash(ctx, bs, root)
	if err != nil {
		t.Fatal(err)
	}
	const want = "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
	if h.String() != want {
		t.Fatalf("empty bundle hash %s, want %s", h, want)
	}
}

// The tiny brain of docs/format.md: its bundle hash, tree and commit vectors.
var tinyBrain = map[string]string{
	"system.md":                  "You are lumen.\n",
	"skills/reentrancy.md":       "# Reentrancy\nCheck external calls.\n",
	"memory/facts.json":          "{}\n",
	"bundle.lock.json":           "{\"bundleHash\":\"ignored\"}\n",
	"receipts.ndjson":            "",
	"patterns/access-control.md": "owner checks\n",
}

const (
	tinyTreeCID   = "bafyreif5wxi37a5p7iiduswsdnqdhgwhfcvmnaxkczjnkggkx5cefxvg24"
	tinyCommitCID = "bafyreih3nbpdei4qnoldn5xmtcrmycgxrcngwiprmur7r2ztx2kb6gtywi"
	tinyBundle    = "0xc1b16f9b77556a6857ed23453310ef2e9dba827ea8fa303d4f2a36f460818719" // also computed by an independent JavaScript (js-sha3) implementation
)

func TestTinyBrainVectors(t *testing.T) {
	ctx := context.Background()
	bs := memstore.New()
	stored := map[string]string{}
	for k, v := range tinyBrain {
		if !objects.IsDerived(k) {
			stored[k] = v
		}
	}
	root := build(t, bs, stored, keysOf(stored))
	if _, err := objects.NewTree(bs).Put(ctx, objects.LockFile, val("x")); !errors.Is(err, objects.ErrBadKey) {
		t.Fatalf("a tree accepted the derived file %s: %v", objects.LockFile, err)
	}
	h, err := objects.TreeBundleHash(ctx, bs, root)
	if err != nil {
		t.Fatal(err)
	}
	// Independent computation of DESIGN §3 straight from the definition.
	hh := objects.NewBundleHasher()
	for _, k := range keysOf(tinyBrain) {
		if err := hh.Add(k, sha256.Sum256([]byte(tinyBrain[k]))); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := hh.Sum()
	if h != want {
		t.Fatalf("tree bundle hash %s != file bundle hash %s", h, want)
	}
	c := &objects.Commit{Tree: root, Time: 1700000000, Message: "seed", Metadata: map[string]string{"agent": "lumen"}}
	cb, err := c.Block()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tree %s commit %s bundle %s", root, cb.CID, h)
	t.Logf("commit bytes %s", hex.EncodeToString(cb.Data))
	if root.String() != tinyTreeCID || cb.CID.String() != tinyCommitCID || h.String() != tinyBundle {
		t.Fatalf("vectors moved: tree %s commit %s bundle %s", root, cb.CID, h)
	}
}

func TestCommitRoundTrip(t *testing.T) {
	tree := objects.EmptyTreeCID
	p1 := objects.Sum(objects.CodecDagCBOR, []byte("p1"))
	p2 := objects.Sum(objects.CodecDagCBOR, []byte("p2"))
	for _, c := range []*objects.Commit{
		{Tree: tree},
		{Tree: tree, Parents: []objects.CID{p1}, Time: 1, Message: "m"},
		{Tree: tree, Parents: []objects.CID{p2, p1}, Time: 1 << 40, Message: "merge ✓", Metadata: map[string]string{"task": "t-1", "a": "", "model": "x"}},
	} {
		data, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := objects.DecodeCommit(data)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := got.Encode()
		if !bytes.Equal(again, data) {
			t.Fatal("commit does not round trip")
		}
		// An independent DAG-CBOR implementation reads it and re-encodes the same bytes.
		crossCheck(t, data)
	}
	if _, err := (&objects.Commit{Tree: tree, Parents: []objects.CID{p1, p1}}).Encode(); err == nil {
		t.Fatal("duplicate parents accepted")
	}
	// Past a few parents the repeat is found by a set: the same answer.
	var many []objects.CID
	for i := range 20 {
		many = append(many, objects.Sum(objects.CodecDagCBOR, []byte{byte(i)}))
	}
	if _, err := (&objects.Commit{Tree: tree, Parents: many}).Encode(); err != nil {
		t.Fatalf("20 distinct parents refused: %v", err)
	}
	if _, err := (&objects.Commit{Tree: tree, Parents: append(many, many[3])}).Encode(); err == nil {
		t.Fatal("a repeated parent among 21 accepted")
	}
	// More metadata keys than the encoder sorts without allocating: still
	// in DAG-CBOR order, and decoded back.
	meta := map[string]string{}
	for i := range 12 {
		meta[strings.Repeat("k", 12-i)+string(rune('a'+i))] = "v"
	}
	big := &objects.Commit{Tree: tree, Time: 3, Message: "m", Metadata: meta}
	data, err := big.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := objects.DecodeCommit(data)
	if err != nil || !maps.Equal(back.Metadata, meta) {
		t.Fatalf("12 metadata keys: %v, %v", err, back)
	}
	crossCheck(t, data)
	if _, err := (&objects.Commit{}).Encode(); err == nil {
		t.Fatal("commit without tree accepted")
	}
	if _, err := (&objects.Commit{Tree: tree, Time: -1}).Encode(); err == nil {
		t.Fatal("negative time accepted")
	}
}

func crossCheck(t *testing.T, data []byte) {
	t.Helper()
	nb := basicnode.Prototype.Any.NewBuilder()
	if err := dagcbor.Decode(nb, bytes.NewReader(data)); err != nil {
		t.Fatalf("go-ipld-prime cannot decode: %v", err)
	}
	var buf bytes.Buffer
	if err := dagcbor.Encode(nb.Build(), &buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), data) {
		t.Fatalf("go-ipld-prime re-encodes differently:\n ours %x\n its  %x", data, buf.Bytes())
	}
}

func TestTreeNodesAreIPLDCanonical(t *testing.T) {
	bs := memstore.New()
	m := map[string]string{}
	for i := range 300 {
		m[keyN(i)] = keyN(i)
	}
	build(t, bs, m, keysOf(m))
	n := 0
	for c := range bs.AllCIDs(context.Background()) {
		if c.Codec() != objects.CodecDagCBOR {
			continue
		}
		data, _ := bs.Get(context.Background(), c)
		crossCheck(t, data)
		n++
	}
	if n < 10 {
		t.Fatalf("only %d tree nodes checked", n)
	}
}

func keyN(i int) string {
	return "skills/" + string(rune('a'+i%26)) + "/" + hex.EncodeToString([]byte{byte(i), byte(i >> 8)}) + ".md"
}

func TestDecodeCommitRejectsNonCanonical(t *testing.T) {
	c := &objects.Commit{Tree: objects.EmptyTreeCID, Message: "x", Metadata: map[string]string{"b": "1", "aa": "2"}}
	data, _ := c.Encode()
	// A non-shortest integer for time: 0x00 -> 0x18 0x00.
	i := bytes.Index(data, []byte("time"))
	bad := append(append(append([]byte{}, data[:i+4]...), 0x18, 0x00), data[i+5:]...)
	if _, err := objects.DecodeCommit(bad); err == nil {
		t.Fatal("non-shortest integer accepted")
	}
	if _, err := objects.DecodeCommit(append(data, 0)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	if _, err := objects.DecodeCommit(data[:len(data)-1]); err == nil {
		t.Fatal("truncated commit accepted")
	}
}

func FuzzDecodeCommit(f *testing.F) {
	c := &objects.Commit{Tree: objects.EmptyTreeCID, Parents: []objects.CID{objects.EmptyTreeCID}, Time: 5, Message: "m", Metadata: map[string]string{"k": "v"}}
	data, _ := c.Encode()
	f.Add(data)
	f.Add([]byte{0xa0})
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := objects.DecodeCommit(data)
		if err != nil {
			return
		}
		again, err := c.Encode()
		if err != nil || !bytes.Equal(again, data) {
			t.Fatalf("decoded commit does not re-encode: %v", err)
		}
	})
}

func FuzzParseCID(f *testing.F) {
	f.Add(objects.NewValue([]byte("x")).CID.String())
	f.Add(objects.EmptyTreeCID.String())
	f.Add("bafy")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := objects.ParseCID(s)
		if err != nil {
			return
		}
		if c2, err := objects.ParseCID(c.String()); err != nil || c2 != c {
			t.Fatalf("round trip of %q failed", s)
		}
	})
}

func FuzzValidateKey(f *testing.F) {
	for _, s := range []string{"skills/a.md", "../x", "/a", "a//b", "a/./b", "ü/ß", "a\x00b",
		".agentstate/MANIFEST", ".AGENTSTATE", "a/.agentstate/x", "bundle.lock.json", "bundle.lock.json/x",
		"receipts.ndjson/y", "a\x1b[2J", "a\nb", "c1\u0085", "\xc2\x9b", "\xff", strings.Repeat("s", 256)} {
		f.Add(s)
	}
	ctx := context.Background()
	val := objects.NewValue([]byte("v")).CID
	f.Fuzz(func(t *testing.T, s string) {
		if objects.ValidateKey(s) != nil {
			return
		}
		if !utf8.ValidString(s) || len(s) > objects.MaxKeyLen || s[0] == '/' || s[len(s)-1] == '/' {
			t.Fatalf("accepted %q", s)
		}
		for _, r := range s {
			if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
				t.Fatalf("accepted %q with control character %U", s, r)
			}
		}
		segs := strings.Split(s, "/")
		for _, seg := range segs {
			if seg == "" || seg == "." || seg == ".." || len(seg) > objects.MaxSegmentLen {
				t.Fatalf("accepted %q", s)
			}
		}
		if strings.EqualFold(segs[0], objects.StoreDirName) {
			t.Fatalf("accepted %q under the store directory", s)
		}
		if len(segs) > 1 && objects.IsDerived(segs[0]) {
			t.Fatalf("accepted %q under a derived file name", s)
		}
		// Round trip: a path on disk and back, and a tree entry and back.
		if back := filepath.ToSlash(filepath.Join(filepath.FromSlash(s))); back != s {
			t.Fatalf("%q becomes path %q", s, back)
		}
		if objects.IsDerived(s) {
			return // valid, but trees do not store derived files
		}
		bs := memstore.New()
		tr := objects.NewTree(bs)
		if _, err := tr.Put(ctx, s, val); err != nil {
			t.Fatalf("Put(%q): %v", s, err)
		}
		root, err := tr.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := objects.LoadTree(ctx, bs, root)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for e, err := range loaded.Entries(ctx, "") {
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, e.Key)
		}
		if len(keys) != 1 || keys[0] != s {
			t.Fatalf("tree round trip of %q gave %q", s, keys)
		}
	})
}
