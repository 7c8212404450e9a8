package ens

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
)

// DefaultRegistryHex is the address of the ENS registry on Ethereum Mainnet
// and on Sepolia.
const DefaultRegistryHex = "0x00000000000C2E074eC69A0dFb2997BA6C7d2e1e"

// DefaultRegistry is DefaultRegistryHex as an address.
var DefaultRegistry = common.HexToAddress(DefaultRegistryHex)

// Backend is the part of an Ethereum JSON-RPC client the Client uses.
// *ethclient.Client and the client of go-ethereum's simulated chain
// (ethclient/simulated) implement it. Reads use only CallContract and CodeAt.
type Backend interface {
	CallContract(ctx context.Context, call ethereum.CallMsg, blockNumber *big.Int) ([]byte, error)
	CodeAt(ctx context.Context, account common.Address, blockNumber *big.Int) ([]byte, error)
	ChainID(ctx context.Context) (*big.Int, error)
	HeaderByNumber(ctx context.Context, number *big.Int) (*types.Header, error)
	PendingNonceAt(ctx context.Context, account common.Address) (uint64, error)
	SuggestGasPrice(ctx context.Context) (*big.Int, error)
	SuggestGasTipCap(ctx context.Context) (*big.Int, error)
	EstimateGas(ctx context.Context, call ethereum.CallMsg) (uint64, error)
	SendTransaction(ctx context.Context, tx *types.Transaction) error
	TransactionReceipt(ctx context.Context, txHash common.Hash) (*types.Receipt, error)
}

var _ Backend = (*ethclient.Client)(nil)

// Client reads and writes ENS records through one registry. It is safe for
// concurrent use; its own transactions are sent one at a time so that nonces
// do not collide.
type Client struct {
	backend  Backend
	registry common.Address
	close    func()

	sendMu sync.Mutex // held from nonce lookup to send

	chainMu sync.Mutex
	chainID *big.Int
}

// NewClient returns a Client that talks to the registry at registry through
// backend.
func NewClient(backend Backend, registry common.Address) *Client {
	return &Client{backend: backend, registry: registry}
}

// Dial connects to the JSON-RPC endpoint rpcURL (http(s), ws(s) or an IPC
// path) and checks that it answers eth_chainId before returning, so an
// unreachable endpoint fails here, within ctx. Errors match ErrRPC and show
// the endpoint without credentials, path or query.
func Dial(ctx context.Context, rpcURL string, registry common.Address) (*Client, error) {
	rc, err := rpc.DialContext(ctx, rpcURL)
	if err != nil {
		return nil, fmt.Errorf("ens: dial %s: %w", redactURL(rpcURL), rpcFail(err))
	}
	ec := ethclient.NewClient(rc)
	id, err := ec.ChainID(ctx)
	if err != nil {
		ec.Close()
		return nil, fmt.Errorf("ens: dial %s: eth_chainId: %w", redactURL(rpcURL), rpcFail(err))
	}
	c := NewClient(ec, registry)
	c.chainID = id
	c.close = ec.Close
	return c, nil
}

// Close releases the connection opened by Dial. It does nothing for a
// Client made by NewClient.
func (c *Client) Close() {
	if c.close != nil {
		c.close()
	}
}

// Registry returns the registry address the client uses.
func (c *Client) Registry() common.Address { return c.registry }

// node normalises name and returns its namehash. The empty name (the root)
// is refused: no agent pointer lives there.
func node(name string) ([32]byte, error) {
	norm, err := Normalize(name)
	if err != nil {
		return [32]byte{}, err
	}
	if norm == "" {
		return [32]byte{}, &Error{Op: "normalize", Name: name, Err: fmt.Errorf("%w: empty name", ErrInvalidName)}
	}
	return Namehash(norm), nil
}

// Resolver returns the resolver the registry names for name (registry
// resolver(bytes32), selector 0x0178b8bf). The zero address is reported as an
// error matching ErrNoResolver.
func (c *Client) Resolver(ctx context.Context, name string) (common.Address, error) {
	n, err := node(name)
	if err != nil {
		return common.Address{}, err
	}
	return c.resolver(ctx, name, n)
}

func (c *Client) resolver(ctx context.Context, name string, n [32]byte) (common.Address, error) {
	addr, err := c.callAddress(ctx, name, "registry", c.registry, "resolver", n)
	if err != nil {
		return common.Address{}, err
	}
	if addr == (common.Address{}) {
		return common.Address{}, &Error{Op: "resolver(bytes32) on registry " + c.registry.Hex(), Name: name, Err: ErrNoResolver}
	}
	return addr, nil
}

// Owner returns the registry owner of name (registry owner(bytes32),
// selector 0x02571be3); the zero address if nobody owns it.
func (c *Client) Owner(ctx context.Context, name string) (common.Address, error) {
	n, err := node(name)
	if err != nil {
		return common.Address{}, err
	}
	return c.callAddress(ctx, name, "registry", c.registry, "owner", n)
}

func (c *Client) callAddress(ctx context.Context, name, what string, to common.Address, method string, n [32]byte) (common.Address, error) {
	out, err := c.call(ctx, name, what, to, registryABI(), method, n)
	if err != nil {
		return common.Address{}, err
	}
	addr, ok := out[0].(common.Address)
	if !ok {
		return common.Address{}, &Error{Op: opName(registryABI(), method, what, to), Name: name,
			Err: fmt.Errorf("%w: got %T, want address", ErrBadResponse, out[0])}
	}
	return addr, nil
}

// Text returns the text record key of name (resolver text(bytes32,string),
// selector 0x59d1d43c). A record that was never set reads as "", as it does
// on chain.
func (c *Client) Text(ctx context.Context, name, key string) (string, error) {
	n, err := node(name)
	if err != nil {
		return "", err
	}
	res, err := c.resolver(ctx, name, n)
	if err != nil {
		return "", err
	}
	return c.text(ctx, name, res, n, key)
}

func (c *Client) text(ctx context.Context, name string, res common.Address, n [32]byte, key string) (string, error) {
	out, err := c.call(ctx, name, "resolver", res, resolverABI(), "text", n, key)
	if err != nil {
		return "", err
	}
	s, ok := out[0].(string)
	if !ok {
		return "", &Error{Op: opName(resolverABI(), "text", "resolver", res), Name: name,
			Err: fmt.Errorf("%w: got %T, want string", ErrBadResponse, out[0])}
	}
	return s, nil
}

// call runs a read-only contract call and decodes its result.
func (c *Client) call(ctx context.Context, name, what string, to common.Address, a abi.ABI, method string, args ...any) ([]any, error) {
	op := opName(a, method, what, to)
	data, err := a.Pack(method, args...)
	if err != nil {
		return nil, &Error{Op: op, Name: name, Err: fmt.Errorf("encode call: %w", err)}
	}
	out, err := c.backend.CallContract(ctx, ethereum.CallMsg{To: &to, Data: data}, nil)
	if err != nil {
		if isRevert(err) {
			return nil, &Error{Op: op, Name: name, Err: fmt.Errorf("%w: %w", ErrReverted, err)}
		}
		return nil, &Error{Op: op, Name: name, Err: rpcFail(err)}
	}
	if len(out) == 0 {
		// A call to an address without code succeeds with no data.
		code, cerr := c.backend.CodeAt(ctx, to, nil)
		if cerr == nil && len(code) == 0 {
			return nil, &Error{Op: op, Name: name, Err: fmt.Errorf("%w: %s %s has no code on this chain", ErrNotContract, what, to.Hex())}
		}
		return nil, &Error{Op: op, Name: name, Err: fmt.Errorf("%w: empty return data", ErrBadResponse)}
	}
	vals, err := a.Unpack(method, out)
	if err != nil || len(vals) != 1 {
		return nil, &Error{Op: op, Name: name, Err: fmt.Errorf("%w: %d bytes do not decode: %w", ErrBadResponse, len(out), err)}
	}
	return vals, nil
}

// SetText sets the text record key of name to value with a transaction to the
// name's resolver (setText(bytes32,string,string), selector 0x10f13a8c),
// signed by signer, and waits (within ctx) until it is mined. It returns the
// transaction hash.
//
// What it detects: it first simulates the call (eth_estimateGas from the
// signer's address). If the resolver reverts — in simulation, or in the mined
// transaction — SetText reads the registry owner of the name: when the signer
// is not that owner the error is an *UnauthorisedError (errors.Is
// ErrUnauthorised); when the signer is the owner, the resolver refused for
// another reason and the error matches ErrReverted. The signer need not be
// the owner: resolvers may authorise other addresses (PublicResolver's
// setAuthorisation), so ownership alone never blocks the attempt.
//
// Fees: EIP-1559 (tip from eth_maxPriorityFeePerGas, fee cap twice the base
// fee plus the tip) when the chain has a base fee, else a legacy gas price.
// The gas limit is the estimate plus 20%.
func (c *Client) SetText(ctx context.Context, name, key, value string, signer *ecdsa.PrivateKey) (common.Hash, error) {
	tx, err := c.simulateSetText(ctx, name, key, value, signer)
	if err != nil {
		return common.Hash{}, err
	}
	return c.sendMined(ctx, name, tx.op, tx.node, tx.from, tx.resolver, tx.data, tx.gas, signer)
}

// sendMined sends a transaction to the resolver res, waits until it is
// mined, and turns a failed receipt into the same errors a refused
// simulation gives (refused).
func (c *Client) sendMined(ctx context.Context, name, op string, n [32]byte, from, res common.Address, data []byte, gas uint64, signer *ecdsa.PrivateKey) (common.Hash, error) {
	hash, err := c.send(ctx, name, op, from, res, data, gas, signer)
	if err != nil {
		return common.Hash{}, err
	}
	rcpt, err := c.waitMined(ctx, hash)
	if err != nil {
		return hash, &Error{Op: "wait for receipt of " + op + " transaction " + hash.Hex(), Name: name, Err: err}
	}
	if rcpt.Status != types.ReceiptStatusSuccessful {
		return hash, c.refused(ctx, name, n, from, res, hash, errors.New(op+": transaction status 0"))
	}
	if err := c.waitHead(ctx, rcpt.BlockNumber); err != nil {
		return hash, &Error{Op: op + " transaction " + hash.Hex() + ": mined in block " + rcpt.BlockNumber.String() + "; waiting for the chain's head to reach it", Name: name, Err: err}
	}
	return hash, nil
}

// waitHead polls until the chain's latest block is at least block: a node
// may hand out a transaction's receipt as soon as its block is stored,
// before making that block the head, and reads are at the latest block,
// so a write is not read back until then.
func (c *Client) waitHead(ctx context.Context, block *big.Int) error {
	if block == nil {
		return nil
	}
	wait := headPoll
	for {
		h, err := c.backend.HeaderByNumber(ctx, nil)
		if err == nil && h != nil && h.Number != nil && h.Number.Cmp(block) >= 0 {
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%w: %w", ErrNotMined, ctx.Err())
			}
			return rpcFail(err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w", ErrNotMined, ctx.Err())
		case <-t.C:
		}
		wait = min(wait*2, maxPoll)
	}
}

// setTextCall is a simulated setText, ready to send.
type setTextCall struct {
	node           [32]byte
	resolver, from common.Address
	op             string
	data           []byte
	gas            uint64
}

// simulateSetText finds name's resolver and simulates setText from the
// signer's address (eth_estimateGas), turning a revert into the same typed
// errors SetText returns. Nothing is sent.
func (c *Client) simulateSetText(ctx context.Context, name, key, value string, signer *ecdsa.PrivateKey) (setTextCall, error) {
	var tx setTextCall
	if signer == nil {
		return tx, &Error{Op: "setText", Name: name, Err: ErrNoSigner}
	}
	n, err := node(name)
	if err != nil {
		return tx, err
	}
	res, err := c.resolver(ctx, name, n)
	if err != nil {
		return tx, err
	}
	from := crypto.PubkeyToAddress(signer.PublicKey)
	op := opName(resolverABI(), "setText", "resolver", res)
	data, err := resolverABI().Pack("setText", n, key, value)
	if err != nil {
		return tx, &Error{Op: op, Name: name, Err: fmt.Errorf("encode call: %w", err)}
	}
	gas, err := c.backend.EstimateGas(ctx, ethereum.CallMsg{From: from, To: &res, Data: data})
	if err != nil {
		if isRevert(err) {
			return tx, c.refused(ctx, name, n, from, res, common.Hash{}, err)
		}
		return tx, &Error{Op: "estimate gas for " + op, Name: name, Err: rpcFail(err)}
	}
	return setTextCall{node: n, resolver: res, from: from, op: op, data: data, gas: gas + gas/5}, nil
}

// CheckSetText reports whether signer may set name's text record key to
// value, by simulating the call (no transaction, no gas spent): nil, or the
// error SetText would return (ErrNoResolver, ErrUnauthorised, ...).
func (c *Client) CheckSetText(ctx context.Context, name, key, value string, signer *ecdsa.PrivateKey) error {
	_, err := c.simulateSetText(ctx, name, key, value, signer)
	return err
}

// send builds, signs and submits one transaction.
func (c *Client) send(ctx context.Context, name, op string, from, to common.Address, data []byte, gas uint64, signer *ecdsa.PrivateKey) (common.Hash, error) {
	fail := func(step string, err error) (common.Hash, error) {
		return common.Hash{}, &Error{Op: step + " for " + op, Name: name, Err: rpcFail(err)}
	}
	chainID, err := c.chain(ctx)
	if err != nil {
		return fail("eth_chainId", err)
	}
	head, err := c.backend.HeaderByNumber(ctx, nil)
	if err != nil {
		return fail("read latest header", err)
	}

	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	nonce, err := c.backend.PendingNonceAt(ctx, from)
	if err != nil {
		return fail("read nonce", err)
	}
	var tx *types.Transaction
	if head.BaseFee != nil {
		tip, err := c.backend.SuggestGasTipCap(ctx)
		if err != nil {
			return fail("suggest gas tip", err)
		}
		feeCap := new(big.Int).Add(tip, new(big.Int).Mul(head.BaseFee, big.NewInt(2)))
		tx = types.NewTx(&types.DynamicFeeTx{
			ChainID: chainID, Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap,
			Gas: gas, To: &to, Data: data,
		})
	} else {
		price, err := c.backend.SuggestGasPrice(ctx)
		if err != nil {
			return fail("suggest gas price", err)
		}
		tx = types.NewTx(&types.LegacyTx{Nonce: nonce, GasPrice: price, Gas: gas, To: &to, Data: data})
	}
	signed, err := types.SignTx(tx, types.LatestSignerForChainID(chainID), signer)
	if err != nil {
		return common.Hash{}, &Error{Op: "sign " + op, Name: name, Err: err}
	}
	if err := c.backend.SendTransaction(ctx, signed); err != nil {
		return fail("send transaction", err)
	}
	return signed.Hash(), nil
}

// refused explains a resolver revert of setText: unauthorised signer or not.
func (c *Client) refused(ctx context.Context, name string, n [32]byte, from, res common.Address, tx common.Hash, cause error) error {
	op := opName(resolverABI(), "setText", "resolver", res)
	if tx != (common.Hash{}) {
		op += " transaction " + tx.Hex()
	}
	owner, err := c.callAddress(ctx, name, "registry", c.registry, "owner", n)
	if err != nil {
		return &Error{Op: op, Name: name, Err: fmt.Errorf("%w (%v); reading the owner to explain it failed: %w", ErrReverted, cause, err)}
	}
	if owner != from {
		return &UnauthorisedError{Name: name, Signer: from, Owner: owner, Resolver: res, Tx: tx}
	}
	return &Error{Op: op, Name: name, Err: fmt.Errorf("%w although signer %s owns the name in the registry: %w", ErrReverted, from.Hex(), cause)}
}

// chain returns the chain id, asking the backend once.
func (c *Client) chain(ctx context.Context) (*big.Int, error) {
	c.chainMu.Lock()
	defer c.chainMu.Unlock()
	if c.chainID == nil {
		id, err := c.backend.ChainID(ctx)
		if err != nil {
			return nil, err
		}
		c.chainID = id
	}
	return c.chainID, nil
}

// Receipt polling: first try at once, then back off to maxPoll.
const (
	firstPoll = 50 * time.Millisecond
	maxPoll   = 2 * time.Second
	// headPoll is the first wait for the head to reach a mined block: it
	// is usually there already, or a moment after.
	headPoll = 5 * time.Millisecond
)

// waitMined polls for the receipt of hash until it exists or ctx ends.
func (c *Client) waitMined(ctx context.Context, hash common.Hash) (*types.Receipt, error) {
	wait := firstPoll
	for {
		r, err := c.backend.TransactionReceipt(ctx, hash)
		if err == nil && r != nil {
			return r, nil
		}
		if err != nil && !errors.Is(err, ethereum.NotFound) {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%w: %w", ErrNotMined, ctx.Err())
			}
			return nil, rpcFail(err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w: %w", ErrNotMined, ctx.Err())
		case <-t.C:
		}
		wait = min(wait*2, maxPoll)
	}
}

// isRevert reports whether err is an EVM revert reported by the node: a
// JSON-RPC error with code 3 (what go-ethereum returns for reverts, with or
// without revert data) or, for nodes that use another code, a message that
// mentions "revert".
func isRevert(err error) bool {
	var re rpc.Error
	if errors.As(err, &re) && re.ErrorCode() == 3 {
		return true
	}
	return strings.Contains(strings.ToLower(err.Error()), "revert")
}

func opName(a abi.ABI, method, what string, to common.Address) string {
	return a.Methods[method].Sig + " on " + what + " " + to.Hex()
}

// rpcError is a failed RPC call: it matches ErrRPC and wraps the transport
// error, whose URL (if any) is redacted.
type rpcError struct{ err error }

func (e *rpcError) Error() string   { return "rpc call failed: " + e.err.Error() }
func (e *rpcError) Unwrap() []error { return []error{ErrRPC, e.err} }

// rpcFail wraps err as an rpcError. net/http reports the full endpoint URL,
// which often carries an API key, so a *url.Error's URL is redacted first.
func rpcFail(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redactURL(ue.URL)
	}
	return &rpcError{err: err}
}

// redactURL keeps the scheme and host of an endpoint and drops what often
// carries credentials (user info, path with API key, query).
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		if strings.Contains(raw, "://") {
			return "<unparsable endpoint URL>"
		}
		return raw // an IPC path
	}
	s := u.Scheme + "://" + u.Host
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		s += "/…"
	}
	return s
}
