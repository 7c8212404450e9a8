package inspect_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
)

// readCounter counts the blocks read through it and their bytes: value
// bytes (raw chunks, a small value's one block) apart from the rest (tree,
// commit and file nodes).
type readCounter struct {
	objects.BlockStore
	reads, valueBytes, otherBytes int64
}

func (s *readCounter) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	data, err := s.BlockStore.Get(ctx, c)
	s.reads++
	if c.Codec() == objects.CodecRaw {
		s.valueBytes += int64(len(data))
	} else {
		s.otherBytes += int64(len(data))
	}
	return data, err
}

// twoVersions is a store whose agent's HEAD~1 and HEAD hold two versions
// of one value of size bytes (the second with a few bytes changed in its
// middle), beside a small key when small is set, with the reads after it
// was written counted.
func twoVersions(tb testing.TB, size int, small bool) (*inspect.View, *readCounter) {
	tb.Helper()
	ctx := context.Background()
	r := repo.New(memory.New())
	content := make([]byte, size)
	x := uint32(2463534242)
	for i := range content {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		content[i] = byte(x)
	}
	for i, msg := range []string{"v1", "v2"} {
		if i == 1 {
			copy(content[size/2:], "a change in the middle")
		}
		v, _, err := objects.WriteValue(ctx, r.Blocks, bytes.NewReader(content))
		if err != nil {
			tb.Fatal(err)
		}
		notes, blocks := objects.NewFileValue([]byte(msg + "\n"))
		if _, err := r.Edit(ctx, repo.EditRequest{Agent: "lumen", Message: msg, Create: true, Blocks: blocks,
			Edit: func(ctx context.Context, t *objects.Tree) (bool, error) {
				if !small {
					return t.Put(ctx, "memory.db", v)
				}
				if _, err := t.Put(ctx, "notes.md", notes); err != nil {
					return false, err
				}
				return t.Put(ctx, "memory.db", v)
			}}); err != nil {
			tb.Fatal(err)
		}
	}
	rc := &readCounter{BlockStore: r.Blocks}
	r.Blocks = rc
	return inspect.New(r), rc
}

// What 'agentstate diff --stat' asks the read model (a diff without line
// diffs) gives the sizes of a changed chunked value from its file nodes and
// reads none of its chunks; with line diffs asked for, a value over the
// patch cap is reported large, still unread.
func TestDiffStatReadsNoValueBytes(t *testing.T) {
	const size = 8 << 20
	v, rc := twoVersions(t, size, true)
	for _, patch := range []bool{false, true} {
		rc.valueBytes = 0
		chs, err := v.Diff(context.Background(), "lumen", "HEAD~1", "HEAD", patch)
		if err != nil {
			t.Fatal(err)
		}
		if len(chs) != 2 || chs[0].Path != "memory.db" || chs[0].OldSize != size || chs[0].NewSize != size {
			t.Fatalf("diff: %+v", chs)
		}
		if patch && !chs[0].Large {
			t.Fatalf("a %d-byte value is not reported large: %+v", size, chs[0])
		}
		// The small key's two versions (3 bytes each: a small value's
		// size is its block) are all the value bytes read, twice with
		// line diffs (its patch).
		want := int64(6)
		if patch {
			want = 12
		}
		if rc.valueBytes != want {
			t.Errorf("patch %v: the diff read %d value bytes, want %d (the small key's two versions)", patch, rc.valueBytes, want)
		}
	}
}

// BenchmarkDiffStat64MiB measures what 'agentstate diff --stat' reads for
// two versions of a 64 MiB value: blocks, value bytes (chunks) and other
// bytes (tree, commit and file nodes) per diff. The value bytes must be 0.
func BenchmarkDiffStat64MiB(b *testing.B) {
	v, rc := twoVersions(b, 64<<20, false)
	ctx := context.Background()
	rc.reads, rc.valueBytes, rc.otherBytes = 0, 0, 0
	b.ResetTimer()
	for range b.N {
		if _, err := v.Diff(ctx, "lumen", "HEAD~1", "HEAD", false); err != nil {
			b.Fatal(err)
		}
	}
	if rc.valueBytes != 0 {
		b.Fatalf("the diff read %d value bytes", rc.valueBytes)
	}
	b.ReportMetric(float64(rc.reads)/float64(b.N), "blocks/op")
	b.ReportMetric(float64(rc.valueBytes)/float64(b.N), "value-bytes/op")
	b.ReportMetric(float64(rc.otherBytes)/float64(b.N), "node-bytes/op")
}
