package envelope

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Format constants. docs/envelope.md specifies the layout they describe.
const (
	// Magic opens every envelope.
	Magic = "AGSENV"
	// Version1 is the only envelope format version this package writes and reads.
	Version1 = 1

	// KeyIDSize is the size of a key id in the header.
	KeyIDSize = 16
	// SaltSize is the size of the per-file salt in the header.
	SaltSize = 32

	// MinChunkSize and MaxChunkSize bound the plaintext chunk size a header may
	// declare; MaxChunkSize also bounds the memory Decrypt allocates.
	MinChunkSize = 256
	MaxChunkSize = 16 << 20
	// DefaultChunkSize is the chunk size Encrypt uses unless told otherwise.
	DefaultChunkSize = 64 << 10

	// KDFArgon2id is the KDF id of argon2id (version 0x13) in a header KDF block.
	KDFArgon2id = 1
	// MinKDFSaltSize and MaxKDFSaltSize bound a passphrase salt.
	MinKDFSaltSize = 16
	MaxKDFSaltSize = 64

	maxCipherIDLen = 32

	flagRandomized = 0x01
	flagKDF        = 0x02
	knownFlags     = flagRandomized | flagKDF

	fixedPrefixLen = len(Magic) + 3 // magic, version, flags, cipher id length
	kdfFixedLen    = 1 + 4 + 4 + 1 + 1
)

// KDFHeader is the KDF block of a header: how the master key was derived from a
// passphrase. It lets any machine that knows the passphrase re-derive the key
// from the blob alone.
type KDFHeader struct {
	Params KDFParams
	Salt   []byte
}

// Header is the decoded envelope header.
type Header struct {
	Version    uint8
	Randomized bool   // the file salt is random (randomized mode), not derived
	CipherID   string // e.g. "aes-256-gcm-v1"
	ChunkSize  uint32 // plaintext bytes per chunk (the last chunk may be shorter)
	KeyID      KeyID
	Salt       [SaltSize]byte
	KDF        *KDFHeader // nil when the master key came from a key file
}

// Size returns the encoded size of h in bytes.
func (h *Header) Size() int {
	n := fixedPrefixLen + len(h.CipherID) + 4 + KeyIDSize + SaltSize
	if h.KDF != nil {
		n += kdfFixedLen + len(h.KDF.Salt)
	}
	return n
}

// MarshalBinary encodes h. It refuses a header that ParseHeader would refuse.
func (h *Header) MarshalBinary() ([]byte, error) {
	if err := h.validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, h.Size())
	b = append(b, Magic...)
	b = append(b, h.Version)
	var flags byte
	if h.Randomized {
		flags |= flagRandomized
	}
	if h.KDF != nil {
		flags |= flagKDF
	}
	b = append(b, flags, byte(len(h.CipherID)))
	b = append(b, h.CipherID...)
	b = binary.BigEndian.AppendUint32(b, h.ChunkSize)
	b = append(b, h.KeyID[:]...)
	b = append(b, h.Salt[:]...)
	if h.KDF != nil {
		b = append(b, KDFArgon2id)
		b = binary.BigEndian.AppendUint32(b, h.KDF.Params.Time)
		b = binary.BigEndian.AppendUint32(b, h.KDF.Params.MemoryKiB)
		b = append(b, h.KDF.Params.Threads, byte(len(h.KDF.Salt)))
		b = append(b, h.KDF.Salt...)
	}
	return b, nil
}

func (h *Header) validate() error {
	if h.Version != Version1 {
		return fmt.Errorf("%w: unsupported format version %d (this build reads version %d)", ErrBadHeader, h.Version, Version1)
	}
	if err := validateCipherID(h.CipherID); err != nil {
		return err
	}
	if err := validateChunkSize(int64(h.ChunkSize)); err != nil {
		return fmt.Errorf("%w: %w", ErrBadHeader, err)
	}
	if h.KDF != nil {
		if err := h.KDF.Params.validate(); err != nil {
			return fmt.Errorf("%w: %w", ErrBadHeader, err)
		}
		if err := validateKDFSalt(h.KDF.Salt); err != nil {
			return fmt.Errorf("%w: %w", ErrBadHeader, err)
		}
	}
	return nil
}

func validateCipherID(id string) error {
	if len(id) == 0 || len(id) > maxCipherIDLen {
		return fmt.Errorf("%w: cipher id length %d, want 1..%d", ErrBadHeader, len(id), maxCipherIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return fmt.Errorf("%w: cipher id %q has byte 0x%02x outside [a-z0-9._-]", ErrBadHeader, id, c)
		}
	}
	return nil
}

func validateChunkSize(n int64) error {
	if n < MinChunkSize || n > MaxChunkSize {
		return fmt.Errorf("%w: chunk size %d, want %d..%d", ErrBadOptions, n, MinChunkSize, MaxChunkSize)
	}
	return nil
}

// ParseHeader decodes the header at the start of b and returns it with its
// encoded length. The bytes after the header are not looked at. A b that ends
// inside the header gives ErrTruncated; anything else malformed ErrBadHeader.
func ParseHeader(b []byte) (Header, int, error) {
	h, raw, err := readHeader(bytes.NewReader(b))
	if err != nil {
		return Header{}, 0, err
	}
	return h, len(raw), nil
}

// ReadHeader reads exactly one header from r and returns it with its raw bytes.
// It reads nothing past the header, so a caller can choose a Cipher by
// h.CipherID and hand it io.MultiReader(bytes.NewReader(raw), r).
func ReadHeader(ctx context.Context, r io.Reader) (Header, []byte, error) {
	if err := ctx.Err(); err != nil {
		return Header{}, nil, err
	}
	return readHeader(r)
}

// readHeader reads a header field group by field group, so it never reads past
// the header and never allocates more than the header's bounded size.
func readHeader(r io.Reader) (Header, []byte, error) {
	var h Header
	raw := make([]byte, 0, 128)

	read := func(n int, what string) ([]byte, error) {
		start := len(raw)
		raw = append(raw, make([]byte, n)...)
		got, err := io.ReadFull(r, raw[start:])
		if err == nil {
			return raw[start:], nil
		}
		raw = raw[:start+got]
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			if !bytes.HasPrefix(raw, []byte(Magic)) && !bytes.HasPrefix([]byte(Magic), raw) {
				return nil, fmt.Errorf("%w: not an agentstate envelope (starts %x, want magic %q)", ErrBadHeader, raw, Magic)
			}
			return nil, fmt.Errorf("%w: input ends inside the header (%s) after %d bytes", ErrTruncated, what, len(raw))
		}
		return nil, fmt.Errorf("envelope: reading header (%s): %w", what, err)
	}

	p, err := read(fixedPrefixLen, "magic, version, flags")
	if err != nil {
		return h, nil, err
	}
	if string(p[:len(Magic)]) != Magic {
		return h, nil, fmt.Errorf("%w: not an agentstate envelope (starts %x, want magic %q)", ErrBadHeader, p[:len(Magic)], Magic)
	}
	h.Version = p[len(Magic)]
	if h.Version != Version1 {
		return h, nil, fmt.Errorf("%w: unsupported format version %d (this build reads version %d)", ErrBadHeader, h.Version, Version1)
	}
	flags := p[len(Magic)+1]
	if flags&^knownFlags != 0 {
		return h, nil, fmt.Errorf("%w: unknown flag bits 0x%02x", ErrBadHeader, flags&^knownFlags)
	}
	h.Randomized = flags&flagRandomized != 0
	idLen := int(p[len(Magic)+2])
	if idLen == 0 || idLen > maxCipherIDLen {
		return h, nil, fmt.Errorf("%w: cipher id length %d, want 1..%d", ErrBadHeader, idLen, maxCipherIDLen)
	}

	p, err = read(idLen+4+KeyIDSize+SaltSize, "cipher id, chunk size, key id, salt")
	if err != nil {
		return h, nil, err
	}
	h.CipherID = string(p[:idLen])
	if err := validateCipherID(h.CipherID); err != nil {
		return h, nil, err
	}
	p = p[idLen:]
	h.ChunkSize = binary.BigEndian.Uint32(p)
	if err := validateChunkSize(int64(h.ChunkSize)); err != nil {
		return h, nil, fmt.Errorf("%w: %w", ErrBadHeader, err)
	}
	copy(h.KeyID[:], p[4:4+KeyIDSize])
	copy(h.Salt[:], p[4+KeyIDSize:])

	if flags&flagKDF != 0 {
		p, err = read(kdfFixedLen, "KDF block")
		if err != nil {
			return h, nil, err
		}
		if p[0] != KDFArgon2id {
			return h, nil, fmt.Errorf("%w: unknown KDF id %d (want %d, argon2id)", ErrBadHeader, p[0], KDFArgon2id)
		}
		params := KDFParams{
			Time:      binary.BigEndian.Uint32(p[1:5]),
			MemoryKiB: binary.BigEndian.Uint32(p[5:9]),
			Threads:   p[9],
		}
		if err := params.validate(); err != nil {
			return h, nil, fmt.Errorf("%w: %w", ErrBadHeader, err)
		}
		saltLen := int(p[10])
		if saltLen < MinKDFSaltSize || saltLen > MaxKDFSaltSize {
			return h, nil, fmt.Errorf("%w: KDF salt length %d, want %d..%d", ErrBadHeader, saltLen, MinKDFSaltSize, MaxKDFSaltSize)
		}
		p, err = read(saltLen, "KDF salt")
		if err != nil {
			return h, nil, err
		}
		h.KDF = &KDFHeader{Params: params, Salt: bytes.Clone(p)}
	}
	return h, raw, nil
}
