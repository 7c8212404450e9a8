package ens

import (
	"context"
	"crypto/ecdsa"

	"github.com/ethereum/go-ethereum/common"
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
