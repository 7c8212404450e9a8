package runtime

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"os"
)

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
