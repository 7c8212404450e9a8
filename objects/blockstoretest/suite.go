// Package blockstoretest is the conformance suite every objects.BlockStore
// implementation runs.
package blockstoretest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

// Factory returns a fresh, empty store, and a function that overwrites the
// stored bytes of a block in place (to test verify-on-read), or nil if the
// implementation cannot simulate corruption.
type Factory func(t *testing.T) (objects.BlockStore, func(objects.CID, []byte))

// Run runs the suite.
func Run(t *testing.T, newStore Factory) {
	ctx := context.Background()
	t.Run("PutGetHas", func(t *testing.T) {
		bs, _ := newStore(t)
		var blocks []objects.Block
		for i := range 50 {
			blocks = append(blocks, objects.NewValue([]byte(fmt.Sprintf("value %d", i))))
		}
		blocks = append(blocks, objects.NewValue(nil), objects.NewValue(bytes.Repeat([]byte{7}, 3<<20)))
		if err := bs.Put(ctx, blocks...); err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			got, err := bs.Get(ctx, b.CID)
			if err != nil {
				t.Fatalf("Get(%s): %v", b.CID, err)
			}
			if !bytes.Equal(got, b.Data) {
				t.Fatalf("Get(%s) = %d bytes, want %d", b.CID, len(got), len(b.Data))
			}
			if ok, err := bs.Has(ctx, b.CID); err != nil || !ok {
				t.Fatalf("Has(%s) = %v, %v", b.CID, ok, err)
			}
		}
	})
	t.Run("Idempotent", func(t *testing.T) {
		bs, _ := newStore(t)
		b := objects.NewValue([]byte("same"))
		for range 3 {
			if err := bs.Put(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		got, err := bs.Get(ctx, b.CID)
		if err != nil || string(got) != "same" {
			t.Fatalf("Get = %q, %v", got, err)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		bs, _ := newStore(t)
		c := objects.NewValue([]byte("absent")).CID
		_, err := bs.Get(ctx, c)
		var nf *objects.NotFoundError
		if !errors.Is(err, objects.ErrNotFound) || !errors.As(err, &nf) || nf.CID != c {
			t.Fatalf("Get(absent) error = %v, want NotFoundError naming %s", err, c)
		}
		if ok, err := bs.Has(ctx, c); err != nil || ok {
			t.Fatalf("Has(absent) = %v, %v", ok, err)
		}
	})
	t.Run("VerifyOnRead", func(t *testing.T) {
		bs, corrupt := newStore(t)
		if corrupt == nil {
			t.Skip("implementation cannot simulate corruption")
		}
		b := objects.NewValue([]byte("pristine"))
		if err := bs.Put(ctx, b); err != nil {
			t.Fatal(err)
		}
		corrupt(b.CID, []byte("tampered"))
		_, err := bs.Get(ctx, b.CID)
		var hm *objects.HashMismatchError
		if !errors.Is(err, objects.ErrHashMismatch) || !errors.As(err, &hm) || hm.Expected != b.CID {
			t.Fatalf("Get(corrupt) error = %v, want HashMismatchError naming %s", err, b.CID)
		}
	})
	t.Run("Lister", func(t *testing.T) {
		bs, _ := newStore(t)
		l, ok := bs.(objects.BlockLister)
		if !ok {
			t.Skip("no BlockLister")
		}
		want := map[objects.CID]bool{}
		for i := range 20 {
			b := objects.NewValue([]byte{byte(i)})
			want[b.CID] = true
			if err := bs.Put(ctx, b); err != nil {
				t.Fatal(err)
			}
		}
		got := map[objects.CID]bool{}
		for c, err := range l.AllCIDs(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			got[c] = true
		}
		if len(got) != len(want) {
			t.Fatalf("AllCIDs gave %d, want %d", len(got), len(want))
		}
		if d, ok := bs.(objects.BlockDeleter); ok {
			for c := range want {
				if err := d.Delete(ctx, c); err != nil {
					t.Fatal(err)
				}
				if ok, _ := bs.Has(ctx, c); ok {
					t.Fatalf("block %s still present after Delete", c)
				}
			}
		}
	})
}
