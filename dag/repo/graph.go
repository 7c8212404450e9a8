package repo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
)

// The commit graph's writer (the record is dag.GraphRecord; docs/format.md,
// "Commit graph"). WriteCommit adds each new commit's record in the same
// write as the commit, so the two land together or not at all; a commit
// whose parents have no record yet (history from before the graph, or
// fetched from another store) first gets its missing ancestors added,
// parents before children. The graph is a cache: readers check every record
// they use and read the commit object for anything the graph lacks, Verify
// checks every record, and RebuildGraph (and gc) writes it anew from the
// commits.

// GraphPutter is the optional ability of a Storage to write blocks and
// metadata records in one write (the Badger and in-memory storages have
// it). The commit graph is kept only in storage that has it.
type GraphPutter interface {
	PutWithMeta(ctx context.Context, blocks []objects.Block, meta ...[]byte) error
}

type graphPos struct{ seq, gen uint64 }

// graphState is the writer's view of the graph: the next record number and
// the positions of recently written commits.
type graphState struct {
	mu     sync.Mutex
	loaded bool
	next   uint64
	known  map[objects.CID]graphPos
}

// maxKnown bounds the positions the writer keeps in memory.
const maxKnown = 1 << 16

// graphBatch is how many records a backfill writes at a time.
const graphBatch = 512

func (r *Repo) graphPutter() (GraphPutter, bool) {
	gp, ok := r.Storage.(GraphPutter)
	return gp, ok
}

var errStopScan = errors.New("stop")

// allocSeq returns the next record number, reading the newest record's
// the first time.
func (r *Repo) allocSeq(ctx context.Context, n uint64) (uint64, error) {
	g := r.graph
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.loaded {
		var next uint64
		err := r.Storage.MetaPrefix(ctx, dag.GraphRecordPrefix, func(name string, _ []byte) error {
			if seq, ok := dag.GraphRecordSeq(name); ok {
				next = seq + 1
			}
			return errStopScan
		})
		if err != nil && !errors.Is(err, errStopScan) {
			return 0, err
		}
		g.next, g.loaded = next, true
	}
	seq := g.next
	g.next += n
	return seq, nil
}

func (r *Repo) noteGraph(pos map[objects.CID]graphPos) {
	g := r.graph
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.known == nil || len(g.known)+len(pos) > maxKnown {
		g.known = make(map[objects.CID]graphPos, len(pos))
	}
	for c, p := range pos {
		g.known[c] = p
	}
}

func (r *Repo) forgetGraph() {
	g := r.graph
	g.mu.Lock()
	defer g.mu.Unlock()
	g.known, g.loaded, g.next = nil, false, 0
}

// graphPosOf returns the record number and generation of c's record, or ok
// false when the graph has no sound record of it.
func (r *Repo) graphPosOf(ctx context.Context, c objects.CID) (graphPos, bool, error) {
	g := r.graph
	g.mu.Lock()
	p, ok := g.known[c]
	g.mu.Unlock()
	if ok {
		return p, true, nil
	}
	graphLookups.Add(1)
	v, ok, err := r.Storage.GetMeta(ctx, dag.GraphIndexName(c))
	if err != nil || !ok {
		return graphPos{}, false, err
	}
	seq, ok := dag.DecodeGraphIndex(v)
	if !ok {
		return graphPos{}, false, nil
	}
	v, ok, err = r.Storage.GetMeta(ctx, dag.GraphRecordName(seq))
	if err != nil || !ok {
		return graphPos{}, false, err
	}
	rec, err := dag.DecodeGraphRecord(v)
	if err != nil {
		return graphPos{}, false, nil
	}
	if id, _, err := rec.Check(); err != nil || id != c {
		return graphPos{}, false, nil
	}
	return graphPos{seq: seq, gen: rec.Gen}, true, nil
}

// newGraphPutter is storage that writes a commit's records with it only
// when the commit is not stored yet (the Badger storage): its write's
// existence check of the commit stands for the lookup of the commit's
// record.
type newGraphPutter interface {
	PutNewWithMeta(ctx context.Context, blocks []objects.Block, meta ...[]byte) (bool, error)
}

// graphLookups counts the commit-graph index lookups that reach the
// storage (tests).
var graphLookups atomic.Int64

// graphRecordFor makes the records that add commit b (cm) to the graph,
// after adding any of its parents' history the graph lacks. It returns nil
// when the storage keeps no graph or c has a record already (looked up
// only when own: else the write of the records is to check, by the
// commit's presence, newGraphPutter).
func (r *Repo) graphRecordFor(ctx context.Context, b objects.Block, cm *objects.Commit, blocks []objects.Block, own bool) ([][]byte, graphPos, error) {
	if _, ok := r.graphPutter(); !ok {
		return nil, graphPos{}, nil
	}
	if own {
		if _, ok, err := r.graphPosOf(ctx, b.CID); err != nil || ok {
			return nil, graphPos{}, err
		}
	}
	parents := make([]uint64, len(cm.Parents))
	var gen uint64
	for i, p := range cm.Parents {
		pos, ok, err := r.graphPosOf(ctx, p)
		if err != nil {
			return nil, graphPos{}, err
		}
		if !ok {
			if _, err := r.AddToGraph(ctx, p); err != nil {
				return nil, graphPos{}, err
			}
			if pos, ok, err = r.graphPosOf(ctx, p); err != nil {
				return nil, graphPos{}, err
			}
		}
		if ok {
			parents[i], gen = pos.seq+1, max(gen, pos.gen)
		}
	}
	seq, err := r.allocSeq(ctx, 1)
	if err != nil {
		return nil, graphPos{}, err
	}
	pos := graphPos{seq: seq, gen: gen + 1}
	rec := dag.GraphRecord{Gen: pos.gen, ParentSeqs: parents, Commit: b.Data,
		Bundle: r.recordedBundle(ctx, cm.Tree, cm.Parents, blocks)}
	return [][]byte{[]byte(dag.GraphRecordName(seq)), rec.Encode(), []byte(dag.GraphIndexName(b.CID)), dag.EncodeGraphIndex(seq)}, pos, nil
}

// AddToGraph adds to the commit graph every commit reachable from tips
// that has no record yet, parents before children, and returns how many it
// added. A parent that is not in the store (a forget cut it) gets no
// record; its children's records say so. Storage that keeps no graph adds
// nothing.
func (r *Repo) AddToGraph(ctx context.Context, tips ...objects.CID) (int, error) {
	gp, ok := r.graphPutter()
	if !ok {
		return 0, nil
	}
	added := map[objects.CID]graphPos{}
	missing := map[objects.CID]bool{}
	lookup := func(c objects.CID) (graphPos, bool, error) {
		if p, ok := added[c]; ok {
			return p, true, nil
		}
		return r.graphPosOf(ctx, c)
	}
	type item struct {
		c    objects.CID
		cm   *objects.Commit
		data []byte
	}
	var stack []item
	for _, t := range tips {
		stack = append(stack, item{c: t})
	}
	var batch [][]byte
	var batchPos = map[objects.CID]graphPos{}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := gp.PutWithMeta(ctx, nil, batch...); err != nil {
			return err
		}
		r.noteGraph(batchPos)
		batch, batchPos = nil, map[objects.CID]graphPos{}
		return nil
	}
	n := 0
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		i := len(stack) - 1
		it := stack[i]
		if _, ok, err := lookup(it.c); err != nil {
			return n, err
		} else if ok || missing[it.c] || it.c.Codec() != objects.CodecDagCBOR {
			stack = stack[:i]
			continue
		}
		if it.cm == nil {
			data, err := r.Storage.Get(ctx, it.c)
			if errors.Is(err, objects.ErrNotFound) {
				missing[it.c] = true
				stack = stack[:i]
				continue
			}
			if err != nil {
				return n, err
			}
			cm, err := objects.DecodeCommit(data)
			if err != nil {
				return n, fmt.Errorf("repo: commit graph: %s: %w", it.c, err)
			}
			stack[i].cm, stack[i].data = cm, data
			for _, p := range cm.Parents {
				if _, ok, err := lookup(p); err != nil {
					return n, err
				} else if !ok && !missing[p] {
					stack = append(stack, item{c: p})
				}
			}
			continue
		}
		// Every parent has been added (or is not in the store).
		stack = stack[:i]
		parents := make([]uint64, len(it.cm.Parents))
		var gen uint64
		for j, p := range it.cm.Parents {
			pos, ok, err := lookup(p)
			if err != nil {
				return n, err
			}
			if ok {
				parents[j], gen = pos.seq+1, max(gen, pos.gen)
			}
		}
		seq, err := r.allocSeq(ctx, 1)
		if err != nil {
			return n, err
		}
		pos := graphPos{seq: seq, gen: gen + 1}
		added[it.c], batchPos[it.c] = pos, pos
		rec := dag.GraphRecord{Gen: pos.gen, ParentSeqs: parents, Commit: it.data,
			Bundle: r.recordedBundle(ctx, it.cm.Tree, it.cm.Parents, nil)}
		batch = append(batch, []byte(dag.GraphRecordName(seq)), rec.Encode(), []byte(dag.GraphIndexName(it.c)), dag.EncodeGraphIndex(seq))
		n++
		if len(batch) >= 4*graphBatch {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	return n, flush()
}

// RebuildGraph drops the commit graph and writes it anew from the commits
// every root reaches (Roots). It returns the records written. Writers in
// this process wait while it runs (as they wait for gc).
func (r *Repo) RebuildGraph(ctx context.Context) (int, error) {
	if _, ok := r.graphPutter(); !ok {
		return 0, nil
	}
	release, err := r.gate.exclusive(ctx)
	if err != nil {
		return 0, err
	}
	defer release()
	return r.rebuildGraph(ctx)
}

// rebuildGraph is RebuildGraph with the write gate held.
func (r *Repo) rebuildGraph(ctx context.Context) (int, error) {
	if err := r.dropGraph(ctx); err != nil {
		return 0, err
	}
	roots, err := r.Roots(ctx)
	if err != nil {
		return 0, err
	}
	return r.AddToGraph(ctx, roots...)
}

// dropGraph deletes every commit-graph record.
func (r *Repo) dropGraph(ctx context.Context) error {
	if _, ok := r.graphPutter(); !ok {
		return nil
	}
	r.forgetGraph()
	err := r.Storage.DeleteMetaPrefix(ctx, dag.GraphPrefix)
	r.forgetGraph()
	return err
}

// GraphReport is what VerifyGraph found.
type GraphReport struct {
	Records  int      // records in the graph
	Problems []string // records that are damaged or disagree with the store
}

// VerifyGraph checks every commit-graph record: its form and checksum, that
// its commit is a commit held in the store, that each parent number names
// the record of that parent, that its generation number is one more than
// its parents' greatest, and that each index entry names a record of its
// commit. A graph that lacks records is not a problem (readers read those
// commits from the store): an index entry or a parent number naming no
// record is a graph behind, as a write or a rebuild cut short leaves it;
// one naming a record of another commit is a problem.
func (r *Repo) VerifyGraph(ctx context.Context) (GraphReport, error) {
	return r.verifyGraphIn(ctx, r.Blocks)
}

// verifyGraphIn is VerifyGraph reading trees from bs (Verify's view of
// the store it read once).
func (r *Repo) verifyGraphIn(ctx context.Context, bs objects.BlockStore) (GraphReport, error) {
	var rep GraphReport
	type info struct {
		cid     objects.CID
		gen     uint64
		parents []objects.CID
		seqs    []uint64
	}
	recs := map[uint64]info{}
	problem := func(format string, a ...any) {
		if len(rep.Problems) < 100 {
			rep.Problems = append(rep.Problems, "commit graph: "+fmt.Sprintf(format, a...))
		}
	}
	// One scan of the whole graph, index entries ("cgraph/i/") before
	// records ("cgraph/r/"): one view of the store, so that commits a
	// writer adds meanwhile are wholly in it or wholly not.
	index := map[objects.CID]uint64{}
	var bundles []recordBundle
	err := r.Storage.MetaPrefix(ctx, dag.GraphPrefix, func(name string, v []byte) error {
		if strings.HasPrefix(name, dag.GraphIndexPrefix) {
			c, err := objects.ParseCID(name[len(dag.GraphIndexPrefix):])
			if err != nil {
				problem("an index entry named %q", name)
				return nil
			}
			seq, ok := dag.DecodeGraphIndex(v)
			if !ok {
				problem("index entry of %s: bad value", c.Short())
				return nil
			}
			index[c] = seq
			return nil
		}
		rep.Records++
		seq, ok := dag.GraphRecordSeq(name)
		if !ok {
			problem("a record named %q", name)
			return nil
		}
		rec, err := dag.DecodeGraphRecord(v)
		if err != nil {
			problem("record %d: %v", seq, err)
			return nil
		}
		id, cm, err := rec.Check()
		if err != nil {
			problem("record %d: %v", seq, err)
			return nil
		}
		recs[seq] = info{cid: id, gen: rec.Gen, parents: cm.Parents, seqs: rec.ParentSeqs}
		if rec.Bundle != nil {
			bundles = append(bundles, recordBundle{seq: seq, tree: cm.Tree, bundle: *rec.Bundle})
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	for seq, in := range recs {
		if ok, err := r.Storage.Has(ctx, in.cid); err != nil {
			return rep, err
		} else if !ok {
			problem("record %d holds commit %s, which is not in the store", seq, in.cid)
		}
		var gen uint64
		linked := true
		for i, p := range in.seqs {
			if p == 0 {
				continue
			}
			pin, ok := recs[p-1]
			if !ok || pin.cid != in.parents[i] {
				linked = false
				// A parent record that is missing is a graph behind (a
				// rebuild cut short): readers read that commit from the
				// store. A damaged one is its own problem.
				if ok {
					problem("record %d: parent %d (%s) is not record %d", seq, i+1, in.parents[i].Short(), p-1)
				}
				continue
			}
			gen = max(gen, pin.gen)
		}
		if linked && in.gen != gen+1 {
			problem("record %d: generation %d, want %d", seq, in.gen, gen+1)
		}
	}
	if err := verifyGraphBundles(ctx, bs, bundles, problem); err != nil {
		return rep, err
	}
	for c, seq := range index {
		if in, ok := recs[seq]; ok && in.cid != c {
			problem("index entry of %s names record %d, which does not hold it", c.Short(), seq)
		}
	}
	return rep, nil
}
