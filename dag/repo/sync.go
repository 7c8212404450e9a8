package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/agentstate/agentstate/dag"
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
// returns) and decoded as what their links say they are (a commit, a tree
// node, a chunked value), and every link is followed down to blocks r
// holds: a sender that lacks a block it names, or names one of the wrong
// kind, is refused with an error, and nothing moves (the caller integrates
// head only after Fetch returned without error).
func (r *Repo) Fetch(ctx context.Context, src *Repo, head objects.CID) (SyncStats, error) {
	var st SyncStats
	gone, err := src.Gone(ctx)
	if err != nil {
		return st, err
	}
	var batch []objects.Block
	var batchBytes int
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := r.Blocks.Put(ctx, batch...); err != nil {
			return fmt.Errorf("sync: storing blocks: %w", err)
		}
		batch, batchBytes = batch[:0], 0
		return nil
	}
	add := func(c objects.CID, data []byte) error {
		batch = append(batch, objects.Block{CID: c, Data: data})
		batchBytes += len(data)
		st.Blocks++
		st.Bytes += int64(len(data))
		if batchBytes >= syncBatch {
			return flush()
		}
		return nil
	}
	has := func(c objects.CID) (bool, error) { return r.Blocks.Has(ctx, c) }
	seen := map[objects.CID]bool{}
	// The copy is typed as a walk is (dag.Walk): a commit's tree must be a
	// tree node, whose subtrees are tree nodes and whose values are raw
	// blocks or chunked values, whose links are chunks. Every link of every
	// block copied is followed here, and a block r already holds is whole
	// there (every store writes children before parents, as this copy
	// does), so when the copy ends without error r holds the whole history.
	var copyTree, copyValue func(c objects.CID, via string) error
	fetch := func(c objects.CID, via string) ([]byte, bool, error) {
		if seen[c] {
			return nil, false, nil
		}
		seen[c] = true
		if ok, err := has(c); err != nil || ok {
			return nil, false, err
		}
		data, err := src.Blocks.Get(ctx, c)
		if err != nil {
			return nil, false, fmt.Errorf("sync: reading %s %s from the sender: %w", via, c, err)
		}
		return data, true, nil
	}
	copyTree = func(c objects.CID, via string) error {
		data, need, err := fetch(c, via)
		if err != nil || !need {
			return err
		}
		subs, vals, err := objects.NodeLinks(data)
		if err != nil {
			return fmt.Errorf("sync: %s %s: %w", via, c, err)
		}
		for _, l := range subs {
			if err := copyTree(l, "tree node"); err != nil {
				return err
			}
		}
		for _, l := range vals {
			if err := copyValue(l, "value"); err != nil {
				return err
			}
		}
		return add(c, data)
	}
	copyValue = func(c objects.CID, via string) error {
		data, need, err := fetch(c, via)
		if err != nil || !need {
			return err
		}
		if c.Codec() == objects.CodecDagCBOR { // a chunked value
			links, err := objects.ChunkLinks(data)
			if err != nil {
				return fmt.Errorf("sync: %s %s: %w", via, c, err)
			}
			for _, l := range links {
				if err := copyValue(l, "chunk"); err != nil {
					return err
				}
			}
		}
		return add(c, data)
	}
	stack := []objects.CID{head}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[c] {
			continue
		}
		seen[c] = true
		if ok, err := has(c); err != nil {
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
		if err := copyTree(cm.Tree, "tree node"); err != nil {
			return st, err
		}
		if err := add(c, data); err != nil {
			return st, err
		}
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
	if err := flush(); err != nil {
		return st, err
	}
	return st, nil
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
var ErrNotFastForward = errors.New("the histories have diverged and --ff-only refuses a merge")

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
var ErrTooMuch = errors.New("sync: the other store sent more than a transfer takes")

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
		rc.Lines = append(rc.Lines, l)
	}
	if _, err := tape.SplitNDJSON(ndjsonOf(rc.Lines)); err != nil {
		return nil, fmt.Errorf("sync: the receipts of %s: %w", agent, err)
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
