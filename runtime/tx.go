package runtime

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

// Task names one unit of an agent's work.
type Task struct {
	// ID identifies the task (required; at most 256 bytes of UTF-8 without
	// control characters). It is recorded in every commit the task writes,
	// in the operation-log entry of its landing and in its receipt.
	ID string
	// Attempt, Model and Adapter are optional and recorded alongside.
	Attempt string
	Model   string
	Adapter string
}

// MaxTaskField bounds the length of each Task field.
const MaxTaskField = 256

func (t Task) validate() error {
	if t.ID == "" {
		return fmt.Errorf("%w: Task.ID is empty", ErrBadTask)
	}
	for name, v := range map[string]string{"ID": t.ID, "Attempt": t.Attempt, "Model": t.Model, "Adapter": t.Adapter} {
		if len(v) > MaxTaskField {
			return fmt.Errorf("%w: Task.%s is %d bytes, at most %d", ErrBadTask, name, len(v), MaxTaskField)
		}
		if !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return fmt.Errorf("%w: Task.%s %q is not printable UTF-8", ErrBadTask, name, v)
		}
	}
	return nil
}

func (t Task) metadata(agent string) map[string]string {
	m := map[string]string{"agent": agent, "task": t.ID}
	for k, v := range map[string]string{"attempt": t.Attempt, "model": t.Model, "adapter": t.Adapter} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}

// Tx is a task's transaction over an agent's brain. Its methods are safe
// for concurrent use by the task's goroutines; they fail with ErrTxDone once
// the task function has returned.
type Tx struct {
	rt    *Runtime
	agent string
	task  Task

	mu        sync.Mutex
	start     objects.CID // the task's start commit (zero: the agent had no state)
	startTree objects.CID
	tree      *objects.Tree // the task's current tree, loaded on first use
	last      objects.CID   // the task's last commit (start until it writes)
	lastTree  objects.CID
	lastTime  int64
	writes    int
	err       error // a failed write poisons the transaction
	done      bool
}

// Agent returns the agent the task runs for.
func (tx *Tx) Agent() string { return tx.agent }

// Task returns the task.
func (tx *Tx) Task() Task { return tx.task }

// Start returns the commit the task started at (zero for an agent with no
// state yet).
func (tx *Tx) Start() objects.CID { return tx.start }

// Commit returns the task's latest commit: its start commit until it
// writes, then the commit of its last write.
func (tx *Tx) Commit() objects.CID {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	return tx.last
}

func (tx *Tx) ready(ctx context.Context) error {
	if tx.done {
		return ErrTxDone
	}
	if tx.err != nil {
		return fmt.Errorf("runtime: transaction unusable after an earlier write failed: %w", tx.err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if tx.tree == nil {
		t, err := objects.LoadTree(ctx, tx.rt.repo.Blocks, tx.lastTree)
		if err != nil {
			return fmt.Errorf("runtime: loading the tree of %s: %w", short(tx.last), err)
		}
		tx.tree = t
	}
	return nil
}

// Get returns the value of key as the task sees it: its own writes over its
// start commit. A missing key is an error matching ErrKeyNotFound.
func (tx *Tx) Get(ctx context.Context, key string) ([]byte, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.ready(ctx); err != nil {
		return nil, err
	}
	return getValue(ctx, tx.rt, tx.tree, key)
}

func getValue(ctx context.Context, rt *Runtime, t *objects.Tree, key string) ([]byte, error) {
	if err := objects.ValidateKey(key); err != nil {
		return nil, err
	}
	v, ok, err := t.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("runtime: reading %q: %w", key, err)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrKeyNotFound, key)
	}
	data, err := objects.ReadValue(ctx, rt.repo.Blocks, v)
	if err != nil {
		return nil, fmt.Errorf("runtime: reading the value of %q: %w", key, err)
	}
	return data, nil
}

// List returns the keys that start with prefix, in bytewise order ("" lists
// every key). A prefix that is a directory should end in "/".
func (tx *Tx) List(ctx context.Context, prefix string) ([]string, error) {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.ready(ctx); err != nil {
		return nil, err
	}
	return listKeys(ctx, tx.tree, prefix)
}

func listKeys(ctx context.Context, t *objects.Tree, prefix string) ([]string, error) {
	keys := []string{}
	for e, err := range t.Entries(ctx, prefix) {
		if err != nil {
			return nil, fmt.Errorf("runtime: listing %q: %w", prefix, err)
		}
		if !strings.HasPrefix(e.Key, prefix) {
			break
		}
		keys = append(keys, e.Key)
	}
	return keys, nil
}

// Put sets key to data. When that changes the task's tree, it writes the
// value, the changed tree nodes and a commit (parent: the task's previous
// commit) in one atomic store write. Writing the value a key already has
// writes nothing.
func (tx *Tx) Put(ctx context.Context, key string, data []byte) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.ready(ctx); err != nil {
		return err
	}
	if err := objects.ValidateKey(key); err != nil {
		return err
	}
	v, blocks := objects.NewFileValue(data)
	old, had, err := tx.tree.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("runtime: put %q: %w", key, err)
	}
	changed, err := tx.tree.Put(ctx, key, v)
	if err != nil {
		return fmt.Errorf("runtime: put %q: %w", key, err)
	}
	if !changed {
		return nil
	}
	if had && len(blocks) > 1 {
		blocks = tx.rt.unstored(ctx, old, blocks)
	}
	return tx.commitLocked(ctx, "put "+key, map[string]string{"op": "put", "key": key}, blocks...)
}

// unstored drops from blocks, the blocks of a new version of a chunked
// value, those the previous version old already stored: a task that
// rewrites 1% of a large file (a memory database) then has the store look
// up only the chunks that changed, not every chunk. On any error reading
// old's nodes it keeps every block (the store looks them up as usual). A
// redaction removes a value's chunks but keeps its lists: the chunks a
// redaction removed are written again when the new version has them.
func (rt *Runtime) unstored(ctx context.Context, old objects.CID, blocks []objects.Block) []objects.Block {
	stored := objects.StoredChunks(ctx, rt.repo.Blocks, old)
	removed, err := rt.repo.RedactedBlocks(ctx)
	if err != nil {
		return blocks
	}
	for c := range removed {
		delete(stored, c)
	}
	out := blocks[:0:0]
	for _, b := range blocks {
		if _, ok := stored[b.CID]; !ok {
			out = append(out, b)
		}
	}
	return out
}

// Delete removes key. Deleting a key that is not there writes nothing.
func (tx *Tx) Delete(ctx context.Context, key string) error {
	tx.mu.Lock()
	defer tx.mu.Unlock()
	if err := tx.ready(ctx); err != nil {
		return err
	}
	if err := objects.ValidateKey(key); err != nil {
		return err
	}
	had, err := tx.tree.Delete(ctx, key)
	if err != nil {
		return fmt.Errorf("runtime: delete %q: %w", key, err)
	}
	if !had {
		return nil
	}
	return tx.commitLocked(ctx, "delete "+key, map[string]string{"op": "delete", "key": key})
}

// commitLocked flushes the tree and writes value blocks, tree nodes and a
// commit together.
func (tx *Tx) commitLocked(ctx context.Context, msg string, extra map[string]string, values ...objects.Block) error {
	root, nodes := tx.tree.Flush()
	meta := tx.task.metadata(tx.agent)
	for k, v := range extra {
		meta[k] = v
	}
	spec := repo.CommitSpec{Tree: root, Message: msg, Metadata: meta, ParentTime: tx.lastTime, Blocks: append(values, nodes...)}
	if !tx.last.IsZero() {
		spec.Parents = []objects.CID{tx.last}
	}
	// Held until the landing (or the next durable write) with Options.Sync:
	// only a landed task must survive a crash, and its HEAD move carries
	// these blocks in the same fsync.
	id, c, err := tx.rt.repo.WriteCommit(repo.Deferred(ctx), spec)
	if err != nil {
		// The tree's nodes are flushed in memory but not stored: the
		// transaction cannot continue.
		tx.err = err
		return fmt.Errorf("runtime: writing %s: %w", msg, err)
	}
	tx.last, tx.lastTree, tx.lastTime = id, root, c.Time
	tx.writes++
	return nil
}

// RunTask runs fn as task of agent inside a transaction that starts at the
// agent's HEAD (cold-starting the agent first if it has no state; see
// Agent).
//
// When fn returns nil and the context is not done, the task lands: HEAD
// moves by one compare-and-swap from the task's start commit to its last
// commit, or, when other tasks of the agent landed meanwhile, to a merge
// commit (parents: the HEAD found and the task's last commit) if the two
// sides changed different keys or made the same change; same keys changed
// differently fail with a *ConflictError and HEAD stays. A landed task's
// signed receipt is appended to the agent's receipt tape and returned, and
// if the bundle hash moved a snapshot is queued.
//
// When fn returns an error, panics (the panic is recovered and returned as
// a *PanicError) or the context is done, HEAD stays and nothing is logged;
// the task's commits remain unreferenced until gc.
//
// A task that changed nothing lands nothing: RunTask returns a nil Receipt
// and a nil error, and HEAD, the operation log and the receipt tape are
// untouched.
func (rt *Runtime) RunTask(ctx context.Context, agent string, task Task, fn func(context.Context, *Tx) error) (*Receipt, error) {
	if err := refs.ValidateAgent(agent); err != nil {
		return nil, err
	}
	if err := task.validate(); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, fmt.Errorf("%w: nil task function", ErrBadTask)
	}
	if err := rt.enter(); err != nil {
		return nil, err
	}
	defer rt.leave()
	// A gc run through the server waits for the task's blocks to land
	// (a task must not start another task: the gate does not nest).
	defer rt.repo.HoldWrites()()
	tx, err := rt.begin(ctx, agent, task)
	if err != nil {
		return nil, err
	}
	if err := runFn(ctx, task, func() error { return fn(ctx, tx) }); err != nil {
		tx.finish()
		return nil, err
	}
	tx.finish()
	return rt.land(ctx, tx)
}

func (rt *Runtime) begin(ctx context.Context, agent string, task Task) (*Tx, error) {
	info, err := rt.load(ctx, agent)
	if err != nil {
		return nil, err
	}
	tx := &Tx{rt: rt, agent: agent, task: task, start: info.Head, startTree: objects.EmptyTreeCID}
	if !info.Head.IsZero() {
		c, err := rt.repo.Commit(ctx, info.Head)
		if err != nil {
			return nil, fmt.Errorf("runtime: reading HEAD of %q: %w", agent, err)
		}
		tx.startTree, tx.lastTime = c.Tree, c.Time
	}
	tx.last, tx.lastTree = tx.start, tx.startTree
	return tx, nil
}

// runFn calls fn, turning a panic into a *PanicError and a done context
// into an error.
func runFn(ctx context.Context, task Task, fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Task: task.ID, Value: v, Stack: debug.Stack()}
		}
	}()
	if err := fn(); err != nil {
		return fmt.Errorf("runtime: task %q failed (HEAD was not moved): %w", task.ID, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("runtime: task %q: context done before it could land (HEAD was not moved): %w", task.ID, err)
	}
	return nil
}

func (tx *Tx) finish() {
	tx.mu.Lock()
	tx.done = true
	tx.mu.Unlock()
}

// land moves HEAD for a finished task and writes its receipt.
func (rt *Runtime) land(ctx context.Context, tx *Tx) (*Receipt, error) {
	if tx.err != nil {
		return nil, fmt.Errorf("runtime: task %q: a write failed (HEAD was not moved): %w", tx.task.ID, tx.err)
	}
	if tx.writes == 0 {
		return nil, nil
	}
	st := rt.agent(tx.agent)
	st.land.Lock()
	defer st.land.Unlock()
	// The receipt of a landing that needs no merge (From: the task's
	// start, Commit: its last commit, at the time the landing is given) is
	// built on another core while the landing waits for the disk: the
	// task's bundle hash and the signature are CPU only, and with
	// Options.Sync the HEAD move is an fsync'd write; neither need wait for
	// the other. It is used only if the landing is that one; nothing is
	// acknowledged, and no receipt is kept, before the landing is durable.
	now := rt.repo.Now()
	early := make(chan earlyReceipt, 1)
	go func() {
		c := context.WithoutCancel(ctx)
		h, err := rt.repo.BundleHash(c, tx.lastTree)
		if err != nil {
			early <- earlyReceipt{err: err}
			return
		}
		rec, err := rt.receipt(c, tx.agent, tx.task, tx.start, tx.start, tx.last, tx.last, tx.writes, now, &h)
		if err != nil {
			early <- earlyReceipt{err: err}
			return
		}
		// The receipt's line and its task record (what the tape append
		// writes with it) are made here too.
		line := rec.Line()
		rt.repo.PrepareTaskRecord(c, tx.agent, line)
		early <- earlyReceipt{rec: rec, line: line}
	}()
	var prepared earlyReceipt
	waited := false
	wait := func() earlyReceipt {
		if !waited {
			prepared, waited = <-early, true
		}
		return prepared
	}
	defer wait() // never return with the receipt still reading the store
	meta := tx.task.metadata(tx.agent)
	meta["op"] = "merge"
	if !tx.start.IsZero() {
		meta["start"] = tx.start.String()
	}
	l, err := rt.repo.Land(ctx, repo.LandRequest{Agent: tx.agent, Start: tx.start, StartTree: tx.startTree,
		Last: tx.last, LastTree: tx.lastTree, LastTime: tx.lastTime, Task: tx.task.ID, Time: now,
		MergeMessage: fmt.Sprintf("merge task %s", tx.task.ID), MergeMetadata: meta})
	var mc *repo.MergeConflictError
	if errors.As(err, &mc) {
		return nil, &ConflictError{Agent: tx.agent, Task: tx.task.ID, Keys: mc.Keys, Base: tx.start, Head: l.From, TaskCommit: tx.last}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("runtime: task %q: context done before it could land (HEAD was not moved): %w", tx.task.ID, err)
	}
	if err != nil {
		return nil, fmt.Errorf("runtime: landing task %q: %w", tx.task.ID, err)
	}
	st.exists.Store(true)
	// Landed. From here on nothing may be reported as a task failure
	// except a receipt that could not be kept.
	lctx := context.WithoutCancel(ctx)
	got := wait()
	rec, line := got.rec, got.line
	if l.Merged || l.From != tx.start || l.Commit != tx.last || l.Entry.Time != now || rec == nil {
		// A merge (its receipt names the merge commit), or the early
		// receipt failed: receipt computes what it needs (and says why it
		// could not).
		if rec, err = rt.receipt(lctx, tx.agent, tx.task, tx.start, l.From, l.Commit, tx.last, tx.writes, l.Entry.Time, nil); err != nil {
			return nil, fmt.Errorf("%w: task %q landed at %s: %w", ErrReceiptNotKept, tx.task.ID, l.Commit, err)
		}
		line = rec.Line()
	}
	// The receipt rides with the next durable write (the next landing, or
	// Close): a receipt lost with the process is re-created from the
	// operation log when the agent is next loaded.
	if _, err := rt.tape.Append(repo.Deferred(lctx), tx.agent, line); err != nil {
		return rec, fmt.Errorf("%w: task %q landed at %s: %w", ErrReceiptNotKept, tx.task.ID, l.Commit, err)
	}
	if rec.BundleBefore != rec.BundleAfter {
		rt.queue.enqueue(tx.agent, l.Commit)
	}
	return rec, nil
}

// earlyReceipt is the receipt land prepares while the landing is written.
type earlyReceipt struct {
	rec  *Receipt
	line []byte // rec.Line()
	err  error
}

// receipt builds and signs the receipt of a landing from HEAD from to
// commit. after, if known, is commit's bundle hash.
func (rt *Runtime) receipt(ctx context.Context, agent string, task Task, start, from, commit, taskCommit objects.CID, writes int, now int64, after *objects.BundleHash) (*Receipt, error) {
	before := emptyBundle
	var err error
	if !from.IsZero() {
		if before, err = rt.repo.CommitBundleHash(ctx, from); err != nil {
			return nil, fmt.Errorf("bundle hash of %s: %w", from, err)
		}
	}
	var a objects.BundleHash
	if after != nil {
		a = *after
	} else if a, err = rt.repo.CommitBundleHash(ctx, commit); err != nil {
		return nil, fmt.Errorf("bundle hash of %s: %w", commit, err)
	}
	rec := &Receipt{Agent: agent, Task: task.ID, Attempt: task.Attempt, Model: task.Model, Adapter: task.Adapter,
		Parent: start, From: from, Commit: commit, TaskCommit: taskCommit, Writes: writes,
		BundleBefore: before, BundleAfter: a, StateDeltaHash: objects.StateDeltaHash(before, a), Time: now}
	rec.Sign(rt.signer)
	return rec, nil
}

// emptyBundle is keccak256(""), the bundle hash of the empty brain.
var emptyBundle = func() objects.BundleHash {
	h, _ := objects.NewBundleHasher().Sum()
	return h
}()
