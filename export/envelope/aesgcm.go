package envelope

import (
	"bytes"
	"cmp"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
	"math"
)

// CipherAES256GCMv1 is the ID of the AES-256-GCM chunked envelope.
const CipherAES256GCMv1 = "aes-256-gcm-v1"

const (
	tagSize                = 16
	noncePrefixSize        = 7
	fileKeyMaterial        = 32 + noncePrefixSize
	maxChunks       uint64 = math.MaxUint32 + 1 // chunk indexes 0..2^32-1
)

// Options tune an AESGCM cipher. The zero value is the default: deterministic
// mode, 64 KiB chunks.
type Options struct {
	// ChunkSize is the plaintext bytes per chunk, MinChunkSize..MaxChunkSize;
	// 0 means DefaultChunkSize. It only affects Encrypt: Decrypt follows the
	// header. Decrypt's memory use is about twice the blob's chunk size.
	ChunkSize int
	// Randomized draws each blob's file salt from Rand instead of deriving it
	// from the content hash, so equal plaintexts encrypt to unrelated blobs.
	// In randomized mode Encrypt ignores contentHash.
	Randomized bool
	// Rand is the randomness for randomized mode; nil means crypto/rand. A
	// cipher used from several goroutines needs a Rand safe for concurrent use.
	Rand io.Reader
	// MaxKDFMemoryKiB bounds the argon2id memory Decrypt spends when a blob's
	// header names passphrase parameters other than the cipher's own; 0 means
	// DefaultMaxKDFMemoryKiB.
	MaxKDFMemoryKiB uint32
	// MaxKDFTime, MaxKDFWorkKiB (memory in KiB times passes, which is what
	// the derivation's CPU time grows with) and MaxKDFThreads bound the rest
	// of such a header's parameters; 0 means DefaultMaxKDFTime,
	// DefaultMaxKDFWorkKiB and DefaultMaxKDFThreads.
	MaxKDFTime    uint32
	MaxKDFWorkKiB uint64
	MaxKDFThreads uint8
}

// AESGCM is the default Cipher: AES-256-GCM over fixed-size chunks in the
// versioned envelope described in docs/envelope.md. It is safe for concurrent use.
type AESGCM struct {
	key        Key
	keyID      KeyID
	haveKey    bool // false only for a decrypt-only passphrase cipher
	chunkSize  uint32
	randomized bool
	rand       io.Reader
	maxKDFMem  uint32
	maxKDFTime uint32
	maxKDFWork uint64
	maxKDFLane uint8
	pass       []byte     // nil unless built from a passphrase
	kdf        *KDFHeader // the KDF block written into headers, or nil
}

// NewAESGCM returns the AES-256-GCM cipher for a master key (from a key file or
// GenerateKey).
func NewAESGCM(key Key, opts Options) (*AESGCM, error) {
	c := &AESGCM{key: key, keyID: key.ID(), haveKey: true}
	if err := c.applyOptions(opts); err != nil {
		return nil, err
	}
	return c, nil
}

// NewAESGCMPassphrase returns the AES-256-GCM cipher for a passphrase. The master
// key is KeyFromPassphrase(pass, salt, params), derived once here; every header
// it writes carries the KDF block (params and salt), so decrypting needs only the
// passphrase.
//
// For deterministic envelopes salt must be stable: create it once per store with
// NewSalt and persist it. A nil salt builds a decrypt-only cipher that derives
// each blob's key from the KDF block in the blob's header; its Encrypt fails.
//
// Decrypt of a blob whose KDF block differs from (params, salt) re-derives the
// key from the header, within Options.MaxKDFMemoryKiB.
func NewAESGCMPassphrase(pass, salt []byte, params KDFParams, opts Options) (*AESGCM, error) {
	if len(pass) == 0 {
		return nil, fmt.Errorf("%w: empty passphrase", ErrBadOptions)
	}
	c := &AESGCM{pass: bytes.Clone(pass)}
	if err := c.applyOptions(opts); err != nil {
		return nil, err
	}
	if salt != nil {
		k, err := KeyFromPassphrase(pass, salt, params)
		if err != nil {
			return nil, err
		}
		c.key, c.keyID, c.haveKey = k, k.ID(), true
		c.kdf = &KDFHeader{Params: params, Salt: bytes.Clone(salt)}
	}
	return c, nil
}

func (c *AESGCM) applyOptions(opts Options) error {
	cs := opts.ChunkSize
	if cs == 0 {
		cs = DefaultChunkSize
	}
	if err := validateChunkSize(int64(cs)); err != nil {
		return err
	}
	c.chunkSize = uint32(cs)
	c.randomized = opts.Randomized
	c.rand = opts.Rand
	if c.rand == nil {
		c.rand = rand.Reader
	}
	c.maxKDFMem = cmp.Or(opts.MaxKDFMemoryKiB, DefaultMaxKDFMemoryKiB)
	c.maxKDFTime = cmp.Or(opts.MaxKDFTime, DefaultMaxKDFTime)
	c.maxKDFWork = cmp.Or(opts.MaxKDFWorkKiB, DefaultMaxKDFWorkKiB)
	c.maxKDFLane = cmp.Or(opts.MaxKDFThreads, DefaultMaxKDFThreads)
	return nil
}

// ID returns CipherAES256GCMv1.
func (c *AESGCM) ID() string { return CipherAES256GCMv1 }

// KeyID returns the id of the cipher's master key (zero for a decrypt-only
// passphrase cipher).
func (c *AESGCM) KeyID() KeyID { return c.keyID }

// ChunkSize returns the plaintext chunk size Encrypt uses.
func (c *AESGCM) ChunkSize() int { return int(c.chunkSize) }

func (c *AESGCM) headerSize() int {
	h := Header{CipherID: CipherAES256GCMv1, KDF: c.kdf}
	return h.Size()
}

// CiphertextSize returns the exact size of the blob Encrypt writes for a
// plaintext of n bytes: header + n + 16 per chunk, where a plaintext has
// max(1, ceil(n/chunkSize)) chunks.
func (c *AESGCM) CiphertextSize(n int64) (int64, error) {
	if n < 0 {
		return 0, fmt.Errorf("%w: negative plaintext size %d", ErrBadOptions, n)
	}
	chunks := uint64(n) / uint64(c.chunkSize)
	if uint64(n)%uint64(c.chunkSize) != 0 || n == 0 {
		chunks++
	}
	if chunks > maxChunks {
		return 0, fmt.Errorf("%w: %d bytes need %d chunks of %d, at most %d allowed", ErrTooLarge, n, chunks, c.chunkSize, maxChunks)
	}
	total := uint64(c.headerSize()) + uint64(n) + chunks*tagSize
	if total > math.MaxInt64 {
		return 0, fmt.Errorf("%w: %d bytes", ErrTooLarge, n)
	}
	return int64(total), nil
}

// Encrypt writes the envelope of the plaintext read from src to dst.
//
// In deterministic mode the file salt is derived from the master key and
// contentHash, so equal plaintexts under one key and one configuration give
// byte-identical blobs. Encrypt hashes the plaintext as it streams and checks it
// against contentHash before sealing the final chunk: on a mismatch it returns
// ErrContentHash and the output lacks its final chunk (Decrypt reports it as
// truncated). The caller must discard that output and must never publish it;
// sealing two different plaintexts under one claimed hash reuses nonces.
//
// Memory use is O(chunk size) whatever the plaintext size.
func (c *AESGCM) Encrypt(ctx context.Context, dst io.Writer, src io.Reader, contentHash [32]byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !c.haveKey {
		return fmt.Errorf("%w: this passphrase cipher was built without a salt and can only decrypt", ErrBadOptions)
	}
	h := Header{
		Version:    Version1,
		Randomized: c.randomized,
		CipherID:   CipherAES256GCMv1,
		ChunkSize:  c.chunkSize,
		KeyID:      c.keyID,
		KDF:        c.kdf,
	}
	var hasher hash.Hash
	if c.randomized {
		if _, err := io.ReadFull(c.rand, h.Salt[:]); err != nil {
			return fmt.Errorf("envelope: drawing random file salt: %w", err)
		}
	} else {
		h.Salt = deterministicSalt(c.key, contentHash)
		hasher = sha256.New()
	}
	raw, err := h.MarshalBinary()
	if err != nil {
		return err
	}
	aead, prefix, err := fileAEAD(c.key, h.Salt, raw)
	if err != nil {
		return err
	}
	if _, err := dst.Write(raw); err != nil {
		return fmt.Errorf("envelope: writing header: %w", err)
	}

	cs := int(c.chunkSize)
	buf := make([]byte, cs+tagSize)
	var peek [1]byte
	var nonce [12]byte
	carried := 0
	for i := uint64(0); ; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if i >= maxChunks {
			return fmt.Errorf("%w: more than %d chunks of %d bytes", ErrTooLarge, maxChunks, cs)
		}
		n, err := io.ReadFull(src, buf[carried:cs])
		n += carried
		last := false
		switch {
		case err == nil:
			// A full chunk: it is the last one only if the input ends here.
			_, perr := io.ReadFull(src, peek[:])
			switch {
			case perr == io.EOF:
				last = true
			case perr != nil:
				return fmt.Errorf("envelope: reading plaintext: %w", perr)
			}
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			last = true
		default:
			return fmt.Errorf("envelope: reading plaintext: %w", err)
		}
		if hasher != nil {
			hasher.Write(buf[:n])
			if last {
				var got [32]byte
				hasher.Sum(got[:0])
				if subtle.ConstantTimeCompare(got[:], contentHash[:]) != 1 {
					return fmt.Errorf("%w: plaintext sha256 is %x, caller said %x; discard the partial output", ErrContentHash, got, contentHash)
				}
			}
		}
		makeNonce(&nonce, prefix, i, last)
		sealed := aead.Seal(buf[:0], nonce[:], buf[:n], raw)
		if _, err := dst.Write(sealed); err != nil {
			return fmt.Errorf("envelope: writing chunk %d: %w", i, err)
		}
		if last {
			return nil
		}
		buf[0] = peek[0]
		carried = 1
	}
}

// Decrypt reads an envelope from src and writes its plaintext to dst, one
// authenticated chunk at a time (see Cipher.Decrypt for the failure contract).
// It reads src to its end: data after the final chunk is an error.
//
// Errors: ErrBadHeader (not an envelope, or another cipher's; a
// *KDFLimitError when the header's argon2id parameters exceed the Options
// limits, refused before the KDF runs), *WrongKeyError
// (ErrWrongKey), ErrTruncated, *ChunkError (ErrTampered or ErrTruncated, naming
// the chunk), a context error, or a wrapped read/write error.
func (c *AESGCM) Decrypt(ctx context.Context, dst io.Writer, src io.Reader) error {
	h, raw, err := ReadHeader(ctx, src)
	if err != nil {
		return err
	}
	if h.CipherID != CipherAES256GCMv1 {
		return fmt.Errorf("%w: blob was sealed with cipher %q, this is %q", ErrBadHeader, h.CipherID, CipherAES256GCMv1)
	}
	key, err := c.keyFor(&h)
	if err != nil {
		return err
	}
	if id := key.ID(); id != h.KeyID {
		return &WrongKeyError{Have: id, Want: h.KeyID, BlobUsesPassphrase: h.KDF != nil}
	}
	aead, prefix, err := fileAEAD(key, h.Salt, raw)
	if err != nil {
		return err
	}

	cs := int(h.ChunkSize)
	full := cs + tagSize
	buf := make([]byte, full+1) // one sealed chunk and one byte of look-ahead
	out := make([]byte, 0, cs)
	var nonce [12]byte
	carried := 0
	offset := int64(len(raw))
	for i := uint64(0); ; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		n, err := io.ReadFull(src, buf[carried:full])
		n += carried
		last := false
		switch {
		case err == nil:
			_, perr := io.ReadFull(src, buf[full:full+1])
			switch {
			case perr == io.EOF:
				last = true
			case perr != nil:
				return fmt.Errorf("envelope: reading chunk %d: %w", i, perr)
			}
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			last = true
		default:
			return fmt.Errorf("envelope: reading chunk %d: %w", i, err)
		}
		if i >= maxChunks {
			return &ChunkError{Index: i, Offset: offset, Err: ErrTampered, Detail: "more chunks than a nonce can count"}
		}
		sealed := buf[:n]
		if n < tagSize {
			return &ChunkError{Index: i, Offset: offset, Err: ErrTruncated,
				Detail: fmt.Sprintf("%d bytes, shorter than a %d-byte tag", n, tagSize)}
		}
		makeNonce(&nonce, prefix, i, last)
		pt, oerr := aead.Open(out[:0], nonce[:], sealed, raw)
		if oerr != nil {
			return diagnose(aead, prefix, raw, sealed, i, offset, last, n == full)
		}
		if _, err := dst.Write(pt); err != nil {
			return fmt.Errorf("envelope: writing plaintext of chunk %d: %w", i, err)
		}
		if last {
			return nil
		}
		buf[0] = buf[full]
		carried = 1
		offset += int64(full)
	}
}

// diagnose turns a chunk that failed to open into the most precise error: a
// full-size chunk that opens with the other last-chunk flag means the blob was
// cut at a chunk boundary (it was not the last) or has data after its final
// chunk (it was the last). Anything else is tampering, or a cut inside a chunk,
// which authentication alone cannot tell apart.
func diagnose(aead cipher.AEAD, prefix [noncePrefixSize]byte, raw, sealed []byte, i uint64, offset int64, last, fullSize bool) error {
	if fullSize {
		var nonce [12]byte
		makeNonce(&nonce, prefix, i, !last)
		if _, err := aead.Open(nil, nonce[:], sealed, raw); err == nil {
			if last {
				return &ChunkError{Index: i + 1, Offset: offset + int64(len(sealed)), Err: ErrTruncated,
					Detail: "the blob ends before its final chunk"}
			}
			return &ChunkError{Index: i + 1, Offset: offset + int64(len(sealed)), Err: ErrTampered,
				Detail: fmt.Sprintf("data after the final chunk %d", i)}
		}
	}
	detail := "modified, reordered, or from another blob"
	if last && !fullSize {
		detail = "modified, or the blob was cut inside this chunk"
	}
	return &ChunkError{Index: i, Offset: offset, Err: ErrTampered, Detail: detail}
}

// keyFor picks the master key for a header.
func (c *AESGCM) keyFor(h *Header) (Key, error) {
	if c.pass == nil || h.KDF == nil {
		if !c.haveKey {
			return Key{}, fmt.Errorf("%w: the blob was sealed with a key file (key id %s), this cipher holds only a passphrase",
				ErrWrongKey, h.KeyID)
		}
		return c.key, nil
	}
	if c.kdf != nil && c.kdf.Params == h.KDF.Params && bytes.Equal(c.kdf.Salt, h.KDF.Salt) {
		return c.key, nil
	}
	if err := c.checkKDF(h.KDF.Params); err != nil {
		return Key{}, err
	}
	k, err := KeyFromPassphrase(c.pass, h.KDF.Salt, h.KDF.Params)
	if err != nil {
		return Key{}, fmt.Errorf("envelope: deriving key from the blob's KDF block: %w", err)
	}
	return k, nil
}

// checkKDF refuses parameters above the cipher's decrypt limits, so a hostile
// header cannot make Decrypt spend minutes of CPU or gigabytes of memory
// before it can say "wrong key".
func (c *AESGCM) checkKDF(p KDFParams) error {
	work := uint64(p.MemoryKiB) * uint64(p.Time)
	switch {
	case p.Time > c.maxKDFTime:
		return &KDFLimitError{Params: p, What: "passes", Value: uint64(p.Time), Limit: uint64(c.maxKDFTime), Option: "MaxKDFTime"}
	case p.MemoryKiB > c.maxKDFMem:
		return &KDFLimitError{Params: p, What: "memory", Value: uint64(p.MemoryKiB), Limit: uint64(c.maxKDFMem), Option: "MaxKDFMemoryKiB"}
	case work > c.maxKDFWork:
		return &KDFLimitError{Params: p, What: "work", Value: work, Limit: c.maxKDFWork, Option: "MaxKDFWorkKiB"}
	case p.Threads > c.maxKDFLane:
		return &KDFLimitError{Params: p, What: "lanes", Value: uint64(p.Threads), Limit: uint64(c.maxKDFLane), Option: "MaxKDFThreads"}
	}
	return nil
}

// deterministicSalt is HKDF-SHA256(ikm=master, salt=contentHash,
// info="agentstate envelope v1: deterministic salt"), 32 bytes.
func deterministicSalt(master Key, contentHash [32]byte) [SaltSize]byte {
	var s [SaltSize]byte
	hkdfRead(master[:], contentHash[:], []byte(infoDetSalt), s[:])
	return s
}

// fileAEAD derives the file key and nonce prefix, 39 bytes of
// HKDF-SHA256(ikm=master, salt=fileSalt, info="agentstate envelope v1: file key" || header),
// and returns AES-256-GCM under the file key.
func fileAEAD(master Key, salt [SaltSize]byte, header []byte) (cipher.AEAD, [noncePrefixSize]byte, error) {
	var prefix [noncePrefixSize]byte
	info := make([]byte, 0, len(infoFileKey)+len(header))
	info = append(append(info, infoFileKey...), header...)
	var m [fileKeyMaterial]byte
	hkdfRead(master[:], salt[:], info, m[:])
	copy(prefix[:], m[32:])
	block, err := aes.NewCipher(m[:32])
	if err != nil {
		return nil, prefix, fmt.Errorf("envelope: AES key setup: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, prefix, fmt.Errorf("envelope: GCM setup: %w", err)
	}
	return aead, prefix, nil
}

// makeNonce writes prefix (7 bytes) || uint32 big-endian chunk index || last flag.
func makeNonce(n *[12]byte, prefix [noncePrefixSize]byte, i uint64, last bool) {
	copy(n[:noncePrefixSize], prefix[:])
	binary.BigEndian.PutUint32(n[noncePrefixSize:], uint32(i))
	n[11] = 0
	if last {
		n[11] = 1
	}
}
