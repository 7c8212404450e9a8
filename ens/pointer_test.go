package ens_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentstate/agentstate/ens"
	"github.com/agentstate/agentstate/ens/enstest"
	"github.com/ethereum/go-ethereum/common"
)

// TestWritePointerPair: on the real PublicResolver (simulated chain), the
// binding and the blob id are set together in one multicall transaction; an
// unchanged pair sends nothing; a signer the resolver does not authorise is
// refused with both records unchanged.
func TestWritePointerPair(t *testing.T) {
	ctx := context.Background()
	chain := enstest.NewChain(t)
	owner, stranger := chain.NewAccount(t), chain.NewAccount(t)
	chain.Register(t, "lumen.eth", enstest.Address(owner))
	c, err := ens.Dial(ctx, chain.URL, chain.Registry)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	if _, _, err := c.ReadPointerPair(ctx, "lumen.eth"); !errors.Is(err, ens.ErrNoRecord) {
		t.Fatalf("no records: %v", err)
	}
	const id1, bind1 = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "binding for AAA"
	hash, err := c.WritePointerPair(ctx, "lumen.eth", id1, bind1, owner)
	if err != nil {
		t.Fatal(err)
	}
	rcpt, err := chain.Client().TransactionReceipt(ctx, hash)
	if err != nil {
		t.Fatal(err)
	}
	// One transaction, two TextChanged events: the pair changed atomically.
	if len(rcpt.Logs) != 2 {
		t.Fatalf("one transaction should set both records, it emitted %d events", len(rcpt.Logs))
	}
	if got := chain.Text(t, "lumen.eth", ens.PointerKey); got != id1 {
		t.Fatalf("%s = %q", ens.PointerKey, got)
	}
	if got := chain.Text(t, "lumen.eth", ens.BindingKey); got != bind1 {
		t.Fatalf("%s = %q", ens.BindingKey, got)
	}
	id, b, err := c.ReadPointerPair(ctx, "Lumen.ETH")
	if err != nil || id != id1 || b != bind1 {
		t.Fatalf("read pair: %q %q %v", id, b, err)
	}
	// Unchanged: nothing sent.
	if hash, err := c.WritePointerPair(ctx, "lumen.eth", id1, bind1, owner); err != nil || hash != (common.Hash{}) {
		t.Fatalf("rewrite: %s %v", hash, err)
	}
	// Only the binding differs: one setText.
	if _, err := c.WritePointerPair(ctx, "lumen.eth", id1, bind1+"'", owner); err != nil {
		t.Fatal(err)
	}
	if got := chain.Text(t, "lumen.eth", ens.BindingKey); got != bind1+"'" {
		t.Fatalf("%s = %q", ens.BindingKey, got)
	}
	// A stranger: refused, records unchanged.
	_, err = c.WritePointerPair(ctx, "lumen.eth", "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBA", "other", stranger)
	if !errors.Is(err, ens.ErrUnauthorised) {
		t.Fatalf("stranger: %v", err)
	}
	if got := chain.Text(t, "lumen.eth", ens.PointerKey); got != id1 {
		t.Fatalf("after a refused write %s = %q", ens.PointerKey, got)
	}
	if _, err := c.WritePointerPair(ctx, "lumen.eth", "", "x", owner); !errors.Is(err, ens.ErrEmptyPointer) {
		t.Fatalf("empty: %v", err)
	}
}
