package inspect

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	goruntime "runtime"
	"sync"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs/receipt"
)

// Receipt states of a Task.
const (
	ReceiptVerified  = "verified"  // signed by a trusted operator key, bundle hash as stated
	ReceiptFailed    = "failed"    // does not verify (TaskEntry.ReceiptError says why)
	ReceiptUnchecked = "unchecked" // on the tape, not verified (TaskOptions.Verify unset)
	ReceiptNone      = "none"      // found from its commits' task metadata; no receipt on the tape
)

// Task is one landing of a task, as `agentstate log --tasks` lists it:
// the commits it folds (its own, and its merge), the keys they wrote, and
// the bundle hash it moved.
type Task struct {
	ID      string `json:"id"`
	Attempt string `json:"attempt"`
	Model   string `json:"model"`
	Adapter string `json:"adapter"`
	// Commit is the commit the task landed (HEAD moved to it); TaskCommit
	// the task's own last commit (Commit unless Merge); Start the commit it
	// started from (zero: the agent had no state).
	Commit     objects.CID `json:"commit"`
	TaskCommit objects.CID `json:"taskCommit"`
	Start      objects.CID `json:"start,omitzero"`
	Merge      bool        `json:"merge"`
	// Commits counts the commits folded into this entry: the task's own
	// and, when it landed as a merge, the merge.
	Commits int `json:"commits"`
	// Keys are the keys the task's commits wrote (put or deleted), sorted.
	Keys []string `json:"keys"`
	// BundleBefore and BundleAfter are the bundle hashes HEAD moved between.
	BundleBefore string `json:"bundleBefore"`
	BundleAfter  string `json:"bundleAfter"`
	Time         int64  `json:"time"`
	// Receipt is the receipt's state (Receipt* constants); ReceiptN its
	// line on the tape (0: none); ReceiptError why it failed, ReceiptNote
	// what verification could not check.
	Receipt      string `json:"receipt"`
	ReceiptN     int    `json:"receiptN,omitempty"`
	ReceiptError string `json:"receiptError,omitempty"`
	ReceiptNote  string `json:"receiptNote,omitempty"`
}

// TaskOptions select a page of an agent's task log.
type TaskOptions struct {
	Rev    string // where the history starts; "" is HEAD; a range A..B: the tasks landed on B's history and not on A's
	Skip   int    // leave out this many tasks, newest first
	Limit  int    // at most this many; <= 0 is all
	Verify bool   // verify the receipts of the tasks returned
}

// TaskLog is a page of the task log.
type TaskLog struct {
	Head  objects.CID `json:"head"`
	Tasks []Task      `json:"tasks"`
	// More says older tasks follow the page.
	More bool `json:"more"`
}

// Tasks returns the agent's history grouped by task, newest first: one
// entry per landed task, from the receipts on the agent's tape and, for
// commits whose task has no receipt there (a fork's history, a receipt
// never kept), from the commits' task metadata. Commits no task wrote are
// left out.
func (v *View) Tasks(ctx context.Context, agent string, o TaskOptions) (TaskLog, error) {
	return v.tasks(ctx, agent, o, true)
}

// tasks is Tasks, from the store's task records when records is set and
// they give the listing (tasksFromRecords), else by walking the history.
func (v *View) tasks(ctx context.Context, agent string, o TaskOptions, records bool) (TaskLog, error) {
	if o.Skip < 0 {
		return TaskLog{}, badf("skip %d: must not be negative", o.Skip)
	}
	head, err := v.checkAgent(ctx, agent)
	if err != nil {
		return TaskLog{}, err
	}
	rev, exclude, err := v.pageRange(ctx, agent, o.Rev)
	if err != nil {
		return TaskLog{}, err
	}
	start, _, err := v.resolve(ctx, agent, rev)
	if err != nil {
		return TaskLog{}, err
	}
	lo, _, err := v.R.LogOptions(ctx, agent)
	if err != nil {
		return TaskLog{}, classify(err)
	}
	if records && !o.Verify && exclude.IsZero() && lo.Cut == nil && len(lo.Islands) == 0 {
		out := TaskLog{Head: head.Commit, Tasks: []Task{}}
		if ok, err := v.tasksFromRecords(ctx, agent, start, o, &out); err != nil || ok {
			return out, err
		}
	}
	tape, err := v.tapeIndex(ctx, agent)
	if err != nil {
		return TaskLog{}, err
	}
	// A range A..B: the tasks that landed on B's history and not on A's.
	excluded, err := v.reachable(ctx, exclude, lo)
	if err != nil {
		return TaskLog{}, err
	}
	// The walk below reads every commit of the history, one at a time, and
	// on disk each read is a block of the store to find and decompress:
	// the commits the receipts name are read ahead, in parallel, into the
	// repository's commit cache, newest first.
	pctx, stop := context.WithCancel(ctx)
	want := len(tape.receipts)
	if o.Limit > 0 {
		want = min(want, o.Skip+o.Limit+1)
	}
	wait := v.prefetch(pctx, tape.receipts[len(tape.receipts)-want:])
	// The readers end (after the read in hand) before Tasks returns: its
	// caller may close the store next.
	defer func() { stop(); wait() }()
	out := TaskLog{Head: head.Commit, Tasks: []Task{}}
	claimed := map[objects.CID]bool{}
	n := 0
	for le, err := range dag.LogWith(ctx, v.R.Blocks, start, lo) {
		if err != nil {
			return TaskLog{}, classify(err)
		}
		if claimed[le.CID] || excluded[le.CID] {
			continue
		}
		var l repo.TaskLanding
		if i, ok := tape.byCommit[le.CID]; ok {
			l = tape.landing(agent, i)
		} else if _, ok := le.Commit.Metadata["task"]; ok {
			if l, err = v.R.TaskLanding(ctx, agent, le.CID, le.Commit); err != nil {
				return TaskLog{}, classify(err)
			}
		} else {
			continue
		}
		t, own, err := v.taskOf(ctx, l)
		if err != nil {
			return TaskLog{}, err
		}
		for _, c := range own {
			claimed[c] = true
		}
		claimed[l.Commit] = true
		n++
		if n <= o.Skip {
			continue
		}
		if o.Limit > 0 && len(out.Tasks) == o.Limit {
			out.More = true
			break
		}
		out.Tasks = append(out.Tasks, t)
	}
	if o.Verify {
		keys, err := v.receiptKeys(ctx, agent)
		if err != nil {
			return TaskLog{}, err
		}
		for i := range out.Tasks {
			t := &out.Tasks[i]
			if t.ReceiptN > 0 {
				v.verifyTask(ctx, t, tape.receipts[tape.index[t.ReceiptN]], keys)
			}
		}
	}
	return out, nil
}

// tasksFromRecords lists the tasks of start's history from the agent's
// task records (repo.TaskRecords), as the walk of Tasks lists them, when
// the records show what the walk would meet: start is the commit a
// landing moved HEAD to, that landing was no merge and its own commits
// are the whole line down to the commit it started from
// (repo.TaskRecordWhole), which is again such a landing, down to the
// agent's first state. The history is then one line of first parents
// that those landings' commits make up whole, and the walk meets the
// landings in that order. ok is false (and out untouched) when the
// records do not show it: the caller walks the history.
func (v *View) tasksFromRecords(ctx context.Context, agent string, start objects.CID, o TaskOptions, out *TaskLog) (bool, error) {
	recs, ok, err := v.R.TaskRecords(ctx, agent)
	if errors.Is(err, repo.ErrBadTaskRecord) || !ok {
		return false, nil // a damaged cache: walk (verify reports it)
	}
	if err != nil {
		return false, classify(err)
	}
	byCommit := make(map[objects.CID]int, 2*len(recs))
	for i, t := range recs {
		if t.Kind != repo.TaskRecordNone {
			byCommit[t.Commit] = i // the later line wins, as on the walk
			byCommit[t.TaskCommit] = i
		}
	}
	var tasks []Task
	more := false
	n := 0
	for c := start; !c.IsZero(); {
		i, ok := byCommit[c]
		if !ok || n > len(recs) {
			return false, nil
		}
		t := &recs[i]
		if t.Kind != repo.TaskRecordLanding || t.Commit != c || t.Merged() || !t.Whole() {
			return false, nil
		}
		n++
		c = t.Start
		if n <= o.Skip {
			continue
		}
		if o.Limit > 0 && len(tasks) == o.Limit {
			more = true
			break
		}
		tasks = append(tasks, Task{ID: t.ID, Attempt: t.Attempt, Model: t.Model, Adapter: t.Adapter,
			Commit: t.Commit, TaskCommit: t.TaskCommit, Start: t.Start, Commits: t.Commits, Keys: t.Keys,
			BundleBefore: t.BundleBefore.String(), BundleAfter: t.BundleAfter.String(), Time: t.Time,
			Receipt: ReceiptUnchecked, ReceiptN: i + 1})
	}
	if tasks != nil {
		out.Tasks = tasks
	}
	out.More = more
	return true, nil
}

// TaskDetail is one task: its entry, its receipt, its commits (newest
// first: the merge, when it landed as one, then its own) and its whole
// change, from the commit it started from to its own last commit.
type TaskDetail struct {
	Task    Task     `json:"task"`
	Receipt *Receipt `json:"receipt,omitempty"`
	Commits []Commit `json:"commits"`
	Changes []Change `json:"changes"`
	// StartGone says a forget took the commit the task started from (or
	// its own last commit): its change is not known, and Changes is empty.
	StartGone bool `json:"startGone,omitempty"`
}

// Task returns the task a task revision names (task:ID or task:ID@ATTEMPT,
// with an optional AGENT@ before it; a bare ID is taken as task:ID), its
// receipt verified, its commits and its whole change (with line diffs when
// patch is set). A revision with steps (task:ID~1) names a commit, not a
// task: it is not found here.
func (v *View) Task(ctx context.Context, agent, id string, patch bool) (TaskDetail, error) {
	rev := id
	if !dag.IsTaskRev(rev) {
		rev = dag.TaskPrefix + id
	}
	readings, _, err := dag.ParseTaskRev(rev)
	if err != nil {
		return TaskDetail{}, classify(err)
	}
	var l repo.TaskLanding
	err = dag.ErrNoTask
	for _, rd := range readings {
		if len(rd.Steps) > 0 {
			continue
		}
		if rd.Agent == "" {
			rd.Agent = agent
		}
		if _, err := v.checkAgent(ctx, rd.Agent); err != nil {
			return TaskDetail{}, err
		}
		if l, err = v.R.FindTask(ctx, rd); !errors.Is(err, dag.ErrNoTask) {
			break
		}
	}
	if err != nil {
		return TaskDetail{}, classify(err)
	}
	t, own, err := v.taskOf(ctx, l)
	if err != nil {
		return TaskDetail{}, err
	}
	out := TaskDetail{Task: t, Commits: []Commit{}}
	if l.Receipt != nil {
		keys, err := v.receiptKeys(ctx, l.Agent)
		if err != nil {
			return TaskDetail{}, err
		}
		v.verifyTask(ctx, &out.Task, l.Receipt, keys)
		ok := out.Task.Receipt == ReceiptVerified
		out.Receipt = &Receipt{N: l.N, Receipt: l.Receipt, Verified: &ok, Error: out.Task.ReceiptError, Note: out.Task.ReceiptNote}
	}
	ids := own
	if t.Merge {
		ids = append([]objects.CID{l.Commit}, own...)
	}
	for _, id := range ids {
		cm, err := v.R.Commit(ctx, id)
		if errors.Is(err, dag.ErrUnknown) {
			break // a forget took it
		}
		if err != nil {
			return TaskDetail{}, classify(err)
		}
		c, err := v.commitOf(ctx, id, cm)
		if err != nil {
			return TaskDetail{}, err
		}
		out.Commits = append(out.Commits, c)
	}
	from, to, err := v.taskTrees(ctx, l)
	if errors.Is(err, ErrNotFound) {
		out.Changes, out.StartGone = []Change{}, true
		return out, nil
	}
	if err != nil {
		return TaskDetail{}, err
	}
	out.Changes, err = v.diffTrees(ctx, from, to, patch)
	return out, err
}

// taskTrees returns the trees of the commit a task started from (the
// empty tree when it started with no state) and of its own last commit;
// ErrNotFound when a forget took either.
func (v *View) taskTrees(ctx context.Context, l repo.TaskLanding) (from, to objects.CID, err error) {
	from = objects.EmptyTreeCID
	if !l.Start.IsZero() {
		sc, err := v.R.Commit(ctx, l.Start)
		if err != nil {
			return objects.CID{}, objects.CID{}, classify(err)
		}
		from = sc.Tree
	}
	tc, err := v.R.Commit(ctx, l.TaskCommit)
	if err != nil {
		return objects.CID{}, objects.CID{}, classify(err)
	}
	return from, tc.Tree, nil
}

// taskOf builds a landing's entry and returns the task's own commits,
// newest first: first parents from its last commit back to the commit it
// started from (at most its receipt's count of writes; a parent a forget
// cut ends them).
func (v *View) taskOf(ctx context.Context, l repo.TaskLanding) (Task, []objects.CID, error) {
	t := Task{ID: l.ID, Attempt: l.Attempt, Commit: l.Commit, TaskCommit: l.TaskCommit, Start: l.Start,
		Merge: l.Merged(), Keys: []string{}, Receipt: ReceiptNone}
	if rc := l.Receipt; rc != nil {
		t.Model, t.Adapter, t.Time, t.ReceiptN, t.Receipt = rc.Model, rc.Adapter, rc.Time, l.N, ReceiptUnchecked
		t.BundleBefore, t.BundleAfter = rc.BundleBefore.String(), rc.BundleAfter.String()
	}
	o, err := v.R.TaskOwnOf(ctx, l)
	if err != nil {
		return Task{}, nil, classify(err)
	}
	own := o.Commits
	if l.Receipt == nil {
		t.Model, t.Adapter = o.Model, o.Adapter
	}
	t.Keys = o.Keys
	t.Commits = len(own)
	if t.Merge {
		t.Commits++
	}
	if l.Receipt == nil {
		landed, err := v.R.Commit(ctx, l.Commit)
		if err != nil {
			return Task{}, nil, classify(err)
		}
		// As a receipt's: from the HEAD the landing moved from (a merge's
		// first parent), to the commit it landed.
		t.Time = landed.Time
		from := l.Start
		if t.Merge && len(landed.Parents) > 0 {
			from = landed.Parents[0]
		}
		before, err := v.bundleOf(ctx, from)
		if errors.Is(err, ErrNotFound) {
			before = "" // a forget took the commit it moved from: not known
		} else if err != nil {
			return Task{}, nil, err
		}
		after, err := v.R.BundleHash(ctx, landed.Tree)
		if err != nil {
			return Task{}, nil, classify(err)
		}
		t.BundleBefore, t.BundleAfter = before, after.String()
	}
	return t, own, nil
}

// bundleOf is a commit's bundle hash, the empty brain's for zero.
func (v *View) bundleOf(ctx context.Context, c objects.CID) (string, error) {
	if c.IsZero() {
		h, _ := objects.NewBundleHasher().Sum()
		return h.String(), nil
	}
	h, err := v.R.CommitBundleHash(ctx, c)
	if err != nil {
		return "", classify(err)
	}
	return h.String(), nil
}

func (v *View) receiptKeys(ctx context.Context, agent string) ([]ed25519.PublicKey, error) {
	keys, err := v.R.TrustedKeys(ctx, agent, repo.KeyVerifiesReceipts)
	return keys, classify(err)
}

// verifyTask sets t's receipt state from verifying rc.
func (v *View) verifyTask(ctx context.Context, t *Task, rc *receipt.Receipt, keys []ed25519.PublicKey) {
	note, err := v.checkReceipt(ctx, rc, keys)
	t.Receipt, t.ReceiptNote = ReceiptVerified, note
	if err != nil {
		t.Receipt, t.ReceiptError = ReceiptFailed, err.Error()
	}
}

// tapeIndex is an agent's receipt tape read once: each parsed receipt, by
// the commits it names (the later receipt wins for a commit named twice).
type tapeIndex struct {
	receipts []*receipt.Receipt
	lines    []int               // receipts[i] is line lines[i] (1-based)
	index    map[int]int         // line → index into receipts
	byCommit map[objects.CID]int // Commit and TaskCommit → index
}

func (v *View) tapeIndex(ctx context.Context, agent string) (*tapeIndex, error) {
	var lines [][]byte
	for line, err := range v.R.Tape.Lines(ctx, agent) {
		if err != nil {
			return nil, err
		}
		lines = append(lines, bytes.Clone(line))
	}
	// Parsing a receipt checks its canonical form (decoded, re-encoded,
	// compared): the lines are parsed in parallel.
	parsed := make([]*receipt.Receipt, len(lines))
	var wg sync.WaitGroup
	workers := max(1, min(goruntime.GOMAXPROCS(0), len(lines)/256))
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(lines); i += workers {
				if rc, err := receipt.Parse(lines[i]); err == nil {
					parsed[i] = rc
				} // else: listed by 'receipts' as unreadable; names no task here
			}
		}()
	}
	wg.Wait()
	ti := &tapeIndex{index: map[int]int{}, byCommit: map[objects.CID]int{}}
	for k, rc := range parsed {
		if rc == nil {
			continue
		}
		n, i := k+1, len(ti.receipts)
		ti.receipts, ti.lines = append(ti.receipts, rc), append(ti.lines, n)
		ti.index[n] = i
		ti.byCommit[rc.Commit] = i
		ti.byCommit[rc.TaskCommit] = i
	}
	return ti, nil
}

// prefetch reads, in the background and in parallel, the commits of the
// landings rcs name (the newest first) into the repository's commit cache,
// until ctx is done; wait returns when the readers have ended. Errors are
// left to the reads that need the commits.
func (v *View) prefetch(ctx context.Context, rcs []*receipt.Receipt) (wait func()) {
	var wg sync.WaitGroup
	// A store with a commit graph gives the walk its commits in order,
	// each block of them read once: reading ahead by CID would only add
	// scattered reads.
	if cc, ok := v.R.Blocks.(*dag.CommitCache); !ok || cc.HasGraph() || len(rcs) < 64 {
		return wg.Wait
	}
	workers := max(1, goruntime.GOMAXPROCS(0))
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := len(rcs) - 1 - w; i >= 0 && ctx.Err() == nil; i -= workers {
				rc := rcs[i]
				if rc.Merged() {
					v.R.Commit(ctx, rc.Commit)
				}
				c := rc.TaskCommit
				for range rc.Writes {
					cm, err := v.R.Commit(ctx, c)
					if err != nil || len(cm.Parents) == 0 || ctx.Err() != nil {
						break
					}
					c = cm.Parents[0]
				}
			}
		}()
	}
	return wg.Wait
}

func (ti *tapeIndex) landing(agent string, i int) repo.TaskLanding {
	rc := ti.receipts[i]
	return repo.TaskLanding{Agent: agent, ID: rc.Task, Attempt: rc.Attempt, Receipt: rc, N: ti.lines[i],
		Start: rc.Parent, Commit: rc.Commit, TaskCommit: rc.TaskCommit}
}
