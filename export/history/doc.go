// Package history ships an agent's whole history to a blob store and back:
// encrypted packs (each a CARv1 of the blocks new since the previous pack)
// and a head manifest, signed with the operator's ed25519 key, that names
// the packs in order. A pointer (a file in the store, or an ENS text record)
// names the current manifest. docs/history.md specifies the formats.
//
// The nouns, one file each:
//
//   - Manifest (manifest.go): an agent's history on a blob store, signed
//     by the operator (Sign, Verify), read strictly (Parse), and its
//     freshness: the store records the newest manifest it has seen of each
//     agent (Seen) and refuses an older one or a fork (seq and prev).
//   - Pack (pack.go): one sealed CAR of the blocks new since the packs
//     before it; a push splits a history into packs of at most Shipper.MaxPack.
//   - Pointer (pointer.go): where an agent's current manifest is published
//     (Ref: its blob, sha256 and size); FilePointer keeps them as files.
//   - Shipper (shipper.go): a store, a blob store, a cipher and a pointer;
//     it reads and writes the sealed blobs and the published manifest.
//   - Push (push.go): ship what is new of an agent's history (Pushed).
//   - Fetch and Restore (restore.go): read every pack in order into the
//     store, then integrate the history and its receipts (Fetched,
//     Restored).
package history

import "errors"

var (
	// ErrBadManifest: a manifest that does not parse, is not canonical, or
	// contradicts itself.
	ErrBadManifest = errors.New("history: bad manifest")
	// ErrUntrusted: a manifest signed by a key not trusted, or not signed.
	ErrUntrusted = errors.New("history: manifest not signed by a trusted operator key")
	// ErrBadPack: a pack whose bytes or content contradict its manifest.
	ErrBadPack = errors.New("history: pack contradicts its manifest")
	// ErrPackTooLarge: a push with a commit whose own pack would exceed
	// Shipper.MaxPack (a history of smaller commits is split).
	ErrPackTooLarge = errors.New("history: pack too large")
	// ErrNoHistory: no manifest is published for the agent.
	ErrNoHistory = errors.New("history: no history published")
	// ErrStale: a manifest older than the newest this store has seen for
	// the agent (a replayed one), or than RestoreOptions.MinSeq.
	ErrStale = errors.New("history: manifest older than one this store has seen")
)
