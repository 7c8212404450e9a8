package ens

import (
	"fmt"

	"github.com/adraffy/go-ens-normalize/ensip15"
	"golang.org/x/crypto/sha3"
)

// Normalize returns the ENSIP-15 normalised form of name, or an error that
// matches ErrInvalidName and wraps the ENSIP-15 reason (disallowed character,
// empty label, illegal script mixture, confusable, misplaced underscore, ...).
//
// It implements the whole of ENSIP-15 through github.com/adraffy/go-ens-normalize,
// the Go port of the reference implementation, which passes the ENSIP-15
// validation suite. As ENSIP-15 specifies, the empty name normalises to ""
// (the root); the Client refuses it where a real name is needed.
func Normalize(name string) (string, error) {
	norm, err := normalize(name)
	if err != nil {
		return "", &Error{Op: "normalize", Name: name, Err: fmt.Errorf("%w: %w", ErrInvalidName, err)}
	}
	return norm, nil
}

// normalize guards the dependency: a panic on hostile input becomes an error.
func normalize(name string) (norm string, err error) {
	defer func() {
		if r := recover(); r != nil {
			norm, err = "", fmt.Errorf("normaliser failed: %v", r)
		}
	}()
	return ensip15.Shared().Normalize(name)
}

// Namehash returns the EIP-137 namehash (the node) of name:
//
//	namehash("")            = 0x00…00
//	namehash(label + "." + rest) = keccak256(namehash(rest) || keccak256(label))
//
// Namehash hashes the name exactly as given; normalise it first with
// Normalize (the Client does). Labels are split on ".".
func Namehash(name string) [32]byte {
	var node, label [32]byte
	if name == "" {
		return node
	}
	h := sha3.NewLegacyKeccak256()
	end := len(name)
	for i := len(name) - 1; i >= -1; i-- {
		if i >= 0 && name[i] != '.' {
			continue
		}
		hashLabel(h, name[i+1:end], &label)
		combine(h, &node, &label)
		end = i
	}
	return node
}

type keccak interface {
	Reset()
	Write([]byte) (int, error)
	Sum([]byte) []byte
}

func hashLabel(h keccak, l string, out *[32]byte) {
	h.Reset()
	_, _ = h.Write([]byte(l))
	h.Sum(out[:0])
}

func combine(h keccak, node, label *[32]byte) {
	h.Reset()
	_, _ = h.Write(node[:])
	_, _ = h.Write(label[:])
	h.Sum(node[:0])
}
