package dag_test

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"slices"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
)

// A commit-graph record is read from the store's files, which anyone with
// the directory can write: DecodeGraphRecord must reject what is not a
// record with ErrBadGraphRecord, never panic, and what it accepts must
// encode again to a record that decodes to the same fields. The fuzzer
// writes the record's body; the checksum is appended for it (a checksum
// the fuzzer would almost never guess), and the bytes are also tried as
// they are.
func FuzzDecodeGraphRecord(f *testing.F) {
	tree := objects.Sum(objects.CodecDagCBOR, []byte("tree"))
	cm := &objects.Commit{Tree: tree, Time: 1700000000, Message: "put k"}
	b, err := cm.Block()
	if err != nil {
		f.Fatal(err)
	}
	h, err := objects.NewBundleHasher().Sum()
	if err != nil {
		f.Fatal(err)
	}
	for _, rec := range []dag.GraphRecord{
		{Gen: 1, Commit: b.Data},
		{Gen: 2, ParentSeqs: []uint64{1, 0}, Commit: b.Data, Bundle: &h},
	} {
		enc := rec.Encode()
		f.Add(enc[:len(enc)-4])
	}
	f.Add([]byte{2, 1, 0})
	table := crc32.MakeTable(crc32.Castagnoli)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, v := range [][]byte{body, binary.BigEndian.AppendUint32(slices.Clone(body), crc32.Checksum(body, table))} {
			g, err := dag.DecodeGraphRecord(v)
			if err != nil {
				if !errors.Is(err, dag.ErrBadGraphRecord) {
					t.Fatalf("%x: error %v is not ErrBadGraphRecord", v, err)
				}
				continue
			}
			again, err := dag.DecodeGraphRecord(g.Encode())
			if err != nil {
				t.Fatalf("%x decoded, but its encoding does not: %v", v, err)
			}
			if again.Gen != g.Gen || !slices.Equal(again.ParentSeqs, g.ParentSeqs) || string(again.Commit) != string(g.Commit) ||
				(again.Bundle == nil) != (g.Bundle == nil) || (g.Bundle != nil && *again.Bundle != *g.Bundle) {
				t.Fatalf("%x: %+v encodes to %+v", v, g, again)
			}
			g.Check() // the commit inside: an error, never a panic
		}
	})
}
