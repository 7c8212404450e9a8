package ens

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"math/big"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
)

// autoMine is the simulated chain's client, mining a block after every
// transaction it sends, like a development node with instant sealing.
type autoMine struct {
	simulated.Client
	sim *simulated.Backend
}

func (a autoMine) SendTransaction(ctx context.Context, tx *types.Transaction) error {
	if err := a.Client.SendTransaction(ctx, tx); err != nil {
		return err
	}
	a.sim.Commit()
	return nil
}

// testChain is a simulated chain with the ENS registry and PublicResolver
// deployed from their npm artefacts.
type testChain struct {
	t        *testing.T
	sim      *simulated.Backend
	backend  autoMine
	reg, res artefact

	registry, resolver common.Address
	// deployer owns the root and eth; owner owns lumen.eth, noresolver.eth and
	// race.eth; stranger owns nothing; delegate is authorised by owner on the
	// resolver for lumen.eth; pauper is authorised too but has no ether.
	deployer, owner, stranger, delegate, pauper *ecdsa.PrivateKey
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func addr(k *ecdsa.PrivateKey) common.Address { return crypto.PubkeyToAddress(k.PublicKey) }

func labelhash(l string) [32]byte { return crypto.Keccak256Hash([]byte(l)) }

func newTestChain(t *testing.T) *testChain {
	t.Helper()
	reg, res := loadContracts(t)
	c := &testChain{t: t, reg: reg, res: res,
		deployer: newKey(t), owner: newKey(t), stranger: newKey(t), delegate: newKey(t), pauper: newKey(t)}
	eth := new(big.Int).Exp(big.NewInt(10), big.NewInt(21), nil)
	alloc := types.GenesisAlloc{}
	for _, k := range []*ecdsa.PrivateKey{c.deployer, c.owner, c.stranger, c.delegate} {
		alloc[addr(k)] = types.Account{Balance: eth}
	}
	c.sim = simulated.NewBackend(alloc)
	t.Cleanup(func() { _ = c.sim.Close() })
	c.backend = autoMine{Client: c.sim.Client(), sim: c.sim}

	c.registry = c.deploy(c.deployer, reg, nil)
	ctorArgs, err := res.ABI.Pack("", c.registry)
	if err != nil {
		t.Fatal(err)
	}
	c.resolver = c.deploy(c.deployer, res, ctorArgs)

	root := [32]byte{}
	c.registryTx(c.deployer, "setSubnodeOwner", root, labelhash("eth"), addr(c.deployer))
	for _, l := range []string{"lumen", "noresolver", "race"} {
		c.registryTx(c.deployer, "setSubnodeOwner", Namehash("eth"), labelhash(l), addr(c.owner))
	}
	c.registryTx(c.owner, "setResolver", Namehash("lumen.eth"), c.resolver)
	c.registryTx(c.owner, "setResolver", Namehash("race.eth"), c.resolver)
	c.resolverTx(c.owner, "setAuthorisation", Namehash("lumen.eth"), addr(c.delegate), true)
	c.resolverTx(c.owner, "setAuthorisation", Namehash("lumen.eth"), addr(c.pauper), true)
	return c
}

func (c *testChain) client() *Client { return NewClient(c.backend, c.registry) }

// transact sends one transaction from key, mines it and requires success.
func (c *testChain) transact(key *ecdsa.PrivateKey, to *common.Address, data []byte) *types.Receipt {
	c.t.Helper()
	ctx := context.Background()
	cl := c.sim.Client()
	nonce, err := cl.PendingNonceAt(ctx, addr(key))
	if err != nil {
		c.t.Fatal(err)
	}
	head, err := cl.HeaderByNumber(ctx, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	tip := big.NewInt(1e9)
	tx := types.NewTx(&types.DynamicFeeTx{
		ChainID: big.NewInt(1337), Nonce: nonce, GasTipCap: tip,
		GasFeeCap: new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2))),
		Gas:       8_000_000, To: to, Data: data,
	})
	signed, err := types.SignTx(tx, types.LatestSignerForChainID(big.NewInt(1337)), key)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := cl.SendTransaction(ctx, signed); err != nil {
		c.t.Fatal(err)
	}
	c.sim.Commit()
	r, err := cl.TransactionReceipt(ctx, signed.Hash())
	if err != nil {
		c.t.Fatal(err)
	}
	if r.Status != types.ReceiptStatusSuccessful {
		c.t.Fatalf("transaction to %v reverted", to)
	}
	return r
}

func (c *testChain) deploy(key *ecdsa.PrivateKey, a artefact, ctorArgs []byte) common.Address {
	c.t.Helper()
	r := c.transact(key, nil, append(append([]byte{}, a.Bytecode...), ctorArgs...))
	code, err := c.sim.Client().CodeAt(context.Background(), r.ContractAddress, nil)
	if err != nil || len(code) == 0 {
		c.t.Fatalf("deployment left no code at %s: %v", r.ContractAddress, err)
	}
	return r.ContractAddress
}

func (c *testChain) call(a abi.ABI, to common.Address, from *ecdsa.PrivateKey, method string, args ...any) {
	c.t.Helper()
	data, err := a.Pack(method, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.transact(from, &to, data)
}

func (c *testChain) registryTx(from *ecdsa.PrivateKey, method string, args ...any) {
	c.t.Helper()
	c.call(c.reg.ABI, c.registry, from, method, args...)
}

func (c *testChain) resolverTx(from *ecdsa.PrivateKey, method string, args ...any) {
	c.t.Helper()
	c.call(c.res.ABI, c.resolver, from, method, args...)
}

// rawText reads a text record with the contract's own ABI, independently of
// the package's client.
func (c *testChain) rawText(name, key string) string {
	c.t.Helper()
	data, err := c.res.ABI.Pack("text", Namehash(name), key)
	if err != nil {
		c.t.Fatal(err)
	}
	out, err := c.sim.Client().CallContract(context.Background(), ethereum.CallMsg{To: &c.resolver, Data: data}, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	v, err := c.res.ABI.Unpack("text", out)
	if err != nil {
		c.t.Fatal(err)
	}
	return v[0].(string)
}

func (c *testChain) nonce(k *ecdsa.PrivateKey) uint64 {
	c.t.Helper()
	n, err := c.sim.Client().NonceAt(context.Background(), addr(k), nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

const (
	blob1 = "M4hsZGQ1oCktdzegB6HnI6Mi28S2nqOPHxK-W7_4BUk"
	blob2 = "Zx3Q8k1bVwTQ1nD0pW6Jb3wqf2rT9mGQhJmE4Y0c2aA"
	blob3 = "evil-blob-id-written-by-someone-else-000000"
	blob4 = "dLgT0pDtNf5YgqM3cXQ1l2wqkXwS9bCkP6uN8vR1zZE"
)

func TestPointerOnSimulatedChain(t *testing.T) {
	c := newTestChain(t)
	cl := c.client()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("ResolverOfName", func(t *testing.T) {
		got, err := cl.Resolver(ctx, "lumen.eth")
		if err != nil || got != c.resolver {
			t.Fatalf("Resolver = %s, %v; want %s", got, err, c.resolver)
		}
		if o, err := cl.Owner(ctx, "lumen.eth"); err != nil || o != addr(c.owner) {
			t.Fatalf("Owner = %s, %v; want %s", o, err, addr(c.owner))
		}
	})

	t.Run("NoRecord", func(t *testing.T) {
		_, err := cl.ReadPointer(ctx, "lumen.eth")
		if !errors.Is(err, ErrNoRecord) {
			t.Fatalf("ReadPointer on a fresh name: %v, want ErrNoRecord", err)
		}
		if v, err := cl.Text(ctx, "lumen.eth", PointerKey); err != nil || v != "" {
			t.Fatalf("Text on a missing record = %q, %v; want \"\", nil", v, err)
		}
	})

	t.Run("NoResolver", func(t *testing.T) {
		for _, name := range []string{"noresolver.eth", "nobody.eth"} {
			_, err := cl.ReadPointer(ctx, name)
			if !errors.Is(err, ErrNoResolver) {
				t.Fatalf("ReadPointer(%s): %v, want ErrNoResolver", name, err)
			}
			var e *Error
			if !errors.As(err, &e) || e.Name != name || !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not name %s", err, name)
			}
			if _, err := cl.WritePointer(ctx, name, blob1, c.owner); !errors.Is(err, ErrNoResolver) {
				t.Fatalf("WritePointer(%s): %v, want ErrNoResolver", name, err)
			}
		}
	})

	t.Run("WriteThenRead", func(t *testing.T) {
		tx, err := cl.WritePointer(ctx, "lumen.eth", blob1, c.owner)
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.sim.Client().TransactionReceipt(ctx, tx)
		if err != nil || r.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("receipt of %s: %v %+v", tx, err, r)
		}
		if got, err := cl.ReadPointer(ctx, "lumen.eth"); err != nil || got != blob1 {
			t.Fatalf("ReadPointer = %q, %v; want %q", got, err, blob1)
		}
		if got := c.rawText("lumen.eth", PointerKey); got != blob1 {
			t.Fatalf("contract holds %q, want %q", got, blob1)
		}
	})

	t.Run("Overwrite", func(t *testing.T) {
		if _, err := cl.WritePointer(ctx, "lumen.eth", blob2, c.owner); err != nil {
			t.Fatal(err)
		}
		if got, err := cl.ReadPointer(ctx, "lumen.eth"); err != nil || got != blob2 {
			t.Fatalf("ReadPointer = %q, %v; want %q", got, err, blob2)
		}
	})

	t.Run("SameValueSendsNothing", func(t *testing.T) {
		before := c.nonce(c.owner)
		tx, err := cl.WritePointer(ctx, "lumen.eth", blob2, c.owner)
		if err != nil || tx != (common.Hash{}) {
			t.Fatalf("WritePointer of the current value = %s, %v; want zero hash", tx, err)
		}
		if after := c.nonce(c.owner); after != before {
			t.Fatalf("nonce moved %d -> %d: a transaction was sent", before, after)
		}
	})

	t.Run("Unauthorised", func(t *testing.T) {
		before := c.nonce(c.stranger)
		_, err := cl.WritePointer(ctx, "lumen.eth", blob3, c.stranger)
		if !errors.Is(err, ErrUnauthorised) {
			t.Fatalf("WritePointer by a stranger: %v, want ErrUnauthorised", err)
		}
		var ue *UnauthorisedError
		if !errors.As(err, &ue) || ue.Signer != addr(c.stranger) || ue.Owner != addr(c.owner) ||
			ue.Resolver != c.resolver || ue.Tx != (common.Hash{}) || ue.Name != "lumen.eth" {
			t.Fatalf("UnauthorisedError = %+v", ue)
		}
		if c.nonce(c.stranger) != before {
			t.Fatal("a refused write still sent a transaction")
		}
		if got, err := cl.ReadPointer(ctx, "lumen.eth"); err != nil || got != blob2 {
			t.Fatalf("after the refused write ReadPointer = %q, %v; want %q unchanged", got, err, blob2)
		}
	})

	t.Run("AuthorisedDelegate", func(t *testing.T) {
		// Not the owner, but authorised on the resolver: the write goes through.
		if _, err := cl.WritePointer(ctx, "lumen.eth", blob4, c.delegate); err != nil {
			t.Fatalf("WritePointer by an authorised delegate: %v", err)
		}
		if got := c.rawText("lumen.eth", PointerKey); got != blob4 {
			t.Fatalf("contract holds %q, want %q", got, blob4)
		}
	})

	t.Run("NoFunds", func(t *testing.T) {
		_, err := cl.WritePointer(ctx, "lumen.eth", blob1, c.pauper)
		if !errors.Is(err, ErrRPC) || !strings.Contains(err.Error(), "insufficient funds") ||
			!strings.Contains(err.Error(), "lumen.eth") {
			t.Fatalf("WritePointer from an empty account: %v", err)
		}
		if got := c.rawText("lumen.eth", PointerKey); got != blob4 {
			t.Fatalf("contract holds %q, want %q", got, blob4)
		}
	})

	t.Run("MixedCaseName", func(t *testing.T) {
		for _, name := range []string{"Lumen.ETH", "LUMEN.eth", "ＬＵＭＥＮ.eth"} {
			got, err := cl.ReadPointer(ctx, name)
			if err != nil || got != blob4 {
				t.Fatalf("ReadPointer(%q) = %q, %v; want %q", name, got, err, blob4)
			}
		}
		if _, err := cl.WritePointer(ctx, "Lumen.ETH", blob1, c.owner); err != nil {
			t.Fatal(err)
		}
		if got := c.rawText("lumen.eth", PointerKey); got != blob1 {
			t.Fatalf("write through Lumen.ETH: lumen.eth holds %q, want %q", got, blob1)
		}
	})

	t.Run("InvalidName", func(t *testing.T) {
		for _, name := range []string{"", "a b.eth", "lumen..eth", "a_b.eth"} {
			if _, err := cl.ReadPointer(ctx, name); !errors.Is(err, ErrInvalidName) {
				t.Fatalf("ReadPointer(%q): %v, want ErrInvalidName", name, err)
			}
			if _, err := cl.WritePointer(ctx, name, blob1, c.owner); !errors.Is(err, ErrInvalidName) {
				t.Fatalf("WritePointer(%q): %v, want ErrInvalidName", name, err)
			}
		}
		if _, err := cl.SetText(ctx, "lumen.eth", PointerKey, blob1, nil); !errors.Is(err, ErrNoSigner) {
			t.Fatalf("SetText without a signer: %v, want ErrNoSigner", err)
		}
		if _, err := cl.WritePointer(ctx, "lumen.eth", "", c.owner); !errors.Is(err, ErrEmptyPointer) {
			t.Fatalf("WritePointer of \"\": %v, want ErrEmptyPointer", err)
		}
	})

	t.Run("RegistryWithoutCode", func(t *testing.T) {
		nowhere := common.HexToAddress("0x000000000000000000000000000000000000dEaD")
		_, err := NewClient(c.backend, nowhere).ReadPointer(ctx, "lumen.eth")
		if !errors.Is(err, ErrNotContract) || !strings.Contains(err.Error(), nowhere.Hex()) {
			t.Fatalf("ReadPointer through an empty registry address: %v, want ErrNotContract naming it", err)
		}
	})
}

// raceBackend transfers race.eth away right after gas estimation, so the
// owner's transaction passes simulation but reverts when mined.
type raceBackend struct {
	autoMine
	c *testChain
}

func (r raceBackend) EstimateGas(ctx context.Context, msg ethereum.CallMsg) (uint64, error) {
	gas, err := r.autoMine.EstimateGas(ctx, msg)
	if err == nil {
		r.c.registryTx(r.c.owner, "setOwner", Namehash("race.eth"), addr(r.c.stranger))
	}
	return gas, err
}

func TestUnauthorisedWhenMinedTxReverts(t *testing.T) {
	c := newTestChain(t)
	cl := NewClient(raceBackend{autoMine: c.backend, c: c}, c.registry)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tx, err := cl.WritePointer(ctx, "race.eth", blob1, c.owner)
	var ue *UnauthorisedError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnauthorised) {
		t.Fatalf("WritePointer losing the name mid-flight: %v, want *UnauthorisedError", err)
	}
	if ue.Tx == (common.Hash{}) || ue.Tx != tx || ue.Owner != addr(c.stranger) || ue.Signer != addr(c.owner) {
		t.Fatalf("UnauthorisedError = %+v, tx %s", ue, tx)
	}
	r, err := c.sim.Client().TransactionReceipt(ctx, tx)
	if err != nil || r.Status != types.ReceiptStatusFailed {
		t.Fatalf("receipt of %s: %v %+v, want a mined, failed transaction", tx, err, r)
	}
	if got := c.rawText("race.eth", PointerKey); got != "" {
		t.Fatalf("race.eth holds %q after a reverted write", got)
	}
}

func TestWriteWaitsWithinContext(t *testing.T) {
	c := newTestChain(t)
	// The plain simulated client never mines on its own: the receipt never comes.
	cl := NewClient(c.sim.Client(), c.registry)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	tx, err := cl.WritePointer(ctx, "lumen.eth", blob1, c.owner)
	if !errors.Is(err, ErrNotMined) || !errors.Is(err, context.DeadlineExceeded) ||
		tx == (common.Hash{}) || !strings.Contains(err.Error(), tx.Hex()) {
		t.Fatalf("WritePointer without mining = %s, %v; want the tx hash and a deadline error naming it", tx, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("WritePointer returned %v after its deadline", d)
	}
	// Once mined, the write it sent is there.
	c.sim.Commit()
	if got := c.rawText("lumen.eth", PointerKey); got != blob1 {
		t.Fatalf("after mining, lumen.eth holds %q, want %q", got, blob1)
	}
}

// laggingHead hands out receipts before it makes their block the head, as
// a node may: for its first lag calls after a receipt, the latest block it
// reports is the one before.
type laggingHead struct {
	autoMine
	lag, calls *atomic.Int32
	of         int32 // the lag set when a receipt is handed out
}

func (l laggingHead) TransactionReceipt(ctx context.Context, h common.Hash) (*types.Receipt, error) {
	r, err := l.autoMine.TransactionReceipt(ctx, h)
	if err == nil {
		l.lag.Store(l.of)
		l.calls.Store(0)
	}
	return r, err
}

func (l laggingHead) HeaderByNumber(ctx context.Context, n *big.Int) (*types.Header, error) {
	h, err := l.autoMine.HeaderByNumber(ctx, n)
	if err != nil || n != nil {
		return h, err
	}
	l.calls.Add(1)
	if l.lag.Add(-1) >= 0 {
		return l.autoMine.HeaderByNumber(ctx, new(big.Int).Sub(h.Number, big.NewInt(1)))
	}
	return h, nil
}

// A write returns once the chain's head holds its block, so that reads (at
// the latest block) see it; a head that does not get there within the
// context is an error naming the transaction.
func TestWriteWaitsForTheHead(t *testing.T) {
	c := newTestChain(t)
	var lag, calls atomic.Int32
	cl := NewClient(laggingHead{autoMine: c.backend, lag: &lag, calls: &calls, of: 3}, c.registry)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := cl.WritePointer(ctx, "lumen.eth", blob1, c.owner); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n < 4 {
		t.Fatalf("the write asked for the head %d times after its receipt, want at least 4 (3 behind, then there)", n)
	}
	if got, err := cl.ReadPointer(ctx, "lumen.eth"); err != nil || got != blob1 {
		t.Fatalf("read after the write: %q %v, want %q", got, err, blob1)
	}

	never := NewClient(laggingHead{autoMine: c.backend, lag: &lag, calls: &calls, of: 1 << 30}, c.registry)
	short, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	tx, err := never.WritePointer(short, "lumen.eth", blob2, c.owner)
	if !errors.Is(err, ErrNotMined) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), tx.Hex()) || !strings.Contains(err.Error(), "head") {
		t.Fatalf("a head that never reaches the write: %s %v, want a deadline error naming the transaction and the head", tx, err)
	}
}

func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

func TestUnreachableRPC(t *testing.T) {
	hostPort := closedPort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := Dial(ctx, "http://"+hostPort+"/v3/secret-api-key", DefaultRegistry)
	if !errors.Is(err, ErrRPC) || !strings.Contains(err.Error(), hostPort) {
		t.Fatalf("Dial of a closed port: %v, want ErrRPC naming %s", err, hostPort)
	}
	if strings.Contains(err.Error(), "secret-api-key") {
		t.Fatalf("Dial error leaks the URL path: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Dial of a closed port took %v", d)
	}
}
