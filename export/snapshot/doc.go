// Package snapshot moves commits off the machine and back: the deterministic
// tar of a commit (with its generated bundle.lock.json and the agent's
// receipts.ndjson), import of a tar as a tree, the CARv1 export, and the push /
// restore pipeline (tar → envelope → blob store → pointer, and back).
//
// The nouns:
//
//   - Lock: the generated bundle.lock.json: {"bundleHash", "tree", "version"}.
//     It states the lineage the snapshot claims; restore refuses content that
//     does not hash to it.
//   - Pipeline: a Repo, a Cipher, a blob Store and a Pointer.
//   - Pointer: where an agent's current snapshot blob id is published — a
//     file in the store by default, ENS text records optionally — together
//     with its Binding.
//   - Binding: what the named blob must hold (sha256 and size of its bytes,
//     the commit, tree and bundle hash), since blob ids cannot be recomputed
//     locally; restore refuses any other content (docs/snapshot.md §5).
//   - Record: one push or restore, kept per agent for 'agentstate snapshots'.
package snapshot
