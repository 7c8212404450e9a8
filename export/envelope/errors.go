package envelope

import (
	"errors"
	"fmt"
	"io/fs"
)

// Sentinel errors. Every error this package returns for bad input, a bad key or
// damaged ciphertext matches one of them with errors.Is.
var (
	// ErrBadHeader: the input is not an envelope this package reads (wrong magic,
	// unknown version, flag or cipher id, a field out of range).
	ErrBadHeader = errors.New("envelope: bad header")
	// ErrWrongKey: the header names a key id other than the key in hand.
	ErrWrongKey = errors.New("envelope: wrong key")
	// ErrTruncated: the ciphertext ends early (inside the header, or before the
	// chunk marked last).
	ErrTruncated = errors.New("envelope: truncated ciphertext")
	// ErrTampered: a chunk failed authentication (modified, reordered, swapped
	// from another blob, or followed by extra data).
	ErrTampered = errors.New("envelope: ciphertext failed authentication")
	// ErrContentHash: the plaintext handed to Encrypt does not hash to the
	// contentHash the caller supplied. The output is incomplete and must be
	// discarded.
	ErrContentHash = errors.New("envelope: plaintext does not match its content hash")
	// ErrTooLarge: the plaintext needs more chunks than a nonce can count.
	ErrTooLarge = errors.New("envelope: plaintext too large for the chunk size")
	// ErrBadOptions: a chunk size, KDF parameter or salt is out of range.
	ErrBadOptions = errors.New("envelope: bad options")
	// ErrKeyFile: a key file is malformed (size or format).
	ErrKeyFile = errors.New("envelope: bad key file")
	// ErrKeyFilePermissions: a key file is readable or writable by group or
	// others. LoadKeyFile still returns the key alongside this error.
	ErrKeyFilePermissions = errors.New("envelope: key file permissions too open")
	// ErrKDFLimit: a blob's header asks argon2id for more passes, memory,
	// work (memory times passes) or lanes than Decrypt allows (see
	// KDFLimitError). It also matches ErrBadHeader.
	ErrKDFLimit = errors.New("envelope: KDF parameters above the limit")
)

// KDFLimitError reports a blob header whose argon2id parameters exceed a
// decrypt limit; the KDF was not run. It matches ErrKDFLimit and ErrBadHeader.
type KDFLimitError struct {
	Params KDFParams // what the header asks for
	What   string    // "passes", "memory", "work" or "lanes"
	Value  uint64    // the header's value of What (KiB for memory, KiB×passes for work)
	Limit  uint64    // the limit it exceeds
	Option string    // the Options field that sets the limit
}

func (e *KDFLimitError) Error() string {
	unit := ""
	switch e.What {
	case "memory":
		unit = " KiB"
	case "work":
		unit = " KiB×passes"
	}
	return fmt.Sprintf("envelope: blob asks argon2id for %s %d%s (time %d, memory %d KiB, threads %d), above the limit of %d%s (Options.%s); refused without running it",
		e.What, e.Value, unit, e.Params.Time, e.Params.MemoryKiB, e.Params.Threads, e.Limit, unit, e.Option)
}

// Is reports whether target is ErrKDFLimit or ErrBadHeader.
func (e *KDFLimitError) Is(target error) bool { return target == ErrKDFLimit || target == ErrBadHeader }

// WrongKeyError reports a key id mismatch. It matches ErrWrongKey.
type WrongKeyError struct {
	Have KeyID // id of the key in hand
	Want KeyID // id recorded in the blob header
	// BlobUsesPassphrase is set when the blob header carries a KDF block, i.e.
	// the blob was sealed with a passphrase-derived key.
	BlobUsesPassphrase bool
}

func (e *WrongKeyError) Error() string {
	hint := ""
	if e.BlobUsesPassphrase {
		hint = "; the blob was sealed with a passphrase"
	}
	return fmt.Sprintf("envelope: wrong key (key id %s, blob needs %s%s)", e.Have, e.Want, hint)
}

// Is reports whether target is ErrWrongKey.
func (e *WrongKeyError) Is(target error) bool { return target == ErrWrongKey }

// ChunkError names the chunk that failed. Err is ErrTampered or ErrTruncated.
type ChunkError struct {
	Index  uint64 // chunk index, from 0
	Offset int64  // byte offset of the chunk in the blob
	Err    error  // ErrTampered or ErrTruncated
	Detail string // what was seen, for people
}

func (e *ChunkError) Error() string {
	s := fmt.Sprintf("envelope: chunk %d at byte %d: %v", e.Index, e.Offset, e.Err)
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Unwrap returns ErrTampered or ErrTruncated.
func (e *ChunkError) Unwrap() error { return e.Err }

// KeyFilePermissionError reports a key file whose mode lets group or others in.
// It matches ErrKeyFilePermissions.
type KeyFilePermissionError struct {
	Path string
	Mode fs.FileMode
}

func (e *KeyFilePermissionError) Error() string {
	return fmt.Sprintf("envelope: key file %s has mode %04o, want 0600 or stricter (chmod 600 %s)",
		e.Path, uint32(e.Mode.Perm()), e.Path)
}

// Is reports whether target is ErrKeyFilePermissions.
func (e *KeyFilePermissionError) Is(target error) bool { return target == ErrKeyFilePermissions }
