// Package refs owns the mutable part of a store: one HEAD per agent and the
// per-agent operation log.
//
// The nouns:
//
//   - Agent: a name for one brain lineage. Many agents share one store and its
//     objects, so a fork is O(1).
//   - HEAD: the commit an agent is at. It moves only by compare-and-swap
//     (Move), and every move appends one operation-log entry in the same
//     atomic write.
//   - Operation log: per agent, entries numbered from 1, each carrying the
//     sha256 of the previous entry's bytes, so a torn or edited entry is
//     detected (Verify). HEAD's record carries the hash of the last entry.
//   - Undo / redo: undo moves HEAD back along the log to where the newest
//     not-yet-undone operation found it; redo re-applies the newest undone
//     one. Both are logged operations themselves.
package refs
