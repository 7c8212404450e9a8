// Package envelope encrypts and decrypts snapshot blobs: the deterministic tar of
// a brain, sealed before it leaves the machine (for Walrus or any other blob store).
//
// Nouns:
//
//   - Cipher: the interface the rest of agentstate consumes. It streams plaintext
//     to ciphertext and back and names itself with an ID such as "aes-256-gcm-v1".
//     AES-256-GCM (this package) is the default; Age ("age-v1") encrypts to age
//     X25519 recipients (operators' public keys) for hand-over between
//     operators, and Detect decrypts either, telling them apart by the blob's
//     first bytes. A threshold-IBE cipher (Seal) can be another implementation
//     later.
//   - Envelope: the byte format one Cipher writes: a Header followed by chunks.
//     The format is specified byte by byte in docs/envelope.md.
//   - Header: magic "AGSENV", format version, flags, cipher id, chunk size, key
//     id, file salt and, for passphrase keys, the KDF block (argon2id parameters
//     and salt). The header is authenticated: it is bound into every chunk.
//   - Chunk: a fixed-size slice of plaintext (the last one may be shorter) sealed
//     with AES-256-GCM under the file key, with a nonce made of the file's nonce
//     prefix, the chunk index and a last-chunk flag (the STREAM construction), so
//     reordering, dropping, truncating and appending are all detected.
//   - Master key (Key): the 32 secret bytes the operator holds, from a key file or
//     derived from a passphrase with argon2id.
//   - Key id (KeyID): 16 public bytes derived from the master key with HKDF, stored
//     in every header so a wrong key is reported as such before any decryption.
//   - File salt: 32 bytes per blob. In deterministic mode (the default) it is
//     derived from the master key and the sha256 of the plaintext (the content
//     hash), so the same snapshot under the same key always encrypts to the same
//     bytes; in randomized mode it is random.
//   - File key and nonce prefix: derived from the master key, the file salt and
//     the whole header with HKDF-SHA256; every blob has its own.
//
// Decrypt authenticates every chunk before writing it, but it writes chunk by
// chunk: when it fails, dst may already hold the authenticated plaintext of the
// chunks before the failing one. A caller that needs "nothing on failure" decrypts
// into a temporary file and renames it into place only when Decrypt returns nil.
package envelope
