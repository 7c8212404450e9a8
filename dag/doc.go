// Package dag walks the commit graph: revision parsing and resolution,
// history (log), ancestry (merge bases), diffs between commits, and
// reachability (the basis of gc and verify).
//
// The nouns:
//
//   - Rev: a parsed revision: [AGENT@]BASE followed by any number of ~N
//     (N-th first-parent ancestor) and ^N (N-th parent) steps, where BASE is
//     HEAD or a full or abbreviated CID.
//   - TaskRev: a reading of a task revision [AGENT@]task:ID[@ATTEMPT] and its
//     steps (taskrev.go); the Resolver's Task hook names the commit the task
//     landed.
//   - LogEntry: a commit as history shows it, newest first.
//   - Reach: the set of blocks reachable from a set of commits.
package dag
