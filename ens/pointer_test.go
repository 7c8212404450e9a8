package ens_test

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/ens"
	"github.com/agentstate/agentstate/ens/enstest"
	"github.com/agentstate/agentstate/export/history"
	"github.com/ethereum/go-ethereum/common"
)

// ownedName starts a simulated chain with lumen.eth registered to owner, and
// a client of it; stranger is another funded account.
func ownedName(t *testing.T) (*enstest.Chain, *ens.Client, *ecdsa.PrivateKey, *ecdsa.PrivateKey) {
	t.Helper()
	chain := enstest.NewChain(t)
	owner, stranger := chain.NewAccount(t), chain.NewAccount(t)
	chain.Register(t, "lumen.eth", enstest.Address(owner))
	c, err := ens.Dial(context.Background(), chain.URL, chain.Registry)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return chain, c, owner, stranger
}

// TestWritePointerPair: on the real PublicResolver (simulated chain), the
// binding and the blob id are set together in one multicall transaction; an
// unchanged pair sends nothing; a signer the resolver does not authorise is
// refused with both records unchanged.
func TestWritePointerPair(t *testing.T) {
	ctx := context.Background()
	chain, c, owner, stranger := ownedName(t)

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

// TestHistoryPointer: the agent-history record on the real PublicResolver:
// unset reads as no history, a write is read back, a rewrite of the same
// value sends nothing, a stranger is refused (in the preflight too) and a
// record that does not parse is refused on read.
func TestHistoryPointer(t *testing.T) {
	ctx := context.Background()
	chain, c, owner, stranger := ownedName(t)
	names := func(string) (string, error) { return "lumen.eth", nil }
	p := ens.HistoryPointer{Client: c, Names: names, Signer: owner}
	if _, err := p.ReadHistory(ctx, "lumen"); !errors.Is(err, history.ErrNoHistory) {
		t.Fatalf("unset: %v", err)
	}
	if err := p.Preflight(ctx, "lumen"); err != nil {
		t.Fatalf("owner's preflight: %v", err)
	}
	ref := history.Ref{Blob: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", SHA256: strings.Repeat("ab", 32), Size: 1234}
	if err := p.WriteHistory(ctx, "lumen", ref); err != nil {
		t.Fatal(err)
	}
	if got := chain.Text(t, "lumen.eth", ens.HistoryKey); got != ref.String() {
		t.Fatalf("%s = %q", ens.HistoryKey, got)
	}
	if got, err := p.ReadHistory(ctx, "lumen"); err != nil || got != ref {
		t.Fatalf("read back: %+v %v", got, err)
	}
	n, _ := chain.Client().BlockNumber(ctx)
	if err := p.WriteHistory(ctx, "lumen", ref); err != nil {
		t.Fatal(err)
	}
	if m, _ := chain.Client().BlockNumber(ctx); m != n {
		t.Fatalf("an unchanged record sent a transaction (block %d -> %d)", n, m)
	}
	s := ens.HistoryPointer{Client: c, Names: names, Signer: stranger}
	if err := s.Preflight(ctx, "lumen"); !errors.Is(err, ens.ErrUnauthorised) {
		t.Fatalf("stranger's preflight: %v", err)
	}
	other := ref
	other.Size = 99
	if err := s.WriteHistory(ctx, "lumen", other); !errors.Is(err, ens.ErrUnauthorised) {
		t.Fatalf("stranger: %v", err)
	}
	if got, _ := p.ReadHistory(ctx, "lumen"); got != ref {
		t.Fatalf("after a refused write: %+v", got)
	}
	if _, err := c.SetText(ctx, "lumen.eth", ens.HistoryKey, "not a pointer", owner); err != nil {
		t.Fatal(err)
	}
	if _, err := p.ReadHistory(ctx, "lumen"); !errors.Is(err, history.ErrBadManifest) {
		t.Fatalf("a record that does not parse: %v", err)
	}
}
