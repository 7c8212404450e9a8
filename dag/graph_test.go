package dag_test

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
)

// The commit-graph record's test vector (docs/format.md, "Commit graph").
func TestGraphRecordVector(t *testing.T) {
	tree := objects.Sum(objects.CodecDagCBOR, []byte("tree"))
	parent := objects.Sum(objects.CodecDagCBOR, []byte("parent"))
	cm := &objects.Commit{Tree: tree, Parents: []objects.CID{parent}, Time: 1700000000, Message: "put k",
		Metadata: map[string]string{"task": "t-1"}}
	b, err := cm.Block()
	if err != nil {
		t.Fatal(err)
	}
	rec := dag.GraphRecord{Gen: 2, ParentSeqs: []uint64{1}, Commit: b.Data}
	enc := rec.Encode()
	got := hex.EncodeToString(enc)
	const want = "010201018f01a66176016474696d651a6553f1006474726565d82a58250001711220dc9c5edb8b2d479e697b4b0b8ab874f32b325138598ce9e7b759eb8292110622676d65737361676565707574206b67706172656e747381d82a58250001711220e47125968b3b71049fbc4802d1e40a71ea1359decfabacf70b34588037d4ff0c686d65746164617461a1647461736b63742d318e295673"
	if got != want {
		t.Fatalf("record of %s:\n%s\nwant\n%s", b.CID, got, want)
	}
	if n := dag.GraphRecordName(5); n != "cgraph/r/fffffffffffffffa" {
		t.Fatalf("name of record 5: %x", n)
	}
	if seq, ok := dag.GraphRecordSeq(dag.GraphRecordName(5)); !ok || seq != 5 {
		t.Fatalf("seq of name: %d %v", seq, ok)
	}
	dec, err := dag.DecodeGraphRecord(enc)
	if err != nil {
		t.Fatal(err)
	}
	id, dcm, err := dec.Check()
	if err != nil || id != b.CID || dcm.Message != "put k" || dec.Gen != 2 || dec.ParentSeqs[0] != 1 {
		t.Fatalf("decoded %s %+v %+v %v", id, dec, dcm, err)
	}
	// Every truncation and every flipped bit is refused, never a panic.
	for i := range enc {
		if _, err := dag.DecodeGraphRecord(enc[:i]); !errors.Is(err, dag.ErrBadGraphRecord) {
			t.Fatalf("truncated to %d: %v", i, err)
		}
		for bit := range 8 {
			bad := append([]byte(nil), enc...)
			bad[i] ^= 1 << bit
			if _, err := dag.DecodeGraphRecord(bad); !errors.Is(err, dag.ErrBadGraphRecord) {
				t.Fatalf("bit %d of byte %d flipped: %v", bit, i, err)
			}
		}
	}
}

// A record with its tree's bundle hash is version 2: the hash after the
// parent numbers (here keccak256 of nothing, the empty brain's).
func TestGraphRecordVectorBundle(t *testing.T) {
	tree := objects.Sum(objects.CodecDagCBOR, []byte("tree"))
	parent := objects.Sum(objects.CodecDagCBOR, []byte("parent"))
	cm := &objects.Commit{Tree: tree, Parents: []objects.CID{parent}, Time: 1700000000, Message: "put k",
		Metadata: map[string]string{"task": "t-1"}}
	b, err := cm.Block()
	if err != nil {
		t.Fatal(err)
	}
	h, err := objects.NewBundleHasher().Sum()
	if err != nil {
		t.Fatal(err)
	}
	rec := dag.GraphRecord{Gen: 2, ParentSeqs: []uint64{1}, Commit: b.Data, Bundle: &h}
	enc := rec.Encode()
	got := hex.EncodeToString(enc)
	const want = "020201" + "01" + "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470" + "8f01a66176016474696d651a6553f1006474726565d82a58250001711220dc9c5edb8b2d479e697b4b0b8ab874f32b325138598ce9e7b759eb8292110622676d65737361676565707574206b67706172656e747381d82a58250001711220e47125968b3b71049fbc4802d1e40a71ea1359decfabacf70b34588037d4ff0c686d65746164617461a1647461736b63742d31" + "0e02add6"
	if got != want {
		t.Fatalf("record:\n%s\nwant\n%s", got, want)
	}
	dec, err := dag.DecodeGraphRecord(enc)
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := dec.Check()
	if err != nil || id != b.CID || dec.Bundle == nil || *dec.Bundle != h || dec.Gen != 2 || dec.ParentSeqs[0] != 1 {
		t.Fatalf("decoded %s %+v %v", id, dec, err)
	}
	// Every truncation and every flipped bit is refused, never a panic.
	for i := range enc {
		if _, err := dag.DecodeGraphRecord(enc[:i]); !errors.Is(err, dag.ErrBadGraphRecord) {
			t.Fatalf("truncated to %d: %v", i, err)
		}
		for bit := range 8 {
			bad := append([]byte(nil), enc...)
			bad[i] ^= 1 << bit
			if _, err := dag.DecodeGraphRecord(bad); !errors.Is(err, dag.ErrBadGraphRecord) {
				t.Fatalf("bit %d of byte %d flipped: %v", bit, i, err)
			}
		}
	}
}

// A record's name holds its number in one spelling only: sixteen
// lower-case hexadecimal digits.
func TestGraphRecordSeqSpelling(t *testing.T) {
	for _, seq := range []uint64{0, 1, 5, 1 << 40, ^uint64(0)} {
		if got, ok := dag.GraphRecordSeq(dag.GraphRecordName(seq)); !ok || got != seq {
			t.Fatalf("record %d: %d %v", seq, got, ok)
		}
	}
	for _, name := range []string{"cgraph/r/FFFFFFFFFFFFFFFA", "cgraph/r/+ffffffffffffffa", "cgraph/r/fffffffffffffffa0",
		"cgraph/r/ffffffffffffff", "cgraph/r/0x fffffffffffff", "cgraph/i/fffffffffffffffa", "cgraph/r/fffffffffffffffg"} {
		if seq, ok := dag.GraphRecordSeq(name); ok {
			t.Errorf("%q read as record %d", name, seq)
		}
	}
}
