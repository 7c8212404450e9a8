package objects

import "testing"

// BenchmarkDecodeCommit decodes a commit as a log walk does, one per
// commit: a task's commit with one parent and its task metadata.
func BenchmarkDecodeCommit(b *testing.B) {
	c := &Commit{
		Tree:     Sum(CodecDagCBOR, []byte("tree")),
		Parents:  []CID{Sum(CodecDagCBOR, []byte("parent"))},
		Time:     1_700_000_000,
		Message:  "put memory/099/000999",
		Metadata: map[string]string{"task": "t-000999", "attempt": "1"},
	}
	data, err := c.Encode()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeCommit(data); err != nil {
			b.Fatal(err)
		}
	}
}
