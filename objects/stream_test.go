package objects_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
)

// streamCases are contents whose streamed value must be byte-identical to
// NewFileValue's: sizes around the chunking threshold, content-defined
// chunks with one and several levels of list nodes, SQLite databases (cut at
// pages, deep trees with small pages) and content that starts like one but
// is not a whole number of pages.
func streamCases() map[string][]byte {
	c := map[string][]byte{
		"empty":              {},
		"one":                {7},
		"threshold-1":        randBytes(objects.ChunkThreshold-1, 1),
		"threshold":          randBytes(objects.ChunkThreshold, 2),
		"threshold+1":        randBytes(objects.ChunkThreshold+1, 3),
		"threshold+cdcMax":   randBytes(objects.ChunkThreshold+256<<10+5, 4),
		"random-9MiB":        randBytes(9<<20+12345, 5),
		"zeros-5MiB":         make([]byte, 5<<20+1),
		"sqlite-4k-3MiB":     fakeSQLite(768, 4096, 6),
		"sqlite-512-16MiB":   fakeSQLite(32768, 512, 7), // three levels of list nodes
		"sqlite-64k-2MiB":    fakeSQLite(33, 65536, 8),
		"sqlite-threshold+1": fakeSQLite(257, 4096, 9)[:objects.ChunkThreshold+1],
	}
	torn := fakeSQLite(1000, 4096, 10)
	c["sqlite-torn"] = torn[:len(torn)-100]
	long := fakeSQLite(600, 4096, 11)
	c["sqlite-appended"] = append(long, 1, 2, 3)
	return c
}

func TestWriteValueMatchesNewFileValue(t *testing.T) {
	ctx := context.Background()
	for name, content := range streamCases() {
		t.Run(name, func(t *testing.T) {
			want, blocks := objects.NewFileValue(content)
			for _, rd := range map[string]io.Reader{
				"whole": bytes.NewReader(content),
				"half":  iotest.HalfReader(bytes.NewReader(content)),
			} {
				bs := memstore.New()
				got, size, err := objects.WriteValue(ctx, bs, rd)
				if err != nil {
					t.Fatal(err)
				}
				if got != want || size != uint64(len(content)) {
					t.Fatalf("streamed value %s (%d bytes), in memory %s (%d bytes)", got, size, want, len(content))
				}
				for _, b := range blocks {
					if ok, _ := bs.Has(ctx, b.CID); !ok {
						t.Fatalf("block %s of the in-memory value was not stored", b.CID)
					}
				}
				back, err := objects.ReadValue(ctx, bs, got)
				if err != nil || !bytes.Equal(back, content) {
					t.Fatalf("ReadValue after WriteValue: %v", err)
				}
			}
		})
	}
}

func TestOpenValueStreams(t *testing.T) {
	ctx := context.Background()
	for name, content := range streamCases() {
		t.Run(name, func(t *testing.T) {
			bs := memstore.New()
			v, blocks := objects.NewFileValue(content)
			if err := bs.Put(ctx, blocks...); err != nil {
				t.Fatal(err)
			}
			rd, size, err := objects.OpenValue(ctx, bs, v)
			if err != nil || size != uint64(len(content)) {
				t.Fatalf("OpenValue: %d bytes, %v", size, err)
			}
			got, err := io.ReadAll(iotest.OneByteReader(io.LimitReader(rd, 300000)))
			if err != nil {
				t.Fatal(err)
			}
			rest, err := io.ReadAll(rd)
			if err != nil || !bytes.Equal(append(got, rest...), content) {
				t.Fatalf("streamed content differs (%v)", err)
			}
			whole, err := objects.ReadValueMax(ctx, bs, v, uint64(len(content)))
			if err != nil || !bytes.Equal(whole, content) {
				t.Fatalf("ReadValueMax: %v", err)
			}
		})
	}
}

// A cap is checked against the file node's size before any chunk is read:
// with every chunk missing, a capped read still says "too large".
func TestReadValueMaxChecksSizeFirst(t *testing.T) {
	ctx := context.Background()
	content := randBytes(3<<20, 20)
	v, blocks := objects.NewFileValue(content)
	bs := memstore.New()
	if err := bs.Put(ctx, blocks[len(blocks)-1]); err != nil { // the file node only
		t.Fatal(err)
	}
	_, err := objects.ReadValueMax(ctx, bs, v, 1<<20)
	var tl *objects.ValueTooLargeError
	if !errors.As(err, &tl) || tl.Size != uint64(len(content)) || tl.Max != 1<<20 {
		t.Fatalf("capped read of a 3 MiB value: %v, want a ValueTooLargeError", err)
	}
	if _, err := objects.ReadValueMax(ctx, bs, v, 4<<20); !errors.Is(err, objects.ErrNotFound) {
		t.Fatalf("read with its chunks missing: %v, want not found", err)
	}
}

// A chunk whose bytes are not what the file node's sha256 records (a store
// that lies about a block's content) ends the stream with an error, not EOF.
func TestOpenValueChecksContent(t *testing.T) {
	ctx := context.Background()
	content := randBytes(2<<20, 21)
	v, blocks := objects.NewFileValue(content)
	bs := &lyingStore{Store: memstore.New(), swap: blocks[0].CID}
	if err := bs.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	rd, _, err := objects.OpenValue(ctx, bs, v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(rd); !errors.Is(err, objects.ErrHashMismatch) {
		t.Fatalf("reading a value with a changed chunk: %v, want a hash mismatch", err)
	}
	if _, err := objects.ReadValueMax(ctx, bs, v, 4<<20); !errors.Is(err, objects.ErrHashMismatch) {
		t.Fatalf("ReadValueMax of a value with a changed chunk: %v, want a hash mismatch", err)
	}
}

// lyingStore returns swap's bytes with the first byte flipped, unchecked.
type lyingStore struct {
	*memstore.Store
	swap objects.CID
}

func (s *lyingStore) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	data, err := s.Store.Get(ctx, c)
	if err == nil && c == s.swap {
		data = append([]byte(nil), data...)
		data[0] ^= 1
	}
	return data, err
}

// A failing reader fails the write with its error.
func TestWriteValueReadError(t *testing.T) {
	boom := errors.New("boom")
	rd := io.MultiReader(bytes.NewReader(randBytes(3<<20, 22)), iotest.ErrReader(boom))
	if _, _, err := objects.WriteValue(context.Background(), memstore.New(), rd); !errors.Is(err, boom) {
		t.Fatalf("WriteValue over a failing reader: %v", err)
	}
}

func BenchmarkWriteValue(b *testing.B) {
	content := randBytes(64<<20, 30)
	b.SetBytes(int64(len(content)))
	for b.Loop() {
		if _, _, err := objects.WriteValue(context.Background(), discardStore{}, bytes.NewReader(content)); err != nil {
			b.Fatal(err)
		}
	}
}

type discardStore struct{ objects.BlockStore }

func (discardStore) Put(context.Context, ...objects.Block) error { return nil }

// BenchmarkWriteValueSQLite: a 32 MiB database cut at its 4 KiB pages,
// where the time is the pages' sha256 (their CIDs) and the whole content's.
func BenchmarkWriteValueSQLite(b *testing.B) {
	content := fakeSQLite(8192, 4096, 31)
	b.SetBytes(int64(len(content)))
	for b.Loop() {
		if _, _, err := objects.WriteValue(context.Background(), discardStore{}, bytes.NewReader(content)); err != nil {
			b.Fatal(err)
		}
	}
}

// aheadStore counts the Gets under way and the most at once.
type aheadStore struct {
	*memstore.Store
	mu             sync.Mutex
	inflight, peak int
	gets           int
	fail           objects.CID // its Get fails
}

func (s *aheadStore) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	s.mu.Lock()
	s.inflight++
	s.gets++
	s.peak = max(s.peak, s.inflight)
	slow := s.gets <= 64
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inflight--
		s.mu.Unlock()
	}()
	if slow {
		time.Sleep(100 * time.Microsecond) // long enough for the reads ahead to overlap
	}
	if c == s.fail {
		return nil, &objects.NotFoundError{CID: c}
	}
	return s.Store.Get(ctx, c)
}

func (s *aheadStore) now() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight
}

// OpenValueAhead yields OpenValue's content with chunks read ahead (more
// than one read under way), its checks fail the same way, and Close leaves
// no read under way.
func TestOpenValueAhead(t *testing.T) {
	ctx := context.Background()
	for name, content := range streamCases() {
		t.Run(name, func(t *testing.T) {
			bs := &aheadStore{Store: memstore.New()}
			v, blocks := objects.NewFileValue(content)
			if err := bs.Put(ctx, blocks...); err != nil {
				t.Fatal(err)
			}
			rd, size, err := objects.OpenValueAhead(ctx, bs, v, 4)
			if err != nil || size != uint64(len(content)) {
				t.Fatalf("OpenValueAhead: %d bytes, %v", size, err)
			}
			got, err := io.ReadAll(rd)
			if err != nil || !bytes.Equal(got, content) {
				t.Fatalf("content read ahead differs (%v)", err)
			}
			rd.Close()
			if len(blocks) > 8 && bs.peak < 2 {
				t.Errorf("%d blocks read one at a time, want chunks read ahead", len(blocks))
			}
		})
	}
	content := fakeSQLite(768, 4096, 6)
	v, blocks := objects.NewFileValue(content)
	lying := &lyingStore{Store: memstore.New(), swap: blocks[100].CID}
	if err := lying.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	rd, _, err := objects.OpenValueAhead(ctx, lying, v, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(rd); !errors.Is(err, objects.ErrHashMismatch) {
		t.Fatalf("reading ahead a value with a changed chunk: %v, want a hash mismatch", err)
	}
	rd.Close()
	failing := &aheadStore{Store: memstore.New(), fail: blocks[50].CID}
	if err := failing.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	rd, _, err = objects.OpenValueAhead(ctx, failing, v, 8)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(rd); !errors.Is(err, objects.ErrNotFound) {
		t.Fatalf("reading ahead a value with a chunk missing: %v, want not found", err)
	}
	rd.Close()
	if n := failing.now(); n != 0 {
		t.Fatalf("%d reads under way after Close", n)
	}
}

// A value held whole (a raw block's reader) is copied as it is, all of it.
func TestCopyValueWhole(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 20000) // over CopyValue's buffers
	var out bytes.Buffer
	n, err := objects.CopyValue(&out, bytes.NewReader(data))
	if err != nil || n != int64(len(data)) || !bytes.Equal(out.Bytes(), data) {
		t.Fatalf("copied %d bytes (%v), equal %v", n, err, bytes.Equal(out.Bytes(), data))
	}
}
