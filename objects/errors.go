package objects

import (
	"errors"
	"fmt"
)

var (
	ErrBadCID       = errors.New("objects: malformed CID")
	ErrBadKey       = errors.New("objects: invalid key")
	ErrNotFound     = errors.New("objects: block not found")
	ErrNonCanonical = errors.New("objects: non-canonical encoding")
	ErrBadObject    = errors.New("objects: malformed object")
	ErrHashMismatch = errors.New("objects: block hash mismatch")
)

// NotFoundError names a block that a store does not hold.
type NotFoundError struct{ CID CID }

func (e *NotFoundError) Error() string   { return fmt.Sprintf("objects: block %s not found", e.CID) }
func (e *NotFoundError) Is(t error) bool { return t == ErrNotFound }

// HashMismatchError reports a block whose bytes do not hash to its CID:
// storage corruption or tampering.
type HashMismatchError struct {
	Expected CID // the CID the block was stored under
	Actual   CID // the CID its bytes hash to
}

func (e *HashMismatchError) Error() string {
	return fmt.Sprintf("objects: block %s is corrupt: its bytes hash to %s", e.Expected, e.Actual)
}
func (e *HashMismatchError) Is(t error) bool { return t == ErrHashMismatch }

// KeyError names an invalid key and why.
type KeyError struct {
	Key    string
	Reason string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("objects: invalid key %q: %s", e.Key, e.Reason)
}
func (e *KeyError) Is(t error) bool { return t == ErrBadKey }
