package storage_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/dag/repo/storage/storagetest"
	"github.com/agentstate/agentstate/internal/rpcwire"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/blockstoretest"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/tape"
	"storj.io/drpc/drpcerr"
)

// impl is one storage implementation as the suites see it: open returns a
// fresh, empty store, and a function that overwrites a block's stored bytes
// in place (for a client, in its server's store), to test verify-on-read.
type impl struct {
	name string
	open func(t *testing.T) (repo.Storage, func(objects.CID, []byte))
	// checked is true for a store that admits only the records a
	// repository writes: the served store's server checks every HEAD move
	// (refs.CheckSwap, the commit present, repo.CheckLanding) and every
	// metadata record (repo.CheckClientMeta), so the RefStore and Meta
	// suites' opaque records are refused, as they must be; the test then
	// checks that refusal instead (refusesOpaque).
	checked bool
}

var impls = []impl{
	{
		name: "badger",
		open: func(t *testing.T) (repo.Storage, func(objects.CID, []byte)) {
			s, err := badger.Create(t.TempDir(), badger.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s, s.CorruptForTest
		},
	},
	{
		name: "memory",
		open: func(t *testing.T) (repo.Storage, func(objects.CID, []byte)) {
			s := memory.New()
			return s, s.Corrupt
		},
	},
	{
		// A client on the Unix socket of a server over a fresh Badger store.
		name: "remote",
		open: func(t *testing.T) (repo.Storage, func(objects.CID, []byte)) {
			r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
			if err != nil {
				t.Fatal(err)
			}
			srv, err := remote.Start(r, remote.Options{})
			if err != nil {
				r.Close()
				t.Fatal(err)
			}
			c, err := remote.Dial(context.Background(), remote.SocketPath(r.Dir), remote.DialOptions{})
			if err != nil {
				srv.Close()
				r.Close()
				t.Fatal(err)
			}
			t.Cleanup(func() {
				c.Close()
				srv.Close()
				r.Close()
			})
			return c, r.Storage.(*badger.Store).CorruptForTest
		},
		checked: true,
	},
}

// Every storage implementation runs every conformance suite, here and
// nowhere else.
func TestConformance(t *testing.T) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) {
			t.Run("Blocks", func(t *testing.T) {
				blockstoretest.Run(t, func(t *testing.T) (objects.BlockStore, func(objects.CID, []byte)) {
					return im.open(t)
				})
			})
			t.Run("Tape", func(t *testing.T) {
				storagetest.Tape(t, func(t *testing.T) tape.Store { s, _ := im.open(t); return s })
			})
			if im.checked {
				// The suites run over the records a repository writes,
				// which the server admits; opaque ones it refuses.
				t.Run("Refs", func(t *testing.T) {
					storagetest.RefStoreWith(t, func(t *testing.T) (refs.Store, storagetest.Mover) {
						s, _ := im.open(t)
						return s, storagetest.Repository(s)
					})
				})
				t.Run("Meta", func(t *testing.T) {
					storagetest.MetaWith(t, func(t *testing.T) storagetest.MetaStore { s, _ := im.open(t); return s }, clientRecords)
				})
				t.Run("RefusesOpaque", func(t *testing.T) {
					s, _ := im.open(t)
					refusesOpaque(t, s)
				})
				return
			}
			t.Run("Refs", func(t *testing.T) {
				storagetest.RefStore(t, func(t *testing.T) refs.Store { s, _ := im.open(t); return s })
			})
			t.Run("Meta", func(t *testing.T) {
				storagetest.Meta(t, func(t *testing.T) storagetest.MetaStore { s, _ := im.open(t); return s })
			})
		})
	}
}

// clientRecords are the Meta suite's records as a served store's client
// may write them: snapshot records (snapshots/AGENT/..., a JSON object;
// repo.CheckClientMeta), the suite's names mapped to agents ("p/a" is
// agent p's record a, "q" agent q's record r). A client deletes no record.
var clientRecords = storagetest.Records{
	Name: func(n string) string {
		if !strings.Contains(n, "/") {
			n += "/r"
		}
		return "snapshots/" + n
	},
	Value: func(v string) []byte {
		b, _ := json.Marshal(map[string]string{"v": v})
		return b
	},
	NoDelete: true,
}

// refusesOpaque: a checked store refuses the RefStore and Meta suites'
// records (a HEAD move whose entry and head are not a repository's, a
// metadata record no rule admits) as a bad request, not as a lost race,
// and keeps none of them.
func refusesOpaque(t *testing.T, s repo.Storage) {
	ctx := context.Background()
	err := s.SwapHead(ctx, "a", nil, 1, []byte("e1"), []byte("h1"))
	if errors.Is(err, refs.ErrSwapped) || drpcerr.Code(err) != rpcwire.CodeBadRequest {
		t.Errorf("SwapHead of opaque records: %v (code %d), want code %d", err, drpcerr.Code(err), rpcwire.CodeBadRequest)
	}
	if _, ok, err := s.HeadRecord(ctx, "a"); ok || err != nil {
		t.Errorf("a refused move left a HEAD record: ok=%v err=%v", ok, err)
	}
	for r, err := range s.LogRecords(ctx, "a") {
		t.Errorf("a refused move left a log record: %v %v", r, err)
	}
	err = s.SetMeta(ctx, "p/a", []byte("v"))
	if drpcerr.Code(err) != rpcwire.CodeBadRequest {
		t.Errorf("SetMeta of a record no rule admits: %v (code %d), want code %d", err, drpcerr.Code(err), rpcwire.CodeBadRequest)
	}
	if _, ok, err := s.GetMeta(ctx, "p/a"); ok || err != nil {
		t.Errorf("a refused record was kept: ok=%v err=%v", ok, err)
	}
}
