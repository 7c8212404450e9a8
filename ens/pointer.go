package ens

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"sync"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
)

// PointerKey is the text record that holds the Walrus blob id of an agent's
// current snapshot.
const PointerKey = "agent-snapshot"

// ReadPointer returns the value of name's PointerKey text record. An unset
// (empty) record is an error matching ErrNoRecord; a name without a resolver
// matches ErrNoResolver.
func (c *Client) ReadPointer(ctx context.Context, name string) (string, error) {
	v, err := c.Text(ctx, name, PointerKey)
	if err != nil {
		return "", err
	}
	if v == "" {
		return "", &Error{Op: "read text record " + PointerKey, Name: name, Err: ErrNoRecord}
	}
	return v, nil
}

// WritePointer sets name's PointerKey text record to blobID (see SetText for
// signing, fees and errors) and returns the transaction hash. When the record
// already holds blobID nothing is sent and the zero hash is returned: a
// deterministic snapshot that did not change re-uploads to the same blob id,
// and re-pointing to it would only spend gas.
func (c *Client) WritePointer(ctx context.Context, name, blobID string, signer *ecdsa.PrivateKey) (common.Hash, error) {
	if blobID == "" {
		return common.Hash{}, &Error{Op: "write text record " + PointerKey, Name: name, Err: ErrEmptyPointer}
	}
	cur, err := c.Text(ctx, name, PointerKey)
	if err != nil {
		return common.Hash{}, err
	}
	if cur == blobID {
		return common.Hash{}, nil
	}
	return c.SetText(ctx, name, PointerKey, blobID, signer)
}

// BindingKey is the text record that binds the PointerKey record to the
// snapshot's content. Its value is written and parsed by the caller
// (agentstate's export/snapshot: "agentstate-binding/1 blob=ID ..."); it
// repeats the blob id, so a record pair that disagrees is detected.
const BindingKey = "agent-snapshot-binding"

// multicall(bytes[]) (selector 0xac9650d8): several calls to the resolver in
// one transaction, each run as if sent by the caller. The ENS PublicResolver
// has had it since @ensdomains/resolver 0.2.x.
var multicallABI = sync.OnceValue(func() abi.ABI {
	return mustABI(`[
 {"type":"function","name":"multicall","stateMutability":"nonpayable",
  "inputs":[{"name":"data","type":"bytes[]"}],"outputs":[{"name":"results","type":"bytes[]"}]}
]`)
})

// ReadPointerPair returns name's PointerKey and BindingKey text records, read
// from the same resolver. An unset PointerKey is an error matching
// ErrNoRecord; an unset BindingKey reads as "" and is for the caller to judge.
func (c *Client) ReadPointerPair(ctx context.Context, name string) (blobID, binding string, err error) {
	n, err := node(name)
	if err != nil {
		return "", "", err
	}
	res, err := c.resolver(ctx, name, n)
	if err != nil {
		return "", "", err
	}
	if blobID, err = c.text(ctx, name, res, n, PointerKey); err != nil {
		return "", "", err
	}
	if blobID == "" {
		return "", "", &Error{Op: "read text record " + PointerKey, Name: name, Err: ErrNoRecord}
	}
	if binding, err = c.text(ctx, name, res, n, BindingKey); err != nil {
		return "", "", err
	}
	return blobID, binding, nil
}

// WritePointerPair sets name's BindingKey record to binding and its
// PointerKey record to blobID, and returns the hash of the last transaction
// sent (the zero hash when both records already hold these values).
//
// Both records change in one transaction when the resolver has multicall
// (simulated first with eth_estimateGas). When the simulation reverts (a
// resolver without multicall, or a signer it does not authorise) the records
// are set one by one with SetText, which reports authorisation as SetText
// does: the binding first, then the blob id. A reader that checks that the
// binding names the blob id then sees, at any instant, the old pair, a pair
// that disagrees (refused), or the new pair — never the new blob id with the
// old binding accepted.
func (c *Client) WritePointerPair(ctx context.Context, name, blobID, binding string, signer *ecdsa.PrivateKey) (common.Hash, error) {
	if blobID == "" || binding == "" {
		return common.Hash{}, &Error{Op: "write text records " + BindingKey + ", " + PointerKey, Name: name, Err: ErrEmptyPointer}
	}
	if signer == nil {
		return common.Hash{}, &Error{Op: "setText", Name: name, Err: ErrNoSigner}
	}
	n, err := node(name)
	if err != nil {
		return common.Hash{}, err
	}
	res, err := c.resolver(ctx, name, n)
	if err != nil {
		return common.Hash{}, err
	}
	type rec struct{ key, value string }
	var todo []rec
	for _, r := range []rec{{BindingKey, binding}, {PointerKey, blobID}} {
		cur, err := c.text(ctx, name, res, n, r.key)
		if err != nil {
			return common.Hash{}, err
		}
		if cur != r.value {
			todo = append(todo, r)
		}
	}
	if len(todo) == 0 {
		return common.Hash{}, nil
	}
	if len(todo) > 1 {
		calls := make([][]byte, len(todo))
		for i, r := range todo {
			if calls[i], err = resolverABI().Pack("setText", n, r.key, r.value); err != nil {
				return common.Hash{}, &Error{Op: "setText", Name: name, Err: fmt.Errorf("encode call: %w", err)}
			}
		}
		data, err := multicallABI().Pack("multicall", calls)
		if err != nil {
			return common.Hash{}, &Error{Op: "multicall", Name: name, Err: fmt.Errorf("encode call: %w", err)}
		}
		from := crypto.PubkeyToAddress(signer.PublicKey)
		op := opName(multicallABI(), "multicall", "resolver", res)
		gas, err := c.backend.EstimateGas(ctx, ethereum.CallMsg{From: from, To: &res, Data: data})
		switch {
		case err == nil:
			return c.sendMined(ctx, name, op, n, from, res, data, gas+gas/5, signer)
		case !isRevert(err):
			return common.Hash{}, &Error{Op: "estimate gas for " + op, Name: name, Err: rpcFail(err)}
		}
		// Reverted in simulation: one record at a time, binding first.
	}
	var last common.Hash
	for _, r := range todo {
		if last, err = c.SetText(ctx, name, r.key, r.value, signer); err != nil {
			return last, err
		}
	}
	return last, nil
}
