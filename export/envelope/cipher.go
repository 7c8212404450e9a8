package envelope

import (
	"context"
	"io"
)

// Cipher seals and opens snapshot blobs. Implementations are safe for concurrent
// use.
type Cipher interface {
	// ID names the cipher and its envelope format, e.g. "aes-256-gcm-v1". It is
	// recorded in every blob header.
	ID() string
	// Encrypt streams plaintext from src to dst. contentHash is the sha256 of the
	// whole plaintext, computed by the caller (the plaintext is a deterministic
	// tar). A deterministic cipher derives the blob's keys from it and checks it;
	// on a mismatch Encrypt fails with ErrContentHash before writing the final
	// chunk, and the caller must discard what was written.
	Encrypt(ctx context.Context, dst io.Writer, src io.Reader, contentHash [32]byte) error
	// Decrypt streams plaintext to dst. It authenticates every chunk before
	// writing it and detects truncation (a missing final chunk), reordering,
	// dropped or swapped chunks, trailing data and tampering. On failure dst may
	// already hold the plaintext of the chunks before the failing one: a caller
	// that must write nothing on failure decrypts into a temporary file and
	// renames it into place only when Decrypt returns nil.
	Decrypt(ctx context.Context, dst io.Writer, src io.Reader) error
}

// Sizer is an optional ability of a Cipher: knowing the exact ciphertext size of
// a plaintext ahead of encryption (for example to declare an upload's length).
type Sizer interface {
	// CiphertextSize returns the exact size of the blob Encrypt writes for a
	// plaintext of plaintextSize bytes.
	CiphertextSize(plaintextSize int64) (int64, error)
}

// Interface checks.
var (
	_ Cipher = (*AESGCM)(nil)
	_ Sizer  = (*AESGCM)(nil)
)
