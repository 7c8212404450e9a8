// Package objects defines agentstate's immutable, content-addressed objects and
// their exact encodings.
//
// The nouns:
//
//   - CID: a CIDv1 with a sha2-256 multihash, codec raw (values) or dag-cbor
//     (trees and commits). Printed in base32 ("bafk..." / "bafy...").
//   - Value: the raw bytes of one brain file or key. Its CID's digest is
//     sha256(content).
//   - Tree: a Merkle Search Tree mapping keys (brain paths) to value CIDs. It is
//     history-independent (the key set alone fixes every node) and logarithmic.
//   - Commit: a tree root, parent commits, a time, a message and optional
//     metadata, encoded as canonical DAG-CBOR.
//   - Block: a CID with the bytes it names. Blocks read back from storage are
//     re-hashed before use (see Verify).
//   - BundleHash: the lineage bundle hash of a brain, derived from a tree.
//
// Encoders refuse non-canonical input; decoders refuse bytes that do not
// re-encode to themselves. docs/format.md is the normative description.
package objects
