package dag

import (
	"context"
	"iter"
	"slices"

	"github.com/agentstate/agentstate/objects"
)

// LogEntry is one commit in history.
type LogEntry struct {
	CID    objects.CID
	Commit *objects.Commit
	// Cut lists the commit's parents a forget cut (LogOptions.Cut): history
	// below them is gone.
	Cut []objects.CID
	// Bundle is the bundle hash of the commit's tree when its commit-graph
	// record held it (nil: not known from the walk).
	Bundle *objects.BundleHash
}

// LogOptions tune LogWith.
type LogOptions struct {
	// Cut names parent links a forget cut; they are not followed (and their
	// parents need not exist), and the child's LogEntry lists them.
	Cut func(child, parent objects.CID) bool
	// Islands are commits kept beyond a cut (a retention policy's older
	// keeps): each joins the history in time order, if not newer than start.
	Islands []objects.CID
	// Gone names parent links any forget cut: such a parent, when missing,
	// ends its line (listed in Cut) instead of failing the log.
	Gone func(child, parent objects.CID) bool
	// Many says the caller takes many commits (a log with no limit, or a
	// limit above a few): the commit graph is then read in passes from the
	// walk's first record, as a long walk reads it after its first few,
	// instead of looking those few up one by one (each lookup decompresses
	// a block the pass reads anyway).
	Many bool
}

// logQueue is a max-heap of log entries: newest first, then highest CID.
// (Typed rather than container/heap's: boxing each entry in an interface
// was a tenth of a served log.)
type logQueue []LogEntry

func (q logQueue) Len() int { return len(q) }
func (q logQueue) less(i, j int) bool {
	if q[i].Commit.Time != q[j].Commit.Time {
		return q[i].Commit.Time > q[j].Commit.Time
	}
	return q[i].CID.Compare(q[j].CID) > 0
}

func (q *logQueue) push(e LogEntry) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (q *logQueue) pop() LogEntry {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = LogEntry{}
	h = h[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(h) && h.less(l, m) {
			m = l
		}
		if r < len(h) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	*q = h
	return top
}

// Log yields the commits reachable from start, newest first, each once,
// and every commit before its parents. Commits are ordered by time; those
// with the same time (a runtime lands many tasks a second) are ordered
// topologically among themselves, then by CID, highest first. This relies on
// a commit's time being at least its parents' (the time rule agentstate
// commits are written under); for commits that break it the order is by time
// alone.
func Log(ctx context.Context, bs objects.BlockStore, start objects.CID) iter.Seq2[LogEntry, error] {
	return LogWith(ctx, bs, start, LogOptions{})
}

// LogWith is Log over a history a forget cut (see LogOptions).
func LogWith(ctx context.Context, bs objects.BlockStore, start objects.CID, o LogOptions) iter.Seq2[LogEntry, error] {
	return func(yield func(LogEntry, error) bool) {
		rd := newCommitReader(bs)
		defer rd.close()
		if o.Many && rd.graph != nil {
			rd.graph.reads = scanAfter // the next record read starts a pass
		}
		cm, bundle, err := rd.read(ctx, start)
		if err != nil {
			yield(LogEntry{}, err)
			return
		}
		q, seen, err := startLog(ctx, rd, LogEntry{CID: start, Commit: cm, Bundle: bundle}, o)
		if err == nil {
			err = walkLog(ctx, rd, q, seen, o, yield)
		}
		if err != nil {
			yield(LogEntry{}, err)
		}
	}
}

// startLog is a walk's first queue: start and the islands not newer.
func startLog(ctx context.Context, rd *commitReader, start LogEntry, o LogOptions) (*logQueue, map[objects.CID]bool, error) {
	var seen map[objects.CID]bool
	if o.Many {
		// Sized for a thousand commits: a long walk's set does not grow
		// (and rehash) from nothing a doubling at a time.
		seen = make(map[objects.CID]bool, 1024)
	} else {
		seen = make(map[objects.CID]bool)
	}
	seen[start.CID] = true
	q := &logQueue{start}
	for _, id := range o.Islands {
		if seen[id] {
			continue
		}
		ic, bundle, err := rd.read(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		if ic.Time <= start.Commit.Time {
			seen[id] = true
			q.push(LogEntry{CID: id, Commit: ic, Bundle: bundle})
		}
	}
	return q, seen, nil
}

// walkLog pops q as Log orders it, yielding each commit, until q is empty
// or yield returns false; q is then the walk's frontier: every commit the
// walk has still to yield is in q or an ancestor of one there (the rest
// of a group of commits of one time goes back into q: walked again, its
// order is the same).
func walkLog(ctx context.Context, rd *commitReader, q *logQueue, seen map[objects.CID]bool, o LogOptions,
	yield func(LogEntry, error) bool) error {
	var bucket []LogEntry // reused: a linear history makes one a commit
	for q.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		// Every commit of the newest time left: those queued and, from
		// them, their ancestors of the same time. When only one queued
		// commit has that time, everything else left is older or its
		// ancestor: it goes first, alone (a linear history, even one
		// written within one second, never gathers a bucket).
		t := (*q)[0].Commit.Time
		clear(bucket)
		bucket = bucket[:0]
		for q.Len() > 0 && (*q)[0].Commit.Time == t {
			bucket = append(bucket, q.pop())
		}
		expand := len(bucket) > 1
		for i := 0; i < len(bucket); i++ {
			for _, p := range bucket[i].Commit.Parents {
				if o.Cut != nil && o.Cut(bucket[i].CID, p) {
					bucket[i].Cut = append(bucket[i].Cut, p)
					continue
				}
				if seen[p] {
					continue
				}
				pc, bundle, err := rd.read(ctx, p)
				if err != nil && o.Gone != nil && o.Gone(bucket[i].CID, p) && isMissing(err) {
					bucket[i].Cut = append(bucket[i].Cut, p)
					continue
				}
				if err != nil {
					return err
				}
				seen[p] = true
				if pc.Time == t && expand {
					bucket = append(bucket, LogEntry{CID: p, Commit: pc, Bundle: bundle})
				} else {
					q.push(LogEntry{CID: p, Commit: pc, Bundle: bundle})
				}
			}
		}
		ordered := topoOrder(bucket)
		for i, e := range ordered {
			if !yield(e, nil) {
				// The rest of the group goes back: q stays the frontier.
				for _, r := range ordered[i+1:] {
					r.Cut = nil
					q.push(r)
				}
				return nil
			}
		}
	}
	return nil
}

// topoOrder orders commits so that each comes before its parents among
// them; ready commits go highest CID first.
func topoOrder(bucket []LogEntry) []LogEntry {
	if len(bucket) == 1 {
		return bucket
	}
	children := make(map[objects.CID]int, len(bucket))
	for _, e := range bucket {
		children[e.CID] += 0
	}
	for _, e := range bucket {
		for _, p := range e.Commit.Parents {
			if _, ok := children[p]; ok {
				children[p]++
			}
		}
	}
	byCID := make(map[objects.CID]LogEntry, len(bucket))
	ready := &logQueue{}
	for _, e := range bucket {
		byCID[e.CID] = e
		if children[e.CID] == 0 {
			ready.push(e)
		}
	}
	out := make([]LogEntry, 0, len(bucket))
	for ready.Len() > 0 {
		e := ready.pop()
		out = append(out, e)
		for _, p := range e.Commit.Parents {
			if n, ok := children[p]; ok {
				if children[p] = n - 1; n == 1 {
					ready.push(byCID[p])
				}
			}
		}
	}
	return out
}

// TouchesKey reports whether commit c changed key relative to its first
// parent (or, for a root commit, whether key exists in it).
func TouchesKey(ctx context.Context, bs objects.BlockStore, c *objects.Commit, key string) (bool, error) {
	t, err := objects.LoadTree(ctx, bs, c.Tree)
	if err != nil {
		return false, err
	}
	v, ok, err := t.Get(ctx, key)
	if err != nil {
		return false, err
	}
	if len(c.Parents) == 0 {
		return ok, nil
	}
	pc, err := ReadCommit(ctx, bs, c.Parents[0])
	if err != nil {
		return false, err
	}
	if pc.Tree == c.Tree {
		return false, nil
	}
	pt, err := objects.LoadTree(ctx, bs, pc.Tree)
	if err != nil {
		return false, err
	}
	pv, pok, err := pt.Get(ctx, key)
	if err != nil {
		return false, err
	}
	return ok != pok || v != pv, nil
}

// EntryTouchesKey is TouchesKey for a log entry: a commit whose first
// parent a forget cut (listed in le.Cut) is, like a root commit, one that
// has key (the history that would say more is gone).
func EntryTouchesKey(ctx context.Context, bs objects.BlockStore, le LogEntry, key string) (bool, error) {
	cm := le.Commit
	if len(cm.Parents) > 0 && slices.Contains(le.Cut, cm.Parents[0]) {
		root := *cm
		root.Parents = nil
		cm = &root
	}
	return TouchesKey(ctx, bs, cm, key)
}

// IsAncestor reports whether a is b or an ancestor of b.
func IsAncestor(ctx context.Context, bs objects.BlockStore, a, b objects.CID) (bool, error) {
	for e, err := range Log(ctx, bs, b) {
		if err != nil {
			return false, err
		}
		if e.CID == a {
			return true, nil
		}
	}
	return false, nil
}

// MergeBase returns a best common ancestor of a and b (the newest commit
// reachable from both), or the zero CID if they share no history.
func MergeBase(ctx context.Context, bs objects.BlockStore, a, b objects.CID) (objects.CID, error) {
	inA := map[objects.CID]bool{}
	for e, err := range Log(ctx, bs, a) {
		if err != nil {
			return objects.CID{}, err
		}
		inA[e.CID] = true
	}
	for e, err := range Log(ctx, bs, b) {
		if err != nil {
			return objects.CID{}, err
		}
		if inA[e.CID] {
			return e.CID, nil
		}
	}
	return objects.CID{}, nil
}

// Diff yields the changes from commit a's tree to commit b's tree.
func Diff(ctx context.Context, bs objects.BlockStore, a, b objects.CID) iter.Seq2[objects.Change, error] {
	return func(yield func(objects.Change, error) bool) {
		ca, err := ReadCommit(ctx, bs, a)
		if err != nil {
			yield(objects.Change{}, err)
			return
		}
		cb, err := ReadCommit(ctx, bs, b)
		if err != nil {
			yield(objects.Change{}, err)
			return
		}
		for ch, err := range objects.DiffTrees(ctx, bs, ca.Tree, cb.Tree) {
			if !yield(ch, err) || err != nil {
				return
			}
		}
	}
}
