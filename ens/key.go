package ens

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/ethereum/go-ethereum/crypto"
)

// maxKeyFile bounds how much of a key file is read: a hex key with 0x, CRLF and
// some whitespace is far below it.
const maxKeyFile = 4096

// LoadKeyFile reads an Ethereum private key stored as 64 hex digits (an
// optional 0x prefix and surrounding whitespace are allowed) from path.
// Errors match ErrBadKeyFile and name the path and the problem, never the
// file's content.
func LoadKeyFile(path string) (*ecdsa.PrivateKey, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ens: read key file: %w", err)
	}
	defer f.Close()
	buf, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	defer clear(buf)
	if err != nil {
		return nil, fmt.Errorf("ens: read key file %s: %w", path, err)
	}
	if len(buf) > maxKeyFile {
		return nil, fmt.Errorf("%w %s: larger than %d bytes", ErrBadKeyFile, path, maxKeyFile)
	}
	key, err := ParseKey(buf)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrBadKeyFile, path, err)
	}
	return key, nil
}

// ParseKey decodes a private key written as 64 hex digits, with an optional 0x
// prefix and surrounding whitespace. The error never quotes the input.
func ParseKey(text []byte) (*ecdsa.PrivateKey, error) {
	s := bytes.TrimSpace(text)
	if len(s) >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s = s[2:]
	}
	if len(s) != 64 {
		return nil, fmt.Errorf("want 64 hex digits (32 bytes), got %d characters", len(s))
	}
	raw := make([]byte, 32)
	defer clear(raw)
	if _, err := hex.Decode(raw, s); err != nil {
		return nil, fmt.Errorf("not hexadecimal")
	}
	key, err := crypto.ToECDSA(raw)
	if err != nil {
		// go-ethereum's message does not include the key bytes.
		return nil, fmt.Errorf("not a valid secp256k1 private key: %w", err)
	}
	return key, nil
}
