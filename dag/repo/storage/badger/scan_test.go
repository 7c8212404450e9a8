package badger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

// ScanBlocks gives every block once with its size, and its bytes when
// asked; a value whose value-log bytes are cut off does not stop the scan:
// it is left out or its bytes do not match its CID (the caller re-hashes),
// and Get of it reports the damage.
func TestScanBlocksLeavesOutWhatCannotBeRead(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	s, err := badger.Create(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	small := objects.NewValue([]byte("small"))
	big := objects.NewValue(bytes.Repeat([]byte("value-log bytes "), 8<<10)) // 128 KiB: in the value log
	if err := s.Put(ctx, small, big); err != nil {
		t.Fatal(err)
	}
	seen := map[objects.CID]int64{}
	if err := s.ScanBlocks(ctx, func(c objects.CID) bool { return c == small.CID }, func(c objects.CID, size int64, data []byte) error {
		seen[c] = size
		if (c == small.CID) != (data != nil) || data != nil && !bytes.Equal(data, small.Data) {
			t.Fatalf("block %s: bytes %q", c, data)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 2 || seen[small.CID] != 5 || seen[big.CID] != int64(len(big.Data)) {
		t.Fatalf("scan saw %v", seen)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	cut := false
	for _, l := range logs {
		if fi, err := os.Stat(l); err == nil && fi.Size() > int64(len(big.Data)) {
			if err := os.Truncate(l, fi.Size()-int64(len(big.Data))/2); err != nil {
				t.Fatal(err)
			}
			cut = true
		}
	}
	if !cut {
		t.Fatalf("no value log holds the big block: %v", logs)
	}
	r, err := badger.Open(dir, badger.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	seen = map[objects.CID]int64{}
	var bigData []byte
	if err := r.ScanBlocks(ctx, nil, func(c objects.CID, size int64, data []byte) error {
		seen[c] = size
		if c == big.CID {
			bigData = data
		}
		return nil
	}); err != nil {
		t.Fatalf("the scan stopped: %v", err)
	}
	if _, ok := seen[small.CID]; !ok {
		t.Fatalf("scan saw %v", seen)
	}
	if _, ok := seen[big.CID]; ok && objects.Verify(big.CID, bigData) == nil {
		t.Fatal("the scan gave a cut value whole")
	} // left out, or bytes that do not match: either way the caller finds it
	if _, err := r.Get(ctx, big.CID); err == nil {
		t.Fatal("a cut value read back whole")
	}
}

// ScanBlocks reads its ranges on every core: every block of both codecs,
// whatever its digest, comes exactly once with its size and (when wanted)
// its bytes, and fn is never called from two goroutines at once. An error
// from fn stops the scan and is what it returns.
func TestScanBlocksEveryBlockOnce(t *testing.T) {
	ctx := context.Background()
	s, err := badger.Create(filepath.Join(t.TempDir(), "s"), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := map[objects.CID][]byte{}
	var blocks []objects.Block
	for i := range 3000 {
		data := []byte(fmt.Sprintf("block %d", i))
		b := objects.NewValue(data)
		if i%3 == 0 { // some dag-cbor blocks too: their keys sort apart
			b = objects.Block{CID: objects.Sum(objects.CodecDagCBOR, data), Data: data}
		}
		want[b.CID] = data
		blocks = append(blocks, b)
	}
	if err := s.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	got := map[objects.CID]int{}
	var inFn atomic.Int32
	err = s.ScanBlocks(ctx, func(c objects.CID) bool { return c.Codec() == objects.CodecDagCBOR }, func(c objects.CID, size int64, data []byte) error {
		if inFn.Add(1) != 1 {
			t.Error("fn called from two goroutines at once")
		}
		defer inFn.Add(-1)
		got[c]++
		if size != int64(len(want[c])) {
			t.Errorf("%s: size %d, want %d", c, size, len(want[c]))
		}
		if c.Codec() == objects.CodecDagCBOR && !bytes.Equal(data, want[c]) || c.Codec() == objects.CodecRaw && data != nil {
			t.Errorf("%s: bytes %q", c, data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("scanned %d blocks, want %d", len(got), len(want))
	}
	for c, n := range got {
		if n != 1 {
			t.Fatalf("%s scanned %d times", c, n)
		}
	}
	stop := errors.New("enough")
	calls := 0
	err = s.ScanBlocks(ctx, nil, func(objects.CID, int64, []byte) error {
		if calls++; calls == 10 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 10 {
		t.Fatalf("scan after fn's error: %v, %d calls", err, calls)
	}
}
