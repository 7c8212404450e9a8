package ens

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ethereum/go-ethereum/common"
)

// Sentinel errors. Errors returned by this package wrap one of them, so callers
// test with errors.Is.
var (
	// ErrInvalidName: the name is not ENSIP-15 normalisable (or is empty
	// where a name is required).
	ErrInvalidName = errors.New("ens: invalid name")
	// ErrNoResolver: the registry has no resolver (the zero address) for the name.
	ErrNoResolver = errors.New("ens: no resolver set")
	// ErrNoRecord: the resolver has no (or an empty) pointer text record for the name.
	ErrNoRecord = errors.New("ens: no text record")
	// ErrUnauthorised: the resolver rejected setText and the signer is not the
	// name's owner in the registry.
	ErrUnauthorised = errors.New("ens: signer not authorised for name")
	// ErrReverted: a contract call or transaction reverted for a reason other
	// than the one ErrUnauthorised reports.
	ErrReverted = errors.New("ens: execution reverted")
	// ErrNotContract: there is no contract code at the registry or resolver
	// address (wrong network, wrong address).
	ErrNotContract = errors.New("ens: no contract at address")
	// ErrBadResponse: a contract returned bytes that do not decode as the ABI says.
	ErrBadResponse = errors.New("ens: malformed contract response")
	// ErrRPC: the JSON-RPC endpoint could not be reached or answered with an error.
	ErrRPC = errors.New("ens: rpc call failed")
	// ErrBadKeyFile: a key file does not hold one hex-encoded secp256k1 private key.
	ErrBadKeyFile = errors.New("ens: bad key file")
	// ErrNotMined: the context ended before the transaction's receipt
	// appeared; the transaction may still be mined. The error also matches the
	// context's error.
	ErrNotMined = errors.New("ens: transaction not mined yet")
	// ErrNoSigner: a write was asked for without a signing key.
	ErrNoSigner = errors.New("ens: no signer key")
	// ErrEmptyPointer: WritePointer was asked to store an empty blob id.
	ErrEmptyPointer = errors.New("ens: empty pointer value")
)

// Error reports a failed operation on a name: which operation, which name (as
// the caller gave it), and why. Err wraps one of the sentinel errors and, for
// RPC failures, the underlying transport error.
type Error struct {
	Op   string // what was being done, e.g. "resolver(bytes32) on registry 0x…"
	Name string // the name as the caller passed it
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("ens: %q: %s: %s", e.Name, e.Op, strings.TrimPrefix(e.Err.Error(), "ens: "))
}

func (e *Error) Unwrap() error { return e.Err }

// UnauthorisedError reports that the resolver refused a setText and the signer
// is not the registry owner of the node. It matches ErrUnauthorised.
type UnauthorisedError struct {
	Name     string         // the name as the caller passed it
	Signer   common.Address // address of the signing key
	Owner    common.Address // registry owner of the node at the time of the check
	Resolver common.Address
	Tx       common.Hash // the mined, reverted transaction; zero if refused before sending
}

func (e *UnauthorisedError) Error() string {
	s := fmt.Sprintf("ens: %q: setText: signer %s is not authorised by resolver %s (registry owner is %s)",
		e.Name, e.Signer.Hex(), e.Resolver.Hex(), e.Owner.Hex())
	if e.Tx != (common.Hash{}) {
		s += "; transaction " + e.Tx.Hex() + " reverted"
	}
	return s
}

// Is makes errors.Is(err, ErrUnauthorised) true.
func (e *UnauthorisedError) Is(target error) bool { return target == ErrUnauthorised }
