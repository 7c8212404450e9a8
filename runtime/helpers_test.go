package runtime

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

// testKey is a fixed operator key so receipts are reproducible in tests.
func testKey(seed string) ed25519.PrivateKey {
	s := sha256.Sum256([]byte(seed))
	return ed25519.NewKeyFromSeed(s[:])
}

func openTest(t testing.TB, opts Options) *Runtime {
	t.Helper()
	if opts.Signer == nil {
		opts.Signer = testKey("operator")
	}
	if opts.Store == "" {
		opts.InMemory = true
	}
	rt, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

func put(kv ...string) func(context.Context, *Tx) error {
	return func(ctx context.Context, tx *Tx) error {
		for i := 0; i+1 < len(kv); i += 2 {
			if err := tx.Put(ctx, kv[i], []byte(kv[i+1])); err != nil {
				return err
			}
		}
		return nil
	}
}

func mustHead(t testing.TB, rt *Runtime, agent string) objects.CID {
	t.Helper()
	h, err := rt.Head(context.Background(), agent)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func getAt(t testing.TB, rt *Runtime, agent, rev, key string) string {
	t.Helper()
	v, err := rt.View(context.Background(), agent, rev)
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("%s@%s:%s: %v", agent, rev, key, err)
	}
	return string(b)
}
