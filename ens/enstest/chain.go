package enstest

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/ethconfig"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/ethclient/simulated"
	"github.com/ethereum/go-ethereum/node"
	"github.com/ethereum/go-ethereum/rpc"
)

// ChainID is the simulated chain's id.
const ChainID = 1337

// sealEvery is how often the sealing loop looks for pending transactions.
const sealEvery = 10 * time.Millisecond

// Ether is 10^18 wei.
var Ether = new(big.Int).Exp(big.NewInt(10), big.NewInt(18), nil)

// Chain is a simulated chain with the ENS registry and PublicResolver
// deployed, served over HTTP JSON-RPC on 127.0.0.1 and sealing a block
// whenever a transaction is pending. NewChain closes it when the test ends.
type Chain struct {
	// URL is the HTTP JSON-RPC endpoint (eth, net, web3 and txpool
	// namespaces).
	URL string
	// Registry and Resolver are the deployed contracts' addresses.
	Registry, Resolver common.Address
	// RegistryABI and ResolverABI are the contracts' full ABIs, from npm.
	RegistryABI, ResolverABI abi.ABI
	// Deployer deployed both contracts, owns the root node and every parent
	// name Register creates, and holds a large balance.
	Deployer *ecdsa.PrivateKey

	sim    *simulated.Backend
	client simulated.Client
	rpc    *rpc.Client

	sealMu sync.Mutex // the simulated beacon's Commit is not safe for concurrent use
	txMu   sync.Mutex // one helper transaction at a time (nonces)
	stop   chan struct{}
	done   chan struct{}
}

// NewChain starts a chain, deploys the contracts from the npm artefacts
// (LoadContracts) and starts sealing on demand.
func NewChain(t testing.TB) *Chain {
	t.Helper()
	reg, res := LoadContracts(t)
	deployer, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	alloc := types.GenesisAlloc{Address(deployer): {Balance: new(big.Int).Mul(big.NewInt(1_000_000), Ether)}}
	c := &Chain{RegistryABI: reg.ABI, ResolverABI: res.ABI, Deployer: deployer,
		stop: make(chan struct{}), done: make(chan struct{})}
	c.sim, c.URL = startBackend(t, alloc)
	c.client = c.sim.Client()
	t.Cleanup(func() { _ = c.sim.Close() })
	// The sealing loop asks the pool for pending transactions (txpool_status)
	// over the endpoint: the in-process client does not expose raw calls,
	// and the pending block it could count is cached for seconds.
	if c.rpc, err = rpc.Dial(c.URL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.rpc.Close)

	c.Registry = c.deploy(t, reg, nil)
	args, err := res.ABI.Pack("", c.Registry)
	if err != nil {
		t.Fatal(err)
	}
	c.Resolver = c.deploy(t, res, args)

	go c.sealLoop()
	t.Cleanup(func() { close(c.stop); <-c.done })
	return c
}

// startBackend starts a simulated backend serving HTTP JSON-RPC on a free
// loopback port. The port is found by listening on port 0 and closing the
// listener, so another process may take it in between: then the node fails
// to start (NewBackend panics) and another port is tried.
func startBackend(t testing.TB, alloc types.GenesisAlloc) (*simulated.Backend, string) {
	t.Helper()
	var lastErr any
	for range 5 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("enstest: no free loopback port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		sim, err := func() (sim *simulated.Backend, err error) {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("%v", r)
				}
			}()
			return simulated.NewBackend(alloc, func(nc *node.Config, _ *ethconfig.Config) {
				nc.HTTPHost = "127.0.0.1"
				nc.HTTPPort = port
				nc.HTTPModules = []string{"eth", "net", "web3", "txpool"}
			}), nil
		}()
		if err != nil {
			lastErr = err
			continue
		}
		url := fmt.Sprintf("http://127.0.0.1:%d", port)
		if err := checkEndpoint(url); err != nil {
			_ = sim.Close()
			lastErr = err
			continue
		}
		return sim, url
	}
	t.Fatalf("enstest: could not start the simulated chain's HTTP endpoint: %v", lastErr)
	return nil, ""
}

// checkEndpoint makes sure it is our chain that answers at url.
func checkEndpoint(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := ethclient.DialContext(ctx, url)
	if err != nil {
		return err
	}
	defer cl.Close()
	id, err := cl.ChainID(ctx)
	if err != nil {
		return err
	}
	if id.Int64() != ChainID {
		return fmt.Errorf("%s answers chain id %s, want %d", url, id, ChainID)
	}
	return nil
}

// sealLoop seals a block whenever the pool holds a pending transaction.
func (c *Chain) sealLoop() {
	defer close(c.done)
	tick := time.NewTicker(sealEvery)
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		}
		var status struct{ Pending hexutil.Uint }
		if err := c.rpc.Call(&status, "txpool_status"); err != nil || status.Pending == 0 {
			continue
		}
		c.Seal()
	}
}

// Seal seals a block now, with whatever transactions are pending.
func (c *Chain) Seal() {
	c.sealMu.Lock()
	defer c.sealMu.Unlock()
	c.sim.Commit()
}

// Client returns an in-process client of the chain.
func (c *Chain) Client() simulated.Client { return c.client }

// Address returns the address of a key.
func Address(k *ecdsa.PrivateKey) common.Address { return crypto.PubkeyToAddress(k.PublicKey) }

// Transact sends a transaction from key (gas estimated), seals it and
// returns its receipt; a failure or a revert fails the test.
func (c *Chain) Transact(t testing.TB, from *ecdsa.PrivateKey, to *common.Address, value *big.Int, data []byte) *types.Receipt {
	t.Helper()
	c.txMu.Lock()
	defer c.txMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if value == nil {
		value = new(big.Int)
	}
	nonce, err := c.client.PendingNonceAt(ctx, Address(from))
	if err != nil {
		t.Fatal(err)
	}
	head, err := c.client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	gas, err := c.client.EstimateGas(ctx, ethereum.CallMsg{From: Address(from), To: to, Value: value, Data: data})
	if err != nil {
		t.Fatalf("enstest: transaction from %s to %v would fail: %v", Address(from), to, err)
	}
	tip := big.NewInt(1e9)
	tx := types.NewTx(&types.DynamicFeeTx{
		ChainID: big.NewInt(ChainID), Nonce: nonce, GasTipCap: tip,
		GasFeeCap: new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2))),
		Gas:       gas + gas/5, To: to, Value: value, Data: data,
	})
	signed, err := types.SignTx(tx, types.LatestSignerForChainID(big.NewInt(ChainID)), from)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.client.SendTransaction(ctx, signed); err != nil {
		t.Fatal(err)
	}
	c.Seal()
	r, err := c.client.TransactionReceipt(ctx, signed.Hash())
	if err != nil {
		t.Fatalf("enstest: receipt of %s: %v", signed.Hash(), err)
	}
	if r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("enstest: transaction %s to %v reverted", signed.Hash(), to)
	}
	return r
}

func (c *Chain) deploy(t testing.TB, a Artefact, ctorArgs []byte) common.Address {
	t.Helper()
	r := c.Transact(t, c.Deployer, nil, nil, append(append([]byte{}, a.Bytecode...), ctorArgs...))
	code, err := c.client.CodeAt(context.Background(), r.ContractAddress, nil)
	if err != nil || len(code) == 0 {
		t.Fatalf("enstest: deployment left no code at %s: %v", r.ContractAddress, err)
	}
	return r.ContractAddress
}

// callTx packs method with args for a and sends it to `to` from `from`.
func (c *Chain) callTx(t testing.TB, a abi.ABI, to common.Address, from *ecdsa.PrivateKey, method string, args ...any) {
	t.Helper()
	data, err := a.Pack(method, args...)
	if err != nil {
		t.Fatal(err)
	}
	c.Transact(t, from, &to, nil, data)
}

// view calls a read-only method of a at to, at the latest block.
func (c *Chain) view(t testing.TB, a abi.ABI, to common.Address, method string, args ...any) any {
	t.Helper()
	data, err := a.Pack(method, args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.client.CallContract(context.Background(), ethereum.CallMsg{To: &to, Data: data}, nil)
	if err != nil {
		t.Fatalf("enstest: %s: %v", method, err)
	}
	v, err := a.Unpack(method, out)
	if err != nil || len(v) != 1 {
		t.Fatalf("enstest: %s answered %x: %v", method, out, err)
	}
	return v[0]
}

// Fund sends wei from the Deployer to addr.
func (c *Chain) Fund(t testing.TB, addr common.Address, wei *big.Int) {
	t.Helper()
	c.Transact(t, c.Deployer, &addr, wei, nil)
}

// NewAccount returns a new key holding 10 ether.
func (c *Chain) NewAccount(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	c.Fund(t, Address(k), new(big.Int).Mul(big.NewInt(10), Ether))
	return k
}

// Balance returns addr's balance at the latest block.
func (c *Chain) Balance(t testing.TB, addr common.Address) *big.Int {
	t.Helper()
	b, err := c.client.BalanceAt(context.Background(), addr, nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Register makes owner the registry owner of name, with the PublicResolver as
// its resolver. The parent names are created on the way (owned by the
// Deployer) when they do not exist. name must be normalised already: ASCII
// lower-case labels of letters, digits, '-' and '_'.
func (c *Chain) Register(t testing.TB, name string, owner common.Address) {
	t.Helper()
	labels, err := splitName(name)
	if err != nil {
		t.Fatal(err)
	}
	deployer := Address(c.Deployer)
	parent := [32]byte{}
	for i := len(labels) - 1; i >= 0; i-- {
		suffix := strings.Join(labels[i:], ".")
		node := Namehash(suffix)
		label := crypto.Keccak256Hash([]byte(labels[i]))
		if i > 0 {
			if o := c.Owner(t, suffix); o != deployer {
				if o != (common.Address{}) {
					t.Fatalf("enstest: parent %s is owned by %s, not the deployer", suffix, o)
				}
				c.callTx(t, c.RegistryABI, c.Registry, c.Deployer, "setSubnodeOwner", parent, label, deployer)
			}
			parent = node
			continue
		}
		c.callTx(t, c.RegistryABI, c.Registry, c.Deployer, "setSubnodeOwner", parent, label, deployer)
		c.callTx(t, c.RegistryABI, c.Registry, c.Deployer, "setResolver", node, c.Resolver)
		if owner != deployer {
			c.callTx(t, c.RegistryABI, c.Registry, c.Deployer, "setOwner", node, owner)
		}
	}
	if got := c.Owner(t, name); got != owner {
		t.Fatalf("enstest: after registering %s its owner is %s, want %s", name, got, owner)
	}
}

// Owner reads the registry owner of name (normalised, see Register).
func (c *Chain) Owner(t testing.TB, name string) common.Address {
	t.Helper()
	return c.view(t, c.RegistryABI, c.Registry, "owner", nodeOf(t, name)).(common.Address)
}

// ResolverOf reads the resolver the registry holds for name.
func (c *Chain) ResolverOf(t testing.TB, name string) common.Address {
	t.Helper()
	return c.view(t, c.RegistryABI, c.Registry, "resolver", nodeOf(t, name)).(common.Address)
}

// Text reads the text record key of name from the PublicResolver, through
// the contract's own ABI; a record never set reads as "".
func (c *Chain) Text(t testing.TB, name, key string) string {
	t.Helper()
	return c.view(t, c.ResolverABI, c.Resolver, "text", nodeOf(t, name), key).(string)
}

// SetText writes the text record key of name on the PublicResolver, signed
// by from; the test fails if the resolver refuses.
func (c *Chain) SetText(t testing.TB, from *ecdsa.PrivateKey, name, key, value string) {
	t.Helper()
	c.callTx(t, c.ResolverABI, c.Resolver, from, "setText", nodeOf(t, name), key, value)
}

func nodeOf(t testing.TB, name string) [32]byte {
	t.Helper()
	if _, err := splitName(name); err != nil {
		t.Fatal(err)
	}
	return Namehash(name)
}

// splitName checks that name is a simple normalised name and returns its
// labels.
func splitName(name string) ([]string, error) {
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if l == "" {
			return nil, fmt.Errorf("enstest: name %q has an empty label", name)
		}
		for _, r := range l {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				return nil, fmt.Errorf("enstest: name %q: only normalised ASCII labels (a-z 0-9 - _) are supported", name)
			}
		}
	}
	return labels, nil
}

// Namehash is EIP-137's namehash of an already normalised name, written
// independently of package ens so that tests can cross-check it:
// namehash("") is 32 zero bytes, namehash(label.rest) is
// keccak256(namehash(rest) ‖ keccak256(label)).
func Namehash(name string) [32]byte {
	var node [32]byte
	if name == "" {
		return node
	}
	labels := strings.Split(name, ".")
	for i := len(labels) - 1; i >= 0; i-- {
		node = crypto.Keccak256Hash(node[:], crypto.Keccak256([]byte(labels[i])))
	}
	return node
}

// WriteKeyFile writes key as 64 hex digits and a newline to path, mode 0600:
// the format ens.LoadKeyFile reads.
func WriteKeyFile(t testing.TB, path string, key *ecdsa.PrivateKey) {
	t.Helper()
	text := hex.EncodeToString(crypto.FromECDSA(key)) + "\n"
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
