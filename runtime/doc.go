// Package runtime embeds agentstate in an agent runtime: every task an agent
// runs is a transaction over the agent's brain, a task that succeeds advances
// the agent's HEAD and yields a signed receipt, a task that fails moves
// nothing, and a brain that changed is shipped as an encrypted snapshot in the
// background.
//
// The nouns:
//
//   - Runtime: an open store plus the operator's signing key, the snapshot
//     queue and the cold-start sources (snapshot pointer, seed directory).
//     Open one per process; it is safe for concurrent use.
//   - Task: one unit of an agent's work, named by an id (and optionally an
//     attempt, the model and the adapter that ran it). RunTask runs a
//     function inside a transaction for it.
//   - Tx: the transaction a task function sees. It starts at the agent's HEAD
//     (the task's start commit). Every Put or Delete that changes something
//     writes a value, a tree and a commit chained onto the task's previous
//     commit, so history shows every write; reads see the task's own writes
//     and never another running task's.
//   - Landing: when the task function returns nil, HEAD moves once, by
//     compare-and-swap, from the start commit to the task's last commit (one
//     operation-log entry carrying the task id). If another task of the same
//     agent landed meanwhile, the task lands as a 3-way merge commit when the
//     two touched different keys, and fails with a *ConflictError naming the
//     keys when they wrote the same key differently.
//   - Receipt: the signed statement of one landing: agent, task, start commit,
//     the commit HEAD moved from and to, bundle hash before and after,
//     stateDeltaHash = keccak256(before || after), time, operator key and an
//     ed25519 signature. Receipts are appended to the agent's receipt tape,
//     which snapshots carry as receipts.ndjson.
//   - Snapshot queue: when a landing moved the bundle hash, the agent's new
//     HEAD is queued for a snapshot push (export, encrypt, blob store,
//     pointer). The queue is bounded, keeps only the newest commit per agent,
//     retries with backoff, and reports every outcome; it never blocks or
//     fails a task.
//   - Cold start: an agent with no HEAD is restored from its snapshot pointer
//     when it has one, else created from SeedDir/<agent>/ when that exists,
//     else it starts empty.
//   - View: a read-only look at an agent's state at HEAD or any commit.
//   - Directory mode: RunDirTask materialises the agent's HEAD into a working
//     directory, runs a task that edits files there, and commits the
//     directory afterwards, re-reading only files whose size, mtime or inode
//     changed since the runtime last saw them.
//
// docs/runtime.md is the embedding guide and states every rule precisely.
package runtime
