package badger_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

// GetBatch reads what Get reads, in the order asked, in one transaction:
// each block's bytes, and a missing block's NotFoundError, without the
// others failing.
func TestGetBatch(t *testing.T) {
	ctx := context.Background()
	s := create(t)
	var blocks []objects.Block
	for i := range 5 {
		blocks = append(blocks, objects.NewValue(fmt.Appendf(nil, "block %d", i)))
	}
	if err := s.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	missing := objects.NewValue([]byte("never stored")).CID
	cids := []objects.CID{blocks[3].CID, missing, blocks[0].CID, blocks[3].CID, blocks[4].CID}
	var got []string
	err := s.GetBatch(ctx, cids, func(i int, data []byte, err error) {
		want, werr := s.Get(ctx, cids[i])
		if !bytes.Equal(data, want) || (err == nil) != (werr == nil) {
			t.Errorf("block %d: GetBatch gave %q, %v; Get %q, %v", i, data, err, want, werr)
		}
		if err != nil {
			var nf *objects.NotFoundError
			if !errors.As(err, &nf) || nf.CID != missing {
				t.Errorf("block %d: %v, want NotFoundError of %s", i, err, missing)
			}
			got = append(got, "missing")
			return
		}
		got = append(got, string(data))
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "block 3,missing,block 0,block 3,block 4"; strings.Join(got, ",") != want {
		t.Fatalf("GetBatch gave %q, want %q", got, want)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.GetBatch(cctx, cids, func(int, []byte, error) {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("GetBatch under a cancelled context: %v", err)
	}
}
