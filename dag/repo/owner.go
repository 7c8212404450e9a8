package repo

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

// The write side of a repository. Every commit object and every HEAD move
// in agentstate is made by one of the methods in this file; the CLI, the
// runtime and the snapshot pipeline call them and nothing below them.
//
// The time rule, in one place: a commit's time is the clock (Now, which
// honours SOURCE_DATE_EPOCH) but never earlier than any of its parents', so
// time along history never goes backwards when clocks disagree; an
// operation-log entry carries the time of the commit it moves to when it
// makes one, else the clock.

// commitTime applies the time rule.
func (r *Repo) commitTime(parents ...int64) int64 {
	t := r.Now()
	for _, p := range parents {
		t = max(t, p)
	}
	return t
}

// CommitSpec describes a commit object to write without moving any HEAD
// (a task's own commits, a merge before it lands).
type CommitSpec struct {
	Tree     objects.CID
	Parents  []objects.CID
	Message  string
	Metadata map[string]string
	// ParentTime is the latest time among Parents when the caller knows it
	// (zero: read from the parents).
	ParentTime int64
	// Blocks are stored in the same write as the commit, before it: the
	// values and tree nodes the commit reaches that are not stored yet.
	Blocks []objects.Block
}

// WriteCommit writes a commit object (and spec.Blocks with it) under the
// time rule, and returns its CID and the commit. It moves no HEAD.
func (r *Repo) WriteCommit(ctx context.Context, spec CommitSpec) (objects.CID, *objects.Commit, error) {
	pt := spec.ParentTime
	if pt == 0 {
		for _, p := range spec.Parents {
			pc, err := r.Commit(ctx, p)
			if err != nil {
				return objects.CID{}, nil, fmt.Errorf("repo: reading parent %s: %w", p.Short(), err)
			}
			pt = max(pt, pc.Time)
		}
	}
	c := &objects.Commit{Tree: spec.Tree, Parents: spec.Parents, Time: r.commitTime(pt), Message: spec.Message, Metadata: spec.Metadata}
	b, err := c.Block()
	if err != nil {
		return objects.CID{}, nil, fmt.Errorf("repo: encoding commit: %w", err)
	}
	// The commit's commit-graph record (graph.go) goes in the same write;
	// the graph is a cache, so one that cannot be made is left behind.
	np, isNew := r.Storage.(newGraphPutter)
	meta, pos, gerr := r.graphRecordFor(ctx, b, c, spec.Blocks, !isNew)
	blocks := append(spec.Blocks, b)
	recorded := false
	gp, hasGraph := r.graphPutter()
	switch {
	case gerr != nil || meta == nil || !hasGraph:
		err = r.Blocks.Put(ctx, blocks...)
	case isNew:
		recorded, err = np.PutNewWithMeta(ctx, blocks, meta...)
	default:
		err = gp.PutWithMeta(ctx, blocks, meta...)
		recorded = err == nil
	}
	if err != nil {
		return objects.CID{}, nil, fmt.Errorf("repo: writing commit: %w", err)
	}
	if recorded {
		r.noteGraph(map[objects.CID]graphPos{b.CID: pos})
	}
	r.keepCommit(b, c)
	return b.CID, c, nil
}

// keepCommit puts a commit just stored in the commit cache: a runtime's
// task reads its own commits again (its task record, the next task's
// start), and would otherwise read, re-hash and decode each from the store.
func (r *Repo) keepCommit(b objects.Block, c *objects.Commit) {
	if cc, ok := r.Blocks.(*dag.CommitCache); ok {
		cc.Keep(b.CID, c, b.Data)
	}
}

// CommitRequest asks for a new commit on top of an agent's HEAD.
type CommitRequest struct {
	Agent    string
	Tree     objects.CID
	Message  string
	Metadata map[string]string
	Op       refs.Op // default OpCommit
	Task     string
	// Parent is the HEAD the caller started from; HEAD must still be there.
	// Zero with Fresh=false means "whatever HEAD is now".
	Parent objects.CID
	Fresh  bool // the agent must not exist yet
	// AllowEmpty records a commit even when the tree equals the parent's.
	AllowEmpty bool
	// Blocks are stored with the commit (see CommitSpec.Blocks).
	Blocks []objects.Block
}

// ErrNoChange reports a commit request whose tree equals HEAD's.
var ErrNoChange = errors.New("nothing changed")

// CommitTree writes a commit of req.Tree whose parent is the agent's HEAD
// and moves HEAD to it by compare-and-swap. A tree equal to HEAD's is
// ErrNoChange (with HEAD's CID) unless req.AllowEmpty.
func (r *Repo) CommitTree(ctx context.Context, req CommitRequest) (objects.CID, refs.Entry, error) {
	if err := refs.ValidateAgent(req.Agent); err != nil {
		return objects.CID{}, refs.Entry{}, err
	}
	parent := req.Parent
	if parent.IsZero() && !req.Fresh {
		h, err := r.Refs.Head(ctx, req.Agent)
		if err != nil && !errors.Is(err, refs.ErrNoAgent) {
			return objects.CID{}, refs.Entry{}, err
		}
		parent = h.Commit
	}
	spec := CommitSpec{Tree: req.Tree, Message: req.Message, Metadata: req.Metadata, Blocks: req.Blocks}
	if !parent.IsZero() {
		pc, err := r.Commit(ctx, parent)
		if err != nil {
			return objects.CID{}, refs.Entry{}, err
		}
		if pc.Tree == req.Tree && !req.AllowEmpty {
			return parent, refs.Entry{}, ErrNoChange
		}
		spec.Parents, spec.ParentTime = []objects.CID{parent}, pc.Time
	}
	id, c, err := r.WriteCommit(ctx, spec)
	if err != nil {
		return objects.CID{}, refs.Entry{}, err
	}
	op := req.Op
	if op == "" {
		op = refs.OpCommit
	}
	e, err := r.Refs.Move(ctx, refs.Move{Agent: req.Agent, Old: parent, New: id, Op: op, Time: c.Time, Task: req.Task})
	if err != nil {
		return objects.CID{}, refs.Entry{}, err
	}
	return id, e, nil
}

// EditRequest asks for one edit of an agent's HEAD tree, committed.
type EditRequest struct {
	Agent    string
	Message  string
	Metadata map[string]string
	// Create lets the edit start a new agent from the empty tree; without
	// it the agent must exist.
	Create bool
	// Blocks are values the edit puts, stored with the commit.
	Blocks []objects.Block
	// Edit changes the tree and reports whether it changed anything.
	Edit func(ctx context.Context, t *objects.Tree) (bool, error)
}

// Edit applies req.Edit to the agent's HEAD tree and commits the result
// with HEAD as parent, by compare-and-swap. An edit that changes nothing
// returns ErrNoChange and HEAD's CID.
func (r *Repo) Edit(ctx context.Context, req EditRequest) (objects.CID, error) {
	if err := refs.ValidateAgent(req.Agent); err != nil {
		return objects.CID{}, err
	}
	// Another writer moving HEAD between the read and the swap makes the
	// edit start again from the new HEAD: an edit is relative (this key,
	// this value), so it applies to any HEAD.
	return retryMoved(ctx, func() (objects.CID, error) {
		defer r.moves.lock(req.Agent)()
		return r.editOnce(ctx, req)
	})
}

func (r *Repo) editOnce(ctx context.Context, req EditRequest) (objects.CID, error) {
	head, hc, err := r.HeadCommit(ctx, req.Agent)
	if err != nil {
		return objects.CID{}, err
	}
	if hc == nil && !req.Create {
		_, err := r.Refs.Head(ctx, req.Agent)
		return objects.CID{}, err
	}
	var t *objects.Tree
	if hc == nil {
		t = objects.NewTree(r.Blocks)
	} else if t, err = objects.LoadTree(ctx, r.Blocks, hc.Tree); err != nil {
		return objects.CID{}, err
	}
	changed, err := req.Edit(ctx, t)
	if err != nil {
		return objects.CID{}, err
	}
	if !changed && hc != nil {
		return head, ErrNoChange
	}
	root, nodes := t.Flush()
	id, _, err := r.CommitTree(ctx, CommitRequest{Agent: req.Agent, Tree: root, Message: req.Message, Metadata: req.Metadata,
		Parent: head, Fresh: head.IsZero(), AllowEmpty: true, Blocks: append(req.Blocks, nodes...)})
	return id, err
}

// Reset moves an agent's HEAD to target (any commit in the store) and logs
// it. Resetting to where HEAD is returns ErrNoChange. HEAD ends at target
// even when another writer (a live runtime) moves it meanwhile.
func (r *Repo) Reset(ctx context.Context, agent string, target objects.CID) (refs.Entry, error) {
	if _, err := r.Commit(ctx, target); err != nil {
		return refs.Entry{}, err
	}
	return retryMoved(ctx, func() (refs.Entry, error) {
		defer r.moves.lock(agent)()
		h, err := r.Refs.Head(ctx, agent)
		if err != nil {
			return refs.Entry{}, err
		}
		if target == h.Commit {
			return refs.Entry{}, ErrNoChange
		}
		return r.Refs.Move(ctx, refs.Move{Agent: agent, Old: h.Commit, New: target, Op: refs.OpReset, Time: r.Now()})
	})
}

// retryMoved runs an operation that reads HEAD and then moves it again each
// time another writer moved HEAD in between (refs.ErrConflict): what the
// operation does is decided against the HEAD it finally lands on.
// It gives up after maxMoveRetries, saying so: a writer landing faster than
// the operation can read the log.
func retryMoved[T any](ctx context.Context, op func() (T, error)) (T, error) {
	for i := 0; ; i++ {
		v, err := op()
		if !errors.Is(err, refs.ErrConflict) || ctx.Err() != nil {
			return v, err
		}
		if i == maxMoveRetries {
			return v, fmt.Errorf("%w; HEAD moved %d times while this operation read it (another writer lands faster): try again, or pause the writer", err, i+1)
		}
	}
}

const maxMoveRetries = 31

// Undone is the outcome of an undo or a redo: the operation it reverted or
// re-applied, and the log entry of the undo or redo itself.
type Undone struct {
	Target refs.Entry `json:"target"`
	Entry  refs.Entry `json:"entry"`
}

// Undo moves HEAD back to where the newest not-yet-undone operation found
// it; Redo re-applies the newest undone operation. Both are logged. The
// operation undone is the newest when the undo lands.
func (r *Repo) Undo(ctx context.Context, agent string) (Undone, error) {
	return r.undoRedo(ctx, agent, false)
}

// Redo re-applies the operation the newest undo reverted.
func (r *Repo) Redo(ctx context.Context, agent string) (Undone, error) {
	return r.undoRedo(ctx, agent, true)
}

// Undoer is an optional ability of a Storage that undoes and redoes in
// its own process: a served store's client, whose server takes the undo's
// turn among its own writers of the agent (a client reading the operation
// log across the wire could lose every race to a writer landing faster).
type Undoer interface {
	UndoRedo(ctx context.Context, agent string, redo bool) (Undone, error)
}

func (r *Repo) undoRedo(ctx context.Context, agent string, redo bool) (Undone, error) {
	if u, ok := r.Storage.(Undoer); ok {
		return u.UndoRedo(ctx, agent, redo)
	}
	// The newest operation when the undo lands is the one undone: against a
	// live runtime, a landing between the read and the move makes it retry.
	return retryMoved(ctx, func() (Undone, error) {
		defer r.moves.lock(agent)()
		return r.undoRedoOnce(ctx, agent, redo)
	})
}

func (r *Repo) undoRedoOnce(ctx context.Context, agent string, redo bool) (Undone, error) {
	entries, err := r.Refs.Entries(ctx, agent)
	if err != nil {
		return Undone{}, err
	}
	if len(entries) == 0 {
		_, err := r.Refs.Head(ctx, agent)
		if err == nil {
			err = fmt.Errorf("%w: agent %s has no operations", refs.ErrNothingUndo, agent)
		}
		return Undone{}, err
	}
	target, err := refs.UndoTarget(entries, redo)
	cut, wasCut, cerr := r.Refs.CutOf(ctx, agent)
	if cerr != nil {
		return Undone{}, cerr
	}
	if wasCut && !redo && (errors.Is(err, refs.ErrNothingUndo) || target.Seq == cut.Seq+1) {
		// The state before the oldest kept operation was forgotten.
		return Undone{}, fmt.Errorf("%w: agent %s: history was cut before operation %d by forget; there is nothing older to undo to", ErrHorizon, agent, cut.Seq+1)
	}
	if err != nil {
		return Undone{}, fmt.Errorf("%w (agent %s)", err, agent)
	}
	last := entries[len(entries)-1]
	m := refs.Move{Agent: agent, Old: last.New, Op: refs.OpUndo, Time: r.Now(), Target: target.Seq, New: target.Old}
	if redo {
		m.Op, m.New = refs.OpRedo, target.New
	}
	e, err := r.Refs.Move(ctx, m)
	return Undone{Target: target, Entry: e}, err
}

// Fork starts agent to at commit at (usually another agent's HEAD): O(1),
// objects are shared. An existing to is refs.ErrAgentExists.
func (r *Repo) Fork(ctx context.Context, from string, at objects.CID, to string) (refs.Entry, error) {
	if err := refs.ValidateAgent(to); err != nil {
		return refs.Entry{}, err
	}
	if _, err := r.Commit(ctx, at); err != nil {
		return refs.Entry{}, err
	}
	e, err := r.Refs.Move(ctx, refs.Move{Agent: to, New: at, Op: refs.OpFork, Time: r.Now(), Note: "fork of " + from})
	if errors.Is(err, refs.ErrConflict) {
		return refs.Entry{}, fmt.Errorf("%w: %q (pick another name)", refs.ErrAgentExists, to)
	}
	return e, err
}

// MergeConflictError reports a three-way merge whose two sides changed the
// same keys differently (a delete on one side and a change on the other
// counts).
type MergeConflictError struct {
	// Keys are the colliding keys in bytewise order.
	Keys []string
}

func (e *MergeConflictError) Error() string {
	keys, more := e.Keys, ""
	if len(keys) > 10 {
		keys, more = keys[:10], fmt.Sprintf(" and %d more", len(e.Keys)-10)
	}
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	return fmt.Sprintf("repo: merge conflict: key(s) %s%s changed differently on both sides", strings.Join(q, ", "), more)
}

func (e *MergeConflictError) Is(t error) bool { return t == ErrMergeConflict }

// ErrMergeConflict matches every *MergeConflictError.
var ErrMergeConflict = errors.New("repo: merge conflict")

// MergeTrees merges theirs into ours over base: every key theirs changed
// since base that ours did not is applied to ours; a key both changed to
// the same value is taken once; a key both changed differently is a
// *MergeConflictError. It returns the merged tree, flushed, and the nodes
// to store.
func (r *Repo) MergeTrees(ctx context.Context, base, ours, theirs objects.CID) (objects.CID, []objects.Block, error) {
	ourChanges := map[string]objects.CID{}
	for ch, err := range objects.DiffTrees(ctx, r.Blocks, base, ours) {
		if err != nil {
			return objects.CID{}, nil, fmt.Errorf("repo: merge: diffing base with ours: %w", err)
		}
		ourChanges[ch.Path] = ch.New
	}
	merged, err := objects.LoadTree(ctx, r.Blocks, ours)
	if err != nil {
		return objects.CID{}, nil, err
	}
	var conflicts []string
	for ch, err := range objects.DiffTrees(ctx, r.Blocks, base, theirs) {
		if err != nil {
			return objects.CID{}, nil, fmt.Errorf("repo: merge: diffing base with theirs: %w", err)
		}
		if o, ok := ourChanges[ch.Path]; ok {
			if o != ch.New { // both changed it, differently (a zero New is a delete)
				conflicts = append(conflicts, ch.Path)
			}
			continue // the same change on both sides: ours has it
		}
		if ch.New.IsZero() {
			_, err = merged.Delete(ctx, ch.Path)
		} else {
			_, err = merged.Put(ctx, ch.Path, ch.New)
		}
		if err != nil {
			return objects.CID{}, nil, fmt.Errorf("repo: merging %q: %w", ch.Path, err)
		}
	}
	if len(conflicts) > 0 {
		sort.Strings(conflicts)
		return objects.CID{}, nil, &MergeConflictError{Keys: conflicts}
	}
	root, nodes := merged.Flush()
	return root, nodes, nil
}

// LandRequest asks to land a line of commits an agent's writer made from
// Start (its HEAD when the writer began) to Last.
type LandRequest struct {
	Agent string
	// Start and StartTree: where the writer began (zero: a new agent, the
	// empty tree). Last and LastTree: the writer's last commit.
	Start, StartTree objects.CID
	Last, LastTree   objects.CID
	LastTime         int64
	Task             string
	// Time is the operation-log time of the move (zero: Now when Land
	// runs): a writer that prepares what follows a landing (a signed
	// receipt) while the landing waits for the disk names the time first.
	Time int64
	// MergeMessage and MergeMetadata describe the merge commit, if one is
	// needed.
	MergeMessage  string
	MergeMetadata map[string]string
}

// Landed is the outcome of Land.
type Landed struct {
	// From is the HEAD the landing moved from; Commit and Tree where it
	// moved to (Last, or a merge of From and Last).
	From, Commit, Tree objects.CID
	Entry              refs.Entry
	Merged             bool
}

// Land moves the agent's HEAD to req.Last by compare-and-swap if HEAD is
// still at req.Start; otherwise it merges Last into HEAD over StartTree
// (MergeTrees) and lands the merge commit (parents: HEAD, Last), retrying
// while other writers keep moving HEAD. A conflict is a *MergeConflictError
// and HEAD stays (Landed.From then names the HEAD found).
func (r *Repo) Land(ctx context.Context, req LandRequest) (Landed, error) {
	// In-process writers of one agent take turns (moves.lock); writers in
	// other processes are met by compare-and-swap.
	defer r.moves.lock(req.Agent)()
	for {
		h, err := r.Refs.Head(ctx, req.Agent)
		if err != nil && !errors.Is(err, refs.ErrNoAgent) {
			return Landed{}, err
		}
		l := Landed{From: h.Commit, Commit: req.Last, Tree: req.LastTree}
		op := refs.OpCommit
		if h.Commit != req.Start {
			hc, err := r.Commit(ctx, h.Commit)
			if err != nil {
				return Landed{}, fmt.Errorf("repo: reading HEAD %s: %w", h.Commit, err)
			}
			root, nodes, err := r.MergeTrees(ctx, req.StartTree, hc.Tree, req.LastTree)
			if err != nil {
				return Landed{From: h.Commit}, err
			}
			id, _, err := r.WriteCommit(ctx, CommitSpec{Tree: root, Parents: []objects.CID{h.Commit, req.Last},
				ParentTime: max(hc.Time, req.LastTime), Message: req.MergeMessage, Metadata: req.MergeMetadata, Blocks: nodes})
			if err != nil {
				return Landed{}, err
			}
			l.Commit, l.Tree, l.Merged, op = id, root, true, refs.OpMerge
		}
		if err := ctx.Err(); err != nil {
			return Landed{}, err
		}
		now := req.Time
		if now == 0 {
			now = r.Now()
		}
		l.Entry, err = r.Refs.Move(ctx, refs.Move{Agent: req.Agent, Old: h.Commit, New: l.Commit, Op: op, Time: now, Task: req.Task})
		if errors.Is(err, refs.ErrConflict) {
			continue // HEAD moved again: merge onto the new HEAD
		}
		if err != nil {
			return Landed{}, err
		}
		return l, nil
	}
}
