package inspect

import (
	"container/heap"
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/internal/textdiff"
	"github.com/agentstate/agentstate/objects"
)

// Origin is the commit that last changed one unit of a value (a line of a
// text value), with its task and time.
type Origin struct {
	Commit objects.CID `json:"commit"`
	// Task is the commit's task (its "task" metadata), "" for a commit no
	// task made.
	Task string `json:"task"`
	Time int64  `json:"time"`
	// Boundary says a forget cut the history at Commit: the unit is at
	// least as old as Commit, and may be older (what was past the cut is
	// not read).
	Boundary bool `json:"boundary,omitempty"`
}

// BlameLine is one line of a text value and where it comes from.
type BlameLine struct {
	Line int `json:"line"` // from 1
	Origin
	Text string `json:"text"` // without its "\n"
}

// Blame is a text value at a commit, line by line, each with the commit
// that last changed it.
type Blame struct {
	Key    string      `json:"key"`
	Commit objects.CID `json:"commit"` // the commit blamed
	CID    objects.CID `json:"cid"`    // the value
	Lines  []BlameLine `json:"lines"`
}

// Blame attributes each line of key's text value at rev to the commit that
// last changed it, as git blame does: from rev back through the key's
// history, a commit whose value equals a parent's hands every line to that
// parent; otherwise each line a parent's version keeps (by a line diff,
// parents in order, so a line from a merged branch goes to the branch's
// commit) passes to that parent, and the lines left are the commit's own.
// Only commits where the key's value CID changed are diffed; the walk
// compares tree entries, not contents. A parent a forget cut is not
// followed: the lines that could be older stay with the commit below the
// cut, marked Boundary. A value over MaxPatchValue or not text is refused
// (ErrBadRequest); an older version that is not text keeps nothing.
func (v *View) Blame(ctx context.Context, agent, rev, key string) (Blame, error) {
	if err := objects.ValidateKey(key); err != nil {
		return Blame{}, classify(err)
	}
	for attempt := 1; ; attempt++ {
		b, err := v.blameOnce(ctx, agent, rev, key)
		if err == nil || attempt == 4 || !errors.Is(err, ErrNotFound) || ctx.Err() != nil {
			return b, err
		}
	}
}

func (v *View) blameOnce(ctx context.Context, agent, rev, key string) (Blame, error) {
	id, cm, err := v.resolve(ctx, agent, rev)
	if err != nil {
		return Blame{}, err
	}
	w := v.newBlameWalk(key)
	val, err := w.valueAt(ctx, cm.Tree)
	if err != nil {
		return Blame{}, err
	}
	if val.IsZero() {
		return Blame{}, &KeyNotFoundError{Key: key, At: id}
	}
	lines, ok, err := w.lines(ctx, val)
	if err != nil {
		return Blame{}, err
	}
	if !ok {
		size, err := v.size(ctx, val)
		if err != nil {
			return Blame{}, classify(err)
		}
		if size > MaxPatchValue {
			return Blame{}, badf("blame: key %q at %s is %d bytes, over the %d bytes blame reads", key, id.Short(), size, MaxPatchValue)
		}
		return Blame{}, badf("blame: key %q at %s is not text", key, id.Short())
	}
	origins, err := v.blameWalk(ctx, agent, w, id, cm, val, len(lines))
	if err != nil {
		return Blame{}, err
	}
	out := Blame{Key: key, Commit: id, CID: val, Lines: make([]BlameLine, len(lines))}
	for i, l := range lines {
		out.Lines[i] = BlameLine{Line: i + 1, Origin: origins[i], Text: strings.TrimSuffix(l, "\n")}
	}
	return out, nil
}

// blameWalker holds what a blame walk reads of one key: the key's value
// in each tree, and the units of each version and how they match. The
// walk (blameWalk) knows units only by index, so a value whose units are
// not lines only brings its own matcher.
type blameWalker struct {
	v       *View
	key     string
	vals    map[objects.CID]objects.CID // tree → the key's value (zero: absent)
	text    map[objects.CID][]string    // value → its lines (nil: not text)
	match   map[[2]objects.CID][]int
	matcher func(ctx context.Context, child, parent objects.CID) ([]int, error)
}

func (v *View) newBlameWalk(key string) *blameWalker {
	w := &blameWalker{v: v, key: key, vals: map[objects.CID]objects.CID{}, text: map[objects.CID][]string{},
		match: map[[2]objects.CID][]int{}}
	w.matcher = w.matchLines
	return w
}

// valueAt is the key's value CID in a tree (zero when absent): one path
// of the tree, no content.
func (w *blameWalker) valueAt(ctx context.Context, tree objects.CID) (objects.CID, error) {
	if val, ok := w.vals[tree]; ok {
		return val, nil
	}
	t, err := objects.LoadTree(ctx, w.v.R.Blocks, tree)
	if err != nil {
		return objects.CID{}, classify(err)
	}
	val, _, err := t.Get(ctx, w.key)
	if err != nil {
		return objects.CID{}, classify(err)
	}
	w.vals[tree] = val
	return val, nil
}

// lines returns a text value's lines; ok is false for a value over
// MaxPatchValue or not text (read no further than its size).
func (w *blameWalker) lines(ctx context.Context, val objects.CID) ([]string, bool, error) {
	if l, ok := w.text[val]; ok {
		return l, l != nil, nil
	}
	size, err := w.v.size(ctx, val)
	if err != nil {
		return nil, false, classify(err)
	}
	var l []string
	if size <= MaxPatchValue {
		data, err := objects.ReadValue(ctx, w.v.R.Blocks, val)
		if err != nil {
			return nil, false, classify(err)
		}
		if textdiff.IsText(data) {
			l = textdiff.Lines(string(data))
			if l == nil {
				l = []string{}
			}
		}
	}
	w.text[val] = l
	return l, l != nil, nil
}

// matchLines maps each line of child to the line of parent it is kept
// from (-1: none); nil when parent is not text.
func (w *blameWalker) matchLines(ctx context.Context, child, parent objects.CID) ([]int, error) {
	k := [2]objects.CID{child, parent}
	if m, ok := w.match[k]; ok {
		return m, nil
	}
	a, ok, err := w.lines(ctx, parent)
	if err != nil || !ok {
		return nil, err
	}
	b, _, err := w.lines(ctx, child)
	if err != nil {
		return nil, err
	}
	m := textdiff.Matches(a, b)
	w.match[k] = m
	return m, nil
}

// suspect is a commit some units are still attributed to: each pending
// unit's index in the commit's version and in the version blamed.
type suspect struct {
	id      objects.CID
	cm      *objects.Commit
	val     objects.CID
	pending [][2]int
	queued  bool
}

// suspects is a max-heap of commits, newest first (then highest CID), the
// order git blame takes them in. A commit given units after it was taken
// (a parent as new as its child) is queued again with those units alone:
// units are attributed independently, so the answer is the same.
type suspects []*suspect

func (q suspects) Len() int { return len(q) }
func (q suspects) Less(i, j int) bool {
	if q[i].cm.Time != q[j].cm.Time {
		return q[i].cm.Time > q[j].cm.Time
	}
	return q[i].id.String() > q[j].id.String()
}
func (q suspects) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *suspects) Push(x any)   { *q = append(*q, x.(*suspect)) }
func (q *suspects) Pop() any {
	old := *q
	s := old[len(old)-1]
	*q = old[:len(old)-1]
	return s
}

// blameWalk attributes the n units of val (the key's value at start) to
// the commits that last changed them.
func (v *View) blameWalk(ctx context.Context, agent string, w *blameWalker, start objects.CID, cm *objects.Commit, val objects.CID, n int) ([]Origin, error) {
	lo, _, err := v.R.LogOptions(ctx, agent)
	if err != nil {
		return nil, classify(err)
	}
	out := make([]Origin, n)
	all := map[objects.CID]*suspect{}
	var q suspects
	// give hands units to s; a suspect with none pending takes the slice
	// itself (units pass whole from commit to parent along a history
	// where the key did not change).
	give := func(s *suspect, units [][2]int) {
		if len(units) == 0 {
			return
		}
		if len(s.pending) == 0 {
			s.pending = units
		} else {
			s.pending = append(s.pending, units...)
		}
		if !s.queued {
			s.queued = true
			heap.Push(&q, s)
		}
	}
	first := &suspect{id: start, cm: cm, val: val}
	all[start] = first
	units := make([][2]int, n)
	for i := range n {
		units[i] = [2]int{i, i}
	}
	give(first, units)
	type parent struct {
		s   *suspect
		cut bool
	}
	for q.Len() > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s := heap.Pop(&q).(*suspect)
		s.queued = false
		units := s.pending
		s.pending = nil
		var ps []parent
		for i, p := range s.cm.Parents {
			if slices.Contains(s.cm.Parents[:i], p) {
				continue
			}
			if lo.Cut != nil && lo.Cut(s.id, p) {
				ps = append(ps, parent{cut: true})
				continue
			}
			ps0, ok := all[p]
			if !ok {
				pc, err := v.R.Commit(ctx, p)
				if err != nil {
					if isMissing(err) && lo.Gone != nil && lo.Gone(s.id, p) {
						ps = append(ps, parent{cut: true})
						continue
					}
					return nil, classify(err)
				}
				pv, err := w.valueAt(ctx, pc.Tree)
				if err != nil {
					return nil, err
				}
				ps0 = &suspect{id: p, cm: pc, val: pv}
				all[p] = ps0
			}
			ps = append(ps, parent{s: ps0})
		}
		// The same value in a parent: all of it is that parent's.
		same := false
		for _, p := range ps {
			if p.s != nil && p.s.val == s.val {
				give(p.s, units)
				same = true
				break
			}
		}
		if same {
			continue
		}
		cut := false
		for _, p := range ps {
			if p.s == nil {
				cut = true
				continue
			}
			if p.s.val.IsZero() || len(units) == 0 {
				continue
			}
			m, err := w.matcher(ctx, s.val, p.s.val)
			if err != nil {
				return nil, err
			}
			if m == nil {
				continue
			}
			var kept, left [][2]int
			for _, u := range units {
				if at := m[u[0]]; at >= 0 {
					kept = append(kept, [2]int{at, u[1]})
				} else {
					left = append(left, u)
				}
			}
			give(p.s, kept)
			units = left
		}
		o := Origin{Commit: s.id, Task: s.cm.Metadata["task"], Time: s.cm.Time, Boundary: cut}
		for _, u := range units {
			out[u[1]] = o
		}
	}
	return out, nil
}

func isMissing(err error) bool {
	return errors.Is(err, dag.ErrUnknown) || errors.Is(err, objects.ErrNotFound)
}
