package runtime

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

// ParsePublicKey parses an ed25519 public key written as 64 hex digits or
// as standard or URL-safe base64 (with or without padding).
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil && len(b) == ed25519.PublicKeySize {
		return ed25519.PublicKey(b), nil
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) == ed25519.PublicKeySize {
			return ed25519.PublicKey(b), nil
		}
	}
	return nil, fmt.Errorf("%w: want an ed25519 public key as 64 hex digits or base64 of 32 bytes", ErrBadSignature)
}

// LoadOrCreateKey reads an operator key file (the 32-byte ed25519 seed as 64
// hex digits and a newline), creating it with a fresh random key and mode
// 0600 when it does not exist. Alongside it, path+".pub" holds the public
// key in hex, for 'agentstate receipts --verify --pub'.
func LoadOrCreateKey(ctx context.Context, path string) (ed25519.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err == nil {
		seed, err := hex.DecodeString(string(bytes.TrimSpace(data)))
		if err != nil || len(seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("%w: %s: want %d bytes of seed as hex", ErrNoSigner, path, ed25519.SeedSize)
		}
		return ed25519.NewKeyFromSeed(seed), nil
	}
	if !os.IsNotExist(err) {
		return nil, fmt.Errorf("runtime: reading operator key: %w", err)
	}
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("runtime: creating operator key: %w", err)
	}
	_, err = fmt.Fprintf(f, "%x\n", priv.Seed())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.WriteFile(path+".pub", []byte(hex.EncodeToString(priv.Public().(ed25519.PublicKey))+"\n"), 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("runtime: writing operator key: %w", err)
	}
	return priv, nil
}
