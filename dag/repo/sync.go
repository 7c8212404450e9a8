package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/internal/progress"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/tape"
)

// Lineage sync: copying an agent's history from one repository to another
// (another store's directory, or a served store through dag/repo/remote:
// both are a *Repo) and moving the receiving agent's HEAD onto it.
//
// Negotiation is by commit, as git's have/want: walking the sender's history
// from the wanted head, a commit the receiver already holds is a "have" and
// the walk does not go below it (a store holds what its commits reach); for
// the commits it lacks, each tree node the receiver holds is skipped with
// everything below it. Only blocks the receiver lacks move, in batches.

// SyncStats says what a transfer moved.
type SyncStats struct {
	Commits int   `json:"commits"` // commits the receiver lacked
	Blocks  int   `json:"blocks"`  // blocks copied
	Bytes   int64 `json:"bytes"`   // their bytes
	Haves   int   `json:"haves"`   // commits the receiver already held, where the walk stopped
	// Cuts are the parent links the sender's forgets cut on the way: the
	// receiver must record them (AdoptCuts) so its walks stop there too.
	Cuts []CutLink `json:"cuts,omitempty"`
}

// syncBatch bounds the bytes of one Put on the receiver.
const syncBatch = 4 << 20

// Fetch copies into r every block of src that head reaches and r lacks.
// The blocks are re-hashed as they are read (every BlockStore checks what it
// returns) and checked as what their links say they are, where they are,
// as the store's readers check them: a commit, a tree node at its place in
// its tree (objects.CheckTreeNode; a node r holds is checked to fit there,
// objects.TreeRanges), a chunked value read whole (objects.CheckValue).
// Every link is followed down to blocks r holds: a sender that lacks a
// block it names, or names one that is not what its place wants, is
// refused with an error, and nothing moves (the caller integrates head only
// after Fetch returned without error).
//
// The walk keeps explicit stacks, whose depth the format bounds (a tree is
// at most objects.MaxTreeDepth nodes deep, a chunked value
// objects.MaxChunkDepth), and writes every block after the blocks it links
// to: tree nodes and values as each is checked whole, the commits last,
// oldest first, once every one of them is. A refused fetch leaves in r
// only whole, checked subtrees and values that no commit names yet (gc
// removes them), so that what r holds stays whole there.
func (r *Repo) Fetch(ctx context.Context, src *Repo, head objects.CID) (SyncStats, error) {
	return r.FetchWith(ctx, src, head, nil)
}

// FetchWith is Fetch of a history some of whose values were redacted:
// absent (JudgeRedactions' answer over the sender's records) names the raw
// blocks of values that may be missing there; they are not asked for, and
// a chunked value with such blocks is checked node by node, not by its
// content's sha256.
func (r *Repo) FetchWith(ctx context.Context, src *Repo, head objects.CID, absent func(v, c objects.CID) bool) (SyncStats, error) {
	var st SyncStats
	gone, err := src.Gone(ctx)
	if err != nil {
		return st, err
	}
	f := &fetcher{ctx: ctx, r: r, src: src, st: &st, pending: map[objects.CID][]byte{}, seen: map[objects.CID]fetchSeen{}, progress: progress.Start(ctx, -1), absent: absent}
	f.view = &pendingView{f: f}
	f.ranges = objects.NewTreeRanges(f.view)
	var commits []objects.Block // newest first: written last, oldest first
	stack := []objects.CID{head}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if _, ok := f.seen[c]; ok {
			continue
		}
		f.seen[c] = fetchSeen{}
		if ok, err := r.Blocks.Has(ctx, c); err != nil {
			return st, err
		} else if ok {
			st.Haves++
			continue
		}
		data, err := src.Blocks.Get(ctx, c)
		if err != nil {
			return st, fmt.Errorf("sync: reading commit %s from the sender: %w", c, err)
		}
		cm, err := objects.DecodeCommit(data)
		if err != nil {
			return st, fmt.Errorf("sync: %s: %w", c, err)
		}
		st.Commits++
		if err := f.copyTree(cm.Tree); err != nil {
			return st, err
		}
		commits = append(commits, objects.Block{CID: c, Data: data})
		st.Blocks++
		st.Bytes += int64(len(data))
		f.progress.Add(int64(len(data)))
		for _, p := range cm.Parents {
			if gone(c, p) {
				if ok, err := src.Blocks.Has(ctx, p); err != nil {
					return st, err
				} else if !ok {
					st.Cuts = append(st.Cuts, CutLink{Commit: c, Parents: []objects.CID{p}})
					continue // the sender's forget cut it
				}
			}
			stack = append(stack, p)
		}
	}
	if err := f.flush(); err != nil {
		return st, err
	}
	// The commits, each after its parents (found after it, so written in
	// the reverse order).
	var batch []objects.Block
	size := 0
	for i := len(commits) - 1; i >= 0; i-- {
		batch = append(batch, commits[i])
		size += len(commits[i].Data)
		if size >= syncBatch || i == 0 {
			if err := r.Blocks.Put(ctx, batch...); err != nil {
				return st, fmt.Errorf("sync: storing commits: %w", err)
			}
			batch, size = batch[:0], 0
		}
	}
	return st, nil
}

// fetcher copies trees and values for Fetch.
type fetcher struct {
	ctx      context.Context
	r, src   *Repo
	st       *SyncStats
	progress *progress.Counter // bytes fetched, for a progress bar
	batch    []objects.Block
	pending  map[objects.CID][]byte // the batch, by CID (read by the checks)
	size     int
	seen     map[objects.CID]fetchSeen
	view     *pendingView
	ranges   *objects.TreeRanges
	absent   func(v, c objects.CID) bool // redacted blocks (FetchWith)
}

// fetchSeen is what the fetch knows of a block it met: for a tree node, the
// first place it was checked at (placed), so that a node met again at a
// place no narrower needs no new check.
type fetchSeen struct {
	placed bool // a tree node, checked at spot
	spot   objects.TreeSpot
	value  bool // a value (of a tree entry), checked whole
}

func (f *fetcher) flush() error {
	if len(f.batch) == 0 {
		return nil
	}
	if err := f.r.Blocks.Put(f.ctx, f.batch...); err != nil {
		return fmt.Errorf("sync: storing blocks: %w", err)
	}
	f.batch = f.batch[:0]
	clear(f.pending)
	f.size = 0
	return nil
}

func (f *fetcher) add(c objects.CID, data []byte) error {
	f.batch = append(f.batch, objects.Block{CID: c, Data: data})
	f.pending[c] = data
	f.size += len(data)
	f.st.Blocks++
	f.st.Bytes += int64(len(data))
	f.progress.Add(int64(len(data)))
	if f.size >= syncBatch {
		return f.flush()
	}
	return nil
}

// get returns the sender's block c, or need == false when r holds it.
func (f *fetcher) get(c objects.CID, via string) (data []byte, need bool, err error) {
	if ok, err := f.r.Blocks.Has(f.ctx, c); err != nil || ok {
		return nil, false, err
	}
	if _, ok := f.pending[c]; ok {
		return nil, false, nil
	}
	data, err = f.src.Blocks.Get(f.ctx, c)
	if err != nil {
		return nil, false, fmt.Errorf("sync: reading %s %s from the sender: %w", via, c, err)
	}
	return data, true, nil
}

// copyTree copies the tree whose root is root, each node checked where the
// tree puts it, children before parents.
func (f *fetcher) copyTree(root objects.CID) error {
	w := treeWalk{ctx: f.ctx, seen: f.seen, ranges: f.ranges, what: "sync",
		node: func(spot objects.TreeSpot) ([]byte, bool, error) {
			data, need, err := f.get(spot.CID, "tree node")
			return data, !need, err
		},
		value: f.copyValue, done: f.add}
	return w.tree(root)
}

// treeWalk is the one checking walk of a tree a store is to take in, used
// by Fetch (a sender's tree, copied) and CheckLanding (a tree a served
// store's client wrote): each node is checked where the tree puts it
// (objects.CheckTreeNode), except the nodes already checked whole, which
// must only fit there (met before at a place no narrower, or
// objects.TreeRanges); values are node's caller's to check. It keeps an
// explicit stack, whose depth the format bounds.
type treeWalk struct {
	ctx    context.Context
	seen   map[objects.CID]fetchSeen
	ranges *objects.TreeRanges
	what   string // the errors' prefix
	// node returns the bytes of the node at spot to check, or held when it
	// is already checked whole.
	node func(spot objects.TreeSpot) (data []byte, held bool, err error)
	// value checks a value of a checked node (after its subtrees).
	value func(v objects.CID) error
	// done, if set, is called with each node checked, after everything
	// below it.
	done func(c objects.CID, data []byte) error
}

// walkFrame is a block on treeWalk's stack: its children are walked
// before it is done.
type walkFrame struct {
	c    objects.CID
	data []byte
	subs []objects.TreeSpot
	vals []objects.CID
	i, j int
}

func (w *treeWalk) tree(root objects.CID) error {
	var stack []*walkFrame
	enter := func(spot objects.TreeSpot) error {
		if s, ok := w.seen[spot.CID]; ok {
			if s.placed && spot.Inside(s.spot) {
				return nil
			}
			return w.fits(spot)
		}
		data, held, err := w.node(spot)
		if err != nil {
			return err
		}
		if held { // checked whole: it must fit here
			if s, ok := w.seen[spot.CID]; ok && s.placed && spot.Inside(s.spot) {
				return nil
			}
			if err := w.fits(spot); err != nil {
				return err
			}
			w.seen[spot.CID] = fetchSeen{placed: true, spot: spot, value: w.seen[spot.CID].value}
			return nil
		}
		subs, vals, err := objects.CheckTreeNode(spot, data)
		if err != nil {
			return fmt.Errorf("%s: tree node %s: %w", w.what, spot.CID, err)
		}
		w.seen[spot.CID] = fetchSeen{placed: true, spot: spot}
		stack = append(stack, &walkFrame{c: spot.CID, data: data, subs: subs, vals: vals})
		return nil
	}
	if err := enter(objects.RootSpot(root)); err != nil {
		return err
	}
	for len(stack) > 0 {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		fr := stack[len(stack)-1]
		switch {
		case fr.i < len(fr.subs):
			fr.i++
			if err := enter(fr.subs[fr.i-1]); err != nil {
				return err
			}
		case fr.j < len(fr.vals):
			fr.j++
			if err := w.value(fr.vals[fr.j-1]); err != nil {
				return err
			}
		default:
			stack = stack[:len(stack)-1]
			if w.done != nil {
				if err := w.done(fr.c, fr.data); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// fits checks that the tree node at spot, checked whole before, may sit
// there.
func (w *treeWalk) fits(spot objects.TreeSpot) error {
	if err := w.ranges.Fits(w.ctx, spot); err != nil {
		return fmt.Errorf("%s: tree node %s: %w", w.what, spot.CID, err)
	}
	return nil
}

// copyValue copies the value v: a raw block, or a chunked value, its nodes
// and chunks, checked whole (objects.CheckValue) before its file node is
// written.
func (f *fetcher) copyValue(v objects.CID) error {
	redacted := f.absent != nil && f.absent(v, objects.CID{})
	if redacted && v.Codec() == objects.CodecRaw && f.absent(v, v) {
		return nil // its content was redacted: not there to copy
	}
	if s, ok := f.seen[v]; ok {
		if s.value || v.Codec() != objects.CodecDagCBOR {
			return nil
		}
		// Met as another kind of block (a tree node, a chunk list): as a
		// value, it must read as one.
		if err := objects.CheckValue(f.ctx, f.view, v, nil); err != nil {
			return fmt.Errorf("sync: value %s: %w", v, err)
		}
		f.seen[v] = fetchSeen{value: true}
		return nil
	}
	f.seen[v] = fetchSeen{value: true}
	data, need, err := f.get(v, "value")
	if err != nil {
		return err
	}
	if !need {
		return f.heldValue(v)
	}
	if v.Codec() != objects.CodecDagCBOR {
		return f.add(v, data)
	}
	root, _, err := objects.CheckChunkNode(objects.ChunkSpot{CID: v}, data)
	if err != nil {
		return fmt.Errorf("sync: value %s: %w", v, err)
	}
	type frame struct {
		links []objects.CID
		i     int
		depth int
		c     objects.CID
		data  []byte
	}
	stack := []*frame{{links: root.Chunks}}
	for len(stack) > 0 {
		if err := f.ctx.Err(); err != nil {
			return err
		}
		fr := stack[len(stack)-1]
		if fr.i == len(fr.links) {
			stack = stack[:len(stack)-1]
			if fr.data != nil {
				if err := f.add(fr.c, fr.data); err != nil {
					return err
				}
			}
			continue
		}
		c := fr.links[fr.i]
		fr.i++
		if redacted && c.Codec() == objects.CodecRaw && f.absent(v, c) {
			continue // redacted (and not marked seen: another value may hold it)
		}
		if _, ok := f.seen[c]; ok {
			continue
		}
		f.seen[c] = fetchSeen{}
		data, need, err := f.get(c, "chunk")
		if err != nil || !need {
			return err
		}
		if c.Codec() != objects.CodecDagCBOR {
			if err := f.add(c, data); err != nil {
				return err
			}
			continue
		}
		cn, _, err := objects.CheckChunkNode(objects.ChunkSpot{CID: c, Depth: fr.depth + 1}, data)
		if err != nil {
			return fmt.Errorf("sync: value %s: %w", v, err)
		}
		stack = append(stack, &frame{links: cn.Chunks, depth: fr.depth + 1, c: c, data: data})
	}
	if redacted {
		return f.add(v, data) // its nodes checked; its content is not all there to hash
	}
	// Every chunk is here: the value must read as the reader reads it.
	f.pending[v] = data
	err = objects.CheckValue(f.ctx, f.view, v, nil)
	delete(f.pending, v)
	if err != nil {
		return fmt.Errorf("sync: value %s: %w", v, err)
	}
	return f.add(v, data)
}

// heldValue checks that v, which r holds whole, may be a value: a raw
// block, or a chunked file node (not a list node or a tree node of r's
// that a hostile tree names as a value). One read.
func (f *fetcher) heldValue(v objects.CID) error {
	if v.Codec() != objects.CodecDagCBOR {
		return nil
	}
	data, err := f.view.Get(f.ctx, v)
	if err != nil {
		return fmt.Errorf("sync: value %s: %w", v, err)
	}
	if _, _, err := objects.CheckChunkNode(objects.ChunkSpot{CID: v}, data); err != nil {
		return fmt.Errorf("sync: value %s: %w", v, err)
	}
	return nil
}

// pendingView reads the fetch's batch, then r.
type pendingView struct{ f *fetcher }

func (v *pendingView) Get(ctx context.Context, c objects.CID) ([]byte, error) {
	if data, ok := v.f.pending[c]; ok {
		return data, nil
	}
	return v.f.r.Blocks.Get(ctx, c)
}

func (v *pendingView) Has(ctx context.Context, c objects.CID) (bool, error) {
	if _, ok := v.f.pending[c]; ok {
		return true, nil
	}
	return v.f.r.Blocks.Has(ctx, c)
}

func (v *pendingView) Put(context.Context, ...objects.Block) error {
	return errors.New("sync: the check's view is read-only")
}

// Transfer is what Transfer did: the blocks moved, the HEAD move, the
// receipt lines added.
type Transfer struct {
	Stats    SyncStats
	HEAD     Integration
	Receipts int
	// Redactions: the sender's redaction records this store took, and the
	// blocks of its own they removed.
	Redactions AddedRedactions
}

// Transfer brings src's agent from into r's agent to (clone, pull, send):
// it reads src's HEAD, copies the history (Fetch, every block checked),
// reads src's receipts for the agent when from is to (ReadReceipts: every
// line checked, bounded), and only then records the cut links (AdoptCuts),
// moves HEAD (Integrate: op, ffOnly, note) and adds the receipts, the keys
// that verify them learned from note (AddReceipts). A transfer refused
// before the HEAD move changes no HEAD, receipt, key or checkpoint (blocks
// that arrived stay unreferenced; gc takes them).
func (r *Repo) Transfer(ctx context.Context, src *Repo, from, to string, ffOnly bool, op refs.Op, note string) (Transfer, error) {
	var t Transfer
	h, err := src.Refs.Head(ctx, from)
	if err != nil {
		return t, fmt.Errorf("the other store: %w", err)
	}
	// The sender's redaction records, judged before a block moves: one
	// this store would not honour refuses the whole transfer.
	lines, err := src.RedactionLines(ctx, from)
	if err != nil {
		return t, fmt.Errorf("the other store's redactions: %w", err)
	}
	var absent func(v, c objects.CID) bool
	if len(lines) > 0 {
		if absent, err = r.JudgeRedactions(ctx, lines); err != nil {
			return t, err
		}
	}
	if t.Stats, err = r.FetchWith(ctx, src, h.Commit, absent); err != nil {
		return t, err
	}
	if t.Redactions, err = r.AddRedactions(ctx, lines); err != nil {
		return t, err
	}
	var rc *Receipts
	if from == to {
		if rc, err = ReadReceipts(ctx, src, from); err != nil {
			return t, fmt.Errorf("the other store's receipts: %w", err)
		}
	}
	// A history the other store cut: the cuts come along, recorded before
	// HEAD moves onto it (walks of it must stop there).
	if err := r.AdoptCuts(ctx, to, t.Stats.Cuts); err != nil {
		return t, fmt.Errorf("recording the other store's cuts: %w", err)
	}
	if t.HEAD, err = r.Integrate(ctx, to, h.Commit, ffOnly, op, note); err != nil {
		return t, err
	}
	if rc != nil {
		t.Receipts, err = r.AddReceipts(ctx, to, rc, note)
	}
	return t, err
}

// CutAdopter is an optional ability of a Storage that records received cut
// links in its own process: a served store's client (clients may not write
// checkpoints themselves).
type CutAdopter interface {
	AdoptCuts(ctx context.Context, agent string, links []CutLink) error
}

// AdoptCuts records, in agent's checkpoint, parent links a sender's forget
// cut (SyncStats.Cuts), so that walks of the received history stop there.
// A link is recorded only when its parent is indeed not in this store: a
// cut can never hide what the store holds.
func (r *Repo) AdoptCuts(ctx context.Context, agent string, links []CutLink) error {
	if len(links) == 0 {
		return nil
	}
	if a, ok := r.Storage.(CutAdopter); ok {
		return a.AdoptCuts(ctx, agent, links) // a served store records them in its server
	}
	defer r.moves.lock(agent)()
	cp, ok, err := r.CheckpointOf(ctx, agent)
	if err != nil {
		return err
	}
	if !ok {
		cp = &Checkpoint{Agent: agent, Time: r.Now(), Policy: "cuts received with a pull"}
		cp.index()
	}
	added := 0
	for _, l := range links {
		for _, p := range l.Parents {
			if cp.IsCut(l.Commit, p) {
				continue
			}
			if has, err := r.Blocks.Has(ctx, p); err != nil {
				return err
			} else if has {
				continue
			}
			cp.Cuts = append(cp.Cuts, CutLink{Commit: l.Commit, Parents: []objects.CID{p}})
			cp.index()
			added++
		}
	}
	if added == 0 {
		return nil // nothing new to record: the checkpoint stays as it was (or absent)
	}
	data, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	return r.Storage.SetMeta(ctx, checkpointName(agent), data)
}

// Integration is what Integrate did to an agent's HEAD.
type Integration struct {
	Outcome string      `json:"outcome"` // "created", "up to date", "fast-forward", "merged"
	From    objects.CID `json:"from,omitzero"`
	To      objects.CID `json:"to"`
	Entry   refs.Entry  `json:"entry,omitzero"`
}

// ErrNotFastForward: ffOnly, and the histories diverged.
var ErrNotFastForward = errors.New("the histories have diverged and only a fast-forward was allowed")

// Integrate moves agent's HEAD onto theirs, a commit whose history r holds
// (Fetch first): it creates the agent there when it has no HEAD, leaves it
// when theirs is already in its history, fast-forwards when HEAD is in
// theirs, and otherwise merges as tasks merge (disjoint keys; the same key
// changed on both sides is a *MergeConflictError naming the keys) unless
// ffOnly. op records the move ("clone", "pull"). Compare-and-swap: a HEAD
// that moves meanwhile is integrated with again.
func (r *Repo) Integrate(ctx context.Context, agent string, theirs objects.CID, ffOnly bool, op refs.Op, note string) (Integration, error) {
	if err := refs.ValidateAgent(agent); err != nil {
		return Integration{}, err
	}
	tc, err := r.Commit(ctx, theirs)
	if err != nil {
		return Integration{}, err
	}
	return retryMoved(ctx, func() (Integration, error) {
		defer r.moves.lock(agent)()
		h, err := r.Refs.Head(ctx, agent)
		if errors.Is(err, refs.ErrNoAgent) {
			e, err := r.Refs.Move(ctx, refs.Move{Agent: agent, New: theirs, Op: op, Time: r.Now(), Note: note})
			return Integration{Outcome: "created", To: theirs, Entry: e}, err
		}
		if err != nil {
			return Integration{}, err
		}
		ours := h.Commit
		if ours == theirs {
			return Integration{Outcome: "up to date", From: ours, To: ours}, nil
		}
		// The usual pull first: HEAD is behind theirs.
		if ff, err := r.inHistory(ctx, agent, ours, theirs); err != nil {
			return Integration{}, err
		} else if ff {
			e, err := r.Refs.Move(ctx, refs.Move{Agent: agent, Old: ours, New: theirs, Op: op, Time: r.Now(), Note: note})
			return Integration{Outcome: "fast-forward", From: ours, To: theirs, Entry: e}, err
		}
		in, err := r.inHistory(ctx, agent, theirs, ours)
		if err != nil {
			return Integration{}, err
		}
		if in {
			return Integration{Outcome: "up to date", From: ours, To: ours}, nil
		}
		if ffOnly {
			return Integration{From: ours}, fmt.Errorf("%w: HEAD of %s is %s, the other side is at %s", ErrNotFastForward, agent, ours.Short(), theirs.Short())
		}
		oc, err := r.Commit(ctx, ours)
		if err != nil {
			return Integration{}, err
		}
		base, err := r.mergeBase(ctx, agent, ours, theirs)
		if err != nil {
			return Integration{}, err
		}
		baseTree := objects.EmptyTreeCID
		if !base.IsZero() {
			bc, err := r.Commit(ctx, base)
			if err != nil {
				return Integration{}, err
			}
			baseTree = bc.Tree
		}
		root, nodes, err := r.MergeTrees(ctx, baseTree, oc.Tree, tc.Tree)
		if err != nil {
			return Integration{From: ours}, err
		}
		msg := fmt.Sprintf("%s: merge %s into %s", op, theirs.Short(), ours.Short())
		id, _, err := r.WriteCommit(ctx, CommitSpec{Tree: root, Parents: []objects.CID{ours, theirs}, Message: msg,
			Metadata: map[string]string{"op": string(op), "agent": agent}, Blocks: nodes})
		if err != nil {
			return Integration{}, err
		}
		e, err := r.Refs.Move(ctx, refs.Move{Agent: agent, Old: ours, New: id, Op: refs.OpMerge, Time: r.Now(), Note: note})
		return Integration{Outcome: "merged", From: ours, To: id, Entry: e}, err
	})
}

// inHistory reports whether a is b or an ancestor of b, walking around cuts.
func (r *Repo) inHistory(ctx context.Context, agent string, a, b objects.CID) (bool, error) {
	lo, _, err := r.LogOptions(ctx, agent)
	if err != nil {
		return false, err
	}
	lo.Islands = nil
	for le, err := range dag.LogWith(ctx, r.Blocks, b, lo) {
		if err != nil {
			return false, err
		}
		if le.CID == a {
			return true, nil
		}
	}
	return false, nil
}

// mergeBase is dag.MergeBase walking around cuts.
func (r *Repo) mergeBase(ctx context.Context, agent string, a, b objects.CID) (objects.CID, error) {
	lo, _, err := r.LogOptions(ctx, agent)
	if err != nil {
		return objects.CID{}, err
	}
	lo.Islands = nil
	inA := map[objects.CID]bool{}
	for le, err := range dag.LogWith(ctx, r.Blocks, a, lo) {
		if err != nil {
			return objects.CID{}, err
		}
		inA[le.CID] = true
	}
	for le, err := range dag.LogWith(ctx, r.Blocks, b, lo) {
		if err != nil {
			return objects.CID{}, err
		}
		if inA[le.CID] {
			return le.CID, nil
		}
	}
	return objects.CID{}, nil
}

// Receipts are an agent's receipt lines read from another store, each
// checked as a tape line, and the keys that store trusts to verify them
// (hex): ReadReceipts reads them and writes nothing, AddReceipts records
// them.
type Receipts struct {
	Lines [][]byte
	Keys  []string
}

// Bounds on what ReadReceipts takes from another store: a sender's tape
// beyond them is refused (ErrTooMuch) before anything is written.
const (
	MaxReceiptLines = 1 << 20
	MaxReceiptBytes = 256 << 20
	maxSourceKeys   = 1024
)

// ErrTooMuch: another store sent more than a transfer takes.
var ErrTooMuch = errors.New("repo: the other store sent more than this side takes")

// ReadReceipts reads src's receipt lines for agent and the keys src trusts
// to verify them, within MaxReceiptLines and MaxReceiptBytes; every line
// must be a tape line. It writes nothing.
func ReadReceipts(ctx context.Context, src *Repo, agent string) (*Receipts, error) {
	rc := &Receipts{}
	size := 0
	for l, err := range src.Tape.Lines(ctx, agent) {
		if err != nil {
			return nil, err
		}
		size += len(l) + 1
		if len(rc.Lines) >= MaxReceiptLines || size > MaxReceiptBytes {
			return nil, fmt.Errorf("%w: the receipts of %s are over %d lines or %d bytes", ErrTooMuch, agent, MaxReceiptLines, MaxReceiptBytes)
		}
		if ls, err := tape.SplitNDJSON(l); err != nil || len(ls) != 1 {
			return nil, fmt.Errorf("sync: the receipts of %s: line %d is not a tape line: %v", agent, len(rc.Lines)+1, err)
		}
		rc.Lines = append(rc.Lines, l)
	}
	keys, err := src.TrustedKeys(ctx, agent, KeyVerifiesReceipts)
	if err != nil {
		return nil, err
	}
	if len(keys) > maxSourceKeys {
		return nil, fmt.Errorf("%w: %d keys for the receipts of %s, over %d", ErrTooMuch, len(keys), agent, maxSourceKeys)
	}
	for _, k := range keys {
		rc.Keys = append(rc.Keys, KeyHex(k))
	}
	return rc, nil
}

func ndjsonOf(lines [][]byte) []byte {
	var nd []byte
	for _, l := range lines {
		nd = append(append(nd, l...), '\n')
	}
	return nd
}

// AddReceipts appends to r's tape for agent the lines of rc it lacks
// (tape.Import de-duplicates) and records rc's keys as learned with agent's
// receipts from source: they verify agent's receipts here and sign nothing
// (trust.go). It returns the lines added.
func (r *Repo) AddReceipts(ctx context.Context, agent string, rc *Receipts, source string) (int, error) {
	n := 0
	if len(rc.Lines) > 0 {
		var err error
		if n, err = r.Tape.Import(ctx, agent, ndjsonOf(rc.Lines)); err != nil {
			return 0, err
		}
	}
	if len(rc.Keys) > 0 {
		if len(source) > maxKeySource {
			source = source[:maxKeySource]
			for !utf8.ValidString(source) {
				source = source[:len(source)-1]
			}
		}
		if _, err := r.ApplyKeyOp(ctx, KeyOp{Op: KeyOpLearn, Agent: agent, Keys: rc.Keys, Source: source}); err != nil {
			return n, err
		}
	}
	return n, nil
}

// CopyReceipts is ReadReceipts then AddReceipts: src's receipt lines for
// agent that r lacks, and the keys that verify them learned from source.
func (r *Repo) CopyReceipts(ctx context.Context, src *Repo, agent string, source string) (int, error) {
	rc, err := ReadReceipts(ctx, src, agent)
	if err != nil {
		return 0, err
	}
	return r.AddReceipts(ctx, agent, rc, source)
}
