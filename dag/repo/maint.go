package repo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
)

// Roots returns every commit a HEAD, a kept operation-log entry, a tag or a
// checkpoint's island names: what gc keeps and verify checks (each agent's
// walk honouring its cuts).
func (r *Repo) Roots(ctx context.Context) ([]objects.CID, error) {
	byAgent, err := r.rootsByAgent(ctx, nil)
	if err != nil {
		return nil, err
	}
	seen := map[objects.CID]bool{}
	var out []objects.CID
	for _, ar := range byAgent {
		for _, c := range ar.commits {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// VerifyReport is the outcome of Verify.
type VerifyReport struct {
	Agents   int
	Commits  int
	Blocks   int
	Problems []string
	// GraphRecords counts the commit graph's records; GraphProblems the
	// problems (among Problems) found in it, which RebuildGraph repairs.
	GraphRecords, GraphProblems int
	// TaskRecordProblems counts the problems (among Problems) found in the
	// task records, which RebuildTaskRecords repairs.
	TaskRecordProblems int
	// ListSizeRecords counts the list size records; ListSizeProblems the
	// problems (among Problems) found in them, which RebuildListSizes
	// repairs.
	ListSizeRecords, ListSizeProblems int
	// Scanned and Hashed are the bytes the one pass over the store read
	// and re-hashed (zero when the storage cannot be scanned).
	Scanned, Hashed int64
}

// Verify re-hashes every block reachable from every HEAD and operation-log
// entry, decodes every commit and tree node, and checks every operation-log
// chain.
func (r *Repo) Verify(ctx context.Context) (VerifyReport, error) {
	var rep VerifyReport
	heads, err := r.Refs.Agents(ctx)
	if err != nil {
		return rep, err
	}
	rep.Agents = len(heads)
	for _, h := range heads {
		for _, p := range r.Refs.Verify(ctx, h.Agent) {
			rep.Problems = append(rep.Problems, p.Error())
		}
	}
	// Where the storage can, every block is read once in its own order and
	// re-hashed on every core (scanStore); the walk then reads the nodes
	// from memory and only checks the raw values present. A chunked
	// value's chunks are read again, in order, for its size and sha256.
	bs := r.Blocks
	opts := dag.WalkOptions{VerifyValues: true}
	var view *scanned
	var reached *scanSet
	if sc, ok := r.Storage.(objects.BlockScanner); ok {
		var err error
		if view, err = scanStore(ctx, sc, r.Blocks, true); err != nil {
			return rep, err
		}
		reached = newScanSet(view) // the walk's set: a bit for each block of the scan
		bs, opts.Hashed, opts.Reached, opts.Ahead = view, view.rawHashed, reached, true
		rep.Scanned, rep.Hashed = view.bytes, view.hashed
	}
	reach, problems, err := r.walkAllIn(ctx, bs, opts, nil)
	if err != nil {
		return rep, err
	}
	isCommit := func(c objects.CID) {
		if c.Codec() == objects.CodecDagCBOR {
			if _, err := dag.ReadCommit(ctx, bs, c); err == nil {
				rep.Commits++
			}
		}
	}
	if reached != nil {
		rep.Blocks, _ = reached.count()
		rep.Blocks += len(reached.extra)
		for i, data := range view.nodes {
			if data != nil && reached.has(uint32(i)) {
				if _, err := objects.DecodeCommit(data); err == nil {
					rep.Commits++
				}
			}
		}
		for c := range reached.extra {
			isCommit(c)
		}
	} else {
		rep.Blocks = len(reach)
		for c := range reach {
			isCommit(c)
		}
	}
	for _, p := range problems {
		rep.Problems = append(rep.Problems, p.Error())
	}
	_, badRed, err := r.readRedactions(ctx)
	if err != nil {
		return rep, err
	}
	redProblems, err := r.redactionProblems(ctx, badRed)
	if err != nil {
		return rep, err
	}
	rep.Problems = append(rep.Problems, redProblems...)
	g, err := r.verifyGraphIn(ctx, bs)
	if err != nil {
		return rep, err
	}
	rep.GraphRecords, rep.GraphProblems = g.Records, len(g.Problems)
	rep.Problems = append(rep.Problems, g.Problems...)
	tp, err := r.VerifyTaskRecords(ctx)
	if err != nil {
		return rep, err
	}
	rep.TaskRecordProblems = len(tp)
	rep.Problems = append(rep.Problems, tp...)
	lp, nl, err := r.verifyListSizes(ctx, bs)
	if err != nil {
		return rep, err
	}
	rep.ListSizeRecords, rep.ListSizeProblems = nl, len(lp)
	rep.Problems = append(rep.Problems, lp...)
	bad, err := r.BadTags(ctx, "")
	if err != nil {
		return rep, err
	}
	for _, b := range bad {
		rep.Problems = append(rep.Problems, fmt.Sprintf("tag record %q of agent %q: %s; it names no commit (agentstate tag -d removes it)", b.Name, b.Agent, b.Problem))
	}
	return rep, nil
}

// GCReport says what gc freed.
type GCReport struct {
	Kept, Deleted int
	BytesFreed    int64
	// Packed counts the blocks gc stored in packs anew, PackBytes those
	// packs' bytes (docs/format.md, "Packs").
	Packed    int   `json:",omitempty"`
	PackBytes int64 `json:",omitempty"`
}

// Collector is an optional ability of a Storage that collects its own
// garbage: a served store's client, whose server runs GC beside its writers.
type Collector interface {
	GC(ctx context.Context, dryRun bool) (GCReport, error)
}

// GC deletes every block that no HEAD, no kept operation-log entry, no tag
// and no checkpoint's kept commit reaches (walking no cut parent link). It
// refuses to run when the reachable graph has missing or corrupt blocks
// (verify first), since it could not tell what those would have reached.
//
// In a served store gc runs beside writers: it waits for the writers in
// flight in this process and holds new ones back while it runs (see
// HoldWrites); the caller must not hold the gate itself.
func (r *Repo) GC(ctx context.Context, dryRun bool) (GCReport, error) {
	if c, ok := r.Storage.(Collector); ok {
		return c.GC(ctx, dryRun) // a served store collects in its server
	}
	release, err := r.gate.exclusive(ctx)
	if err != nil {
		return GCReport{}, err
	}
	defer release()
	rep, err := r.collect(ctx, dryRun, nil)
	if err != nil || dryRun {
		return rep, err
	}
	// Then what is kept is packed: a chunked value's versions together,
	// compressed as one (pack.go).
	pr, err := r.repack(ctx)
	rep.Packed, rep.PackBytes = pr.Blocks, pr.Bytes
	return rep, err
}

// ErrDamaged: blocks that the store's references reach are missing or
// corrupt, so gc deletes nothing (verify lists them).
var ErrDamaged = errors.New("the store has missing or corrupt reachable blocks")

// collect is gc's work, with the write gate held: overrides replaces some
// agents' checkpoints (a forget's dry run).
func (r *Repo) collect(ctx context.Context, dryRun bool, overrides map[string]*Checkpoint) (_ GCReport, err error) {
	var rep GCReport
	reach, problems, err := r.walkAll(ctx, dag.WalkOptions{}, overrides)
	if err != nil {
		return rep, err
	}
	if len(problems) > 0 {
		return rep, fmt.Errorf("gc: %w: %d, e.g. %v (nothing was deleted)", ErrDamaged, len(problems), problems[0])
	}
	lister, ok1 := r.Storage.(objects.BlockLister)
	deleter, ok2 := r.Storage.(objects.BlockDeleter)
	if !ok1 || !ok2 {
		return rep, fmt.Errorf("gc: this storage cannot list or delete blocks")
	}
	var dead []objects.CID
	for c, err := range lister.AllCIDs(ctx) {
		if err != nil {
			return rep, err
		}
		if _, ok := reach[c]; ok {
			rep.Kept++
			continue
		}
		dead = append(dead, c)
	}
	for _, c := range dead {
		if data, err := r.Blocks.Get(ctx, c); err == nil {
			rep.BytesFreed += int64(len(data))
		}
	}
	rep.Deleted = len(dead)
	if dryRun || len(dead) == 0 {
		return rep, nil
	}
	// Stat caches name values by CID without keeping them reachable: drop
	// every record whose tree (whose leaves its entries are) is not kept
	// before deleting anything, so a gc killed half-way cannot leave a
	// cache pointing at deleted blocks. A record whose tree is kept names
	// only kept values, and stays (the directories checked out from what
	// is kept stay the store's to update), unless it names a redacted
	// value: the blocks a redaction removes are not reached, and gc
	// deletes them even where a kept tree names the value (stored again
	// by a later commit of the same content); an import would take them
	// for stored from the value's list nodes.
	red, _, err := r.readRedactions(ctx)
	if err != nil {
		return rep, err
	}
	if err := r.StatCache().Prune(func(data []byte) bool {
		tree, ok := export.StatCacheTree(data)
		if !ok || !reach.Has(tree) {
			return false
		}
		if len(red.byValue) == 0 {
			return true
		}
		vs, ok := export.StatCacheValues(data)
		for _, v := range vs {
			if red.absent(v, objects.CID{}) {
				return false
			}
		}
		return ok
	}); err != nil {
		return rep, fmt.Errorf("gc: dropping stat caches: %w", err)
	}
	// So does the commit graph, rebuilt after the deletion from what is left.
	if err := r.dropGraph(ctx); err != nil {
		return rep, fmt.Errorf("gc: dropping the commit graph: %w", err)
	}
	defer func() {
		if err == nil {
			if _, gerr := r.rebuildGraph(ctx); gerr != nil {
				err = fmt.Errorf("gc: rebuilding the commit graph: %w", gerr)
			}
		}
	}()
	if cc, ok := r.Blocks.(*dag.CommitCache); ok {
		cc.Forget(dead...)
	}
	if err := deleter.Delete(ctx, dead...); err != nil {
		return rep, fmt.Errorf("gc: deleting: %w", err)
	}
	if redacted := r.redactedBlocks(ctx); slices.ContainsFunc(dead, func(c objects.CID) bool { return redacted[c] }) {
		r.scrub() // the end of a redaction killed before its deletion
	} else if rc, ok := r.Storage.(Reclaimer); ok {
		rc.Reclaim()
	}
	return rep, nil
}
