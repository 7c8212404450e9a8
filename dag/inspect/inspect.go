// Package inspect is the read model of a repository: the one place a read
// question is answered, as values whose JSON is the documented shape, that
// the store's windows (the CLI, the MCP tools, the web page) render. It
// answers what the CLI's log, show, diff, get, ls, oplog, receipts and
// snapshots print, as values instead of text, and makes the few edits an
// MCP client may ask for, each one commit through the repository's owner.
//
// Errors for things that do not exist (an agent, a revision, a key, a
// commit or block not in the store: one a forget cut, or one a collection
// running beside the read removed) are ErrNotFound to errors.Is; errors for
// malformed input (an invalid key, agent name or revision) are ErrBadRequest.
// Their message is the error's own, with no prefix for the kind, so every
// window says the same words. Everything else is the store's own failure.
//
// A history cut by forget reads as the CLI's log prints it: the walks do
// not follow the agent's cuts (nor, where the parent is gone, any other
// agent's), and the commit a cut ends a line at lists the parents cut.
package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/internal/textdiff"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/receipt"
)

var (
	// ErrNotFound: an agent, revision or key that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrBadRequest: an invalid key, agent name, revision or argument.
	ErrBadRequest = errors.New("bad request")
)

// MaxPatchValue bounds the values whose line diff is computed.
const MaxPatchValue = 1 << 20

// View reads (and edits) one repository.
type View struct {
	R *repo.Repo
}

// New returns a view of r.
func New(r *repo.Repo) *View { return &View{R: r} }

// kindError is an error of a kind (ErrNotFound, ErrBadRequest) that reads
// as the error itself: every window prints the same words for it, and the
// kind is for errors.Is.
type kindError struct {
	kind, err error
}

func (e *kindError) Error() string        { return e.err.Error() }
func (e *kindError) Unwrap() error        { return e.err }
func (e *kindError) Is(target error) bool { return target == e.kind }

// classify makes err an ErrNotFound or ErrBadRequest when it is one.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrBadRequest):
		return err
	case errors.Is(err, refs.ErrNoAgent), errors.Is(err, dag.ErrUnknown), errors.Is(err, objects.ErrNotFound):
		return &kindError{ErrNotFound, err}
	case errors.Is(err, refs.ErrBadAgent), errors.Is(err, dag.ErrBadRev), errors.Is(err, dag.ErrAmbiguous),
		errors.Is(err, dag.ErrNotCommit), errors.Is(err, objects.ErrBadKey), errors.Is(err, objects.ErrBadCID),
		errors.Is(err, refs.ErrAgentExists), errors.Is(err, refs.ErrNothingUndo):
		return &kindError{ErrBadRequest, err}
	}
	return err
}

func badf(format string, a ...any) error {
	return &kindError{ErrBadRequest, fmt.Errorf(format, a...)}
}

func notFoundf(format string, a ...any) error {
	return &kindError{ErrNotFound, fmt.Errorf(format, a...)}
}

// checkAgent refuses an invalid name and one with no HEAD.
func (v *View) checkAgent(ctx context.Context, agent string) (refs.Head, error) {
	if err := refs.ValidateAgent(agent); err != nil {
		return refs.Head{}, classify(err)
	}
	h, err := v.R.Refs.Head(ctx, agent)
	return h, classify(err)
}

// Head returns agent's HEAD commit.
func (v *View) Head(ctx context.Context, agent string) (objects.CID, error) {
	h, err := v.checkAgent(ctx, agent)
	return h.Commit, err
}

// Agent is one agent and its HEAD.
type Agent struct {
	Name       string      `json:"name"`
	Head       objects.CID `json:"head"`
	Seq        uint64      `json:"seq"` // the operation that moved HEAD last
	Time       int64       `json:"time"`
	Message    string      `json:"message"`
	BundleHash string      `json:"bundleHash"`
}

// Agents lists every agent, by name.
func (v *View) Agents(ctx context.Context) ([]Agent, error) {
	heads, err := v.R.Refs.Agents(ctx)
	if err != nil {
		return nil, classify(err)
	}
	out := make([]Agent, 0, len(heads))
	for _, h := range heads {
		cm, err := v.R.Commit(ctx, h.Commit)
		if err != nil {
			return nil, classify(err)
		}
		bh, err := v.R.BundleHash(ctx, cm.Tree)
		if err != nil {
			return nil, classify(err)
		}
		out = append(out, Agent{Name: h.Agent, Head: h.Commit, Seq: h.Seq, Time: cm.Time, Message: cm.Message, BundleHash: bh.String()})
	}
	slices.SortFunc(out, func(a, b Agent) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Commit is a commit as `agentstate log --json` shows it.
type Commit struct {
	CID        objects.CID       `json:"cid"`
	Parents    []objects.CID     `json:"parents"`
	Tree       objects.CID       `json:"tree"`
	Time       int64             `json:"time"`
	Message    string            `json:"message"`
	Metadata   map[string]string `json:"metadata"`
	BundleHash string            `json:"bundleHash"`
	// Cut lists the parents a forget cut (as 'agentstate log --json' does):
	// the history below them is gone, or not this agent's any more.
	Cut []objects.CID `json:"cut,omitempty"`
}

func (v *View) commitOf(ctx context.Context, id objects.CID, cm *objects.Commit) (Commit, error) {
	c := v.commitNoHash(id, cm)
	h, err := v.R.BundleHash(ctx, cm.Tree)
	if err != nil {
		return Commit{}, classify(err)
	}
	c.BundleHash = h.String()
	return c, nil
}

// commitNoHash is commitOf without the bundle hash.
func (v *View) commitNoHash(id objects.CID, cm *objects.Commit) Commit {
	parents := cm.Parents
	if parents == nil {
		parents = []objects.CID{}
	}
	meta := cm.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	return Commit{CID: id, Parents: parents, Tree: cm.Tree, Time: cm.Time, Message: cm.Message, Metadata: meta}
}

// LogOptions select a history.
type LogOptions struct {
	Rev   string // where to start; "" is HEAD
	Path  string // only commits that changed this key
	Limit int    // at most this many commits; <= 0 is all
	// NoBundleHash leaves each Commit's BundleHash empty: a window that
	// does not show it (the CLI's text log) skips its cost, a lookup per
	// commit, or hashing the commit's whole tree where none is recorded.
	NoBundleHash bool
	// Filters (logfilter.go); a commit is kept when it matches them all.
	// Rev may be a range A..B (SplitRange): then Exclude is A.
	Grep    string    // message or task, model, op, source metadata holds it (any case)
	Since   time.Time // committed at or after (zero: no bound)
	Until   time.Time // committed at or before (zero: no bound)
	Task    string    // only commits of this task (metadata "task")
	Paths   []string  // only commits that changed one of these keys (with Path)
	Exclude string    // leave out commits reachable from this revision
}

// resolve resolves rev ("" is HEAD) for agent to a commit.
func (v *View) resolve(ctx context.Context, agent, rev string) (objects.CID, *objects.Commit, error) {
	if _, err := v.checkAgent(ctx, agent); err != nil {
		return objects.CID{}, nil, err
	}
	if rev == "" {
		rev = "HEAD"
	}
	id, err := v.R.Resolve(ctx, agent, rev)
	if err != nil {
		return id, nil, classify(v.pastCut(ctx, agent, rev, err))
	}
	cm, err := v.R.Commit(ctx, id)
	if err != nil {
		return id, nil, classify(v.pastCut(ctx, agent, rev, err))
	}
	return id, cm, nil
}

// pastCut adds to a revision that names nothing in the store that a
// forget cut agent's history (when one did): what was past the cut is gone.
func (v *View) pastCut(ctx context.Context, agent, rev string, err error) error {
	if !errors.Is(err, dag.ErrUnknown) && !errors.Is(err, objects.ErrNotFound) {
		return err
	}
	cp, ok, _ := v.R.CheckpointOf(ctx, agent)
	if !ok {
		return err
	}
	return notFoundf("%s: %w (forget cut %s's history at %s, %s: what is past the cut is gone)",
		rev, err, agent, time.Unix(cp.Time, 0).UTC().Format(time.RFC3339), cp.Policy)
}

// Forgotten is what an agent's forgets cut, as 'agentstate log' says it
// where the history was cut.
type Forgotten struct {
	Time    int64  `json:"time"`   // the last forget
	Policy  string `json:"policy"` // its policy, as forget's flags
	Ops     uint64 `json:"forgottenOps"`
	Commits uint64 `json:"forgottenCommits"`
}

// CutLine is what a log says below a commit whose parents a forget cut:
// with f (the agent's own forget), when and by which policy, and how much
// the agent's forgets took in all; with f nil (the cut is another agent's,
// whose history this one shares: a fork or reset made on a cut history),
// only that it was cut. The policy is as recorded: a window escapes it as
// it escapes any text from the store.
func (f *Forgotten) CutLine() string {
	if f == nil {
		return "history cut here by forget"
	}
	return fmt.Sprintf("history cut here by forget at %s (%s); %d older operations and %d commits forgotten in all",
		time.Unix(f.Time, 0).UTC().Format(TimeLayout), f.Policy, f.Ops, f.Commits)
}

// TimeLayout is how the windows write a commit's or an operation's time.
const TimeLayout = "2006-01-02 15:04:05 +0000"

// History is a log: the agent's HEAD, the commits, newest first, and what
// forget cut.
type History struct {
	// Head is the agent's HEAD as the log was read (the log may start
	// elsewhere: LogOptions.Rev).
	Head    objects.CID `json:"head"`
	Commits []Commit    `json:"commits"`
	// Forgotten is set when a forget cut the agent's history: the commits
	// whose Cut is set are where.
	Forgotten *Forgotten `json:"forgotten,omitempty"`
}

// Log returns history from o.Rev, newest first, including commits reached
// through merges' other parents (the order of dag.Log), walked as
// 'agentstate log' walks it: around the agent's cuts, with the older
// states a forget kept (islands), each commit where a cut ends a line
// listing the parents cut.
//
// A forget running beside the walk deletes what its new cut leaves behind
// while the walk may still follow the old cut: a block found missing makes
// the walk start again (a few times) from the revision and the cuts as
// they are then.
func (v *View) Log(ctx context.Context, agent string, o LogOptions) (History, error) {
	if err := v.checkLog(&o); err != nil {
		return History{}, err
	}
	for attempt := 1; ; attempt++ {
		h, err := v.logOnce(ctx, agent, o)
		if err == nil || attempt == 4 || !errors.Is(err, ErrNotFound) || ctx.Err() != nil {
			return h, err
		}
	}
}

func (v *View) logOnce(ctx context.Context, agent string, o LogOptions) (History, error) {
	var commits []Commit
	h, err := v.logWalk(ctx, agent, o, func(c Commit, _ *History) error {
		commits = append(commits, c)
		return nil
	})
	if err != nil {
		return History{}, err
	}
	h.Commits = commits
	if h.Commits == nil {
		h.Commits = []Commit{}
	}
	return h, nil
}

// Change is one key that differs between two commits.
type Change struct {
	Path    string             `json:"path"`
	Change  objects.ChangeKind `json:"change"`
	Old     objects.CID        `json:"old,omitzero"`
	New     objects.CID        `json:"new,omitzero"`
	OldSize uint64             `json:"oldSize"`
	NewSize uint64             `json:"newSize"`
	// With patch asked for: Binary says a side is not text; Large that a
	// side exceeds MaxPatchValue; otherwise Patch is the unified line diff
	// (three lines of context, "a/KEY" and "b/KEY" names).
	Binary bool   `json:"binary,omitempty"`
	Large  bool   `json:"large,omitempty"`
	Patch  string `json:"patch,omitempty"`
	// Rows is a SQLite value's change by table (DiffRows); RowsError says
	// why it could not be computed.
	Rows      *RowDiff `json:"rows,omitempty"`
	RowsError string   `json:"rowsError,omitempty"`
	// OldRedacted and NewRedacted: that side's content was redacted (no
	// patch, no rows; a raw value's size is then 0).
	OldRedacted *Redacted `json:"oldRedacted,omitempty"`
	NewRedacted *Redacted `json:"newRedacted,omitempty"`
}

// Shown is a commit and what it changed against its first parent.
type Shown struct {
	Commit  Commit   `json:"commit"`
	Changes []Change `json:"changes"`
	// ParentGone says the first parent is not in the store (a forget cut
	// it): what the commit changed is not known, and Changes is empty.
	ParentGone bool `json:"parentGone,omitempty"`
}

// Show returns a commit and what it changed against its first parent.
// Its Cut lists the parents a forget cut, as Log's does.
func (v *View) Show(ctx context.Context, agent, rev string, patch bool) (Shown, error) {
	id, cm, err := v.resolve(ctx, agent, rev)
	if err != nil {
		return Shown{}, err
	}
	c, err := v.commitOf(ctx, id, cm)
	if err != nil {
		return Shown{}, err
	}
	lo, _, err := v.R.LogOptions(ctx, agent)
	if err != nil {
		return Shown{}, classify(err)
	}
	out := Shown{Commit: c, Changes: []Change{}}
	var first *objects.Commit
	for i, p := range cm.Parents {
		pc, err := v.R.Commit(ctx, p)
		missing := errors.Is(err, dag.ErrUnknown)
		if err != nil && !missing {
			return Shown{}, classify(err)
		}
		if (lo.Cut != nil && lo.Cut(id, p)) || (missing && lo.Gone != nil && lo.Gone(id, p)) {
			out.Commit.Cut = append(out.Commit.Cut, p)
		}
		if i == 0 {
			first = pc
			out.ParentGone = missing
		}
	}
	if out.ParentGone {
		return out, nil
	}
	from := objects.EmptyTreeCID
	if first != nil {
		from = first.Tree
	}
	out.Changes, err = v.diffTrees(ctx, from, cm.Tree, patch)
	return out, err
}

// Diff returns what changed from one revision to another.
func (v *View) Diff(ctx context.Context, agent, from, to string, patch bool) ([]Change, error) {
	_, a, err := v.resolve(ctx, agent, from)
	if err != nil {
		return nil, err
	}
	_, b, err := v.resolve(ctx, agent, to)
	if err != nil {
		return nil, err
	}
	return v.diffTrees(ctx, a.Tree, b.Tree, patch)
}

func (v *View) diffTrees(ctx context.Context, a, b objects.CID, patch bool) ([]Change, error) {
	out := []Change{}
	for ch, err := range objects.DiffTrees(ctx, v.R.Blocks, a, b) {
		if err != nil {
			return nil, classify(err)
		}
		c := Change{Path: ch.Path, Change: ch.Change, Old: ch.Old, New: ch.New}
		if c.OldSize, c.OldRedacted, err = v.sizeOf(ctx, ch.Old); err != nil {
			return nil, classify(err)
		}
		if c.NewSize, c.NewRedacted, err = v.sizeOf(ctx, ch.New); err != nil {
			return nil, classify(err)
		}
		if patch && c.OldRedacted == nil && c.NewRedacted == nil {
			if err := v.patch(ctx, &c); err != nil {
				return nil, classify(err)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

func (v *View) size(ctx context.Context, c objects.CID) (uint64, error) {
	if c.IsZero() {
		return 0, nil
	}
	return objects.ContentSize(ctx, v.R.Blocks, c)
}

func (v *View) patch(ctx context.Context, c *Change) error {
	if c.OldSize > MaxPatchValue || c.NewSize > MaxPatchValue {
		c.Large = true
		return nil
	}
	read := func(id objects.CID) ([]byte, error) {
		if id.IsZero() {
			return nil, nil
		}
		return objects.ReadValue(ctx, v.R.Blocks, id)
	}
	a, err := read(c.Old)
	if err != nil {
		return err
	}
	b, err := read(c.New)
	if err != nil {
		return err
	}
	if !textdiff.IsText(a) || !textdiff.IsText(b) {
		c.Binary = true
		return nil
	}
	oldName, newName := "a/"+c.Path, "b/"+c.Path
	switch c.Change {
	case objects.Added:
		oldName = "/dev/null"
	case objects.Removed:
		newName = "/dev/null"
	}
	c.Patch = textdiff.Unified(oldName, newName, string(a), string(b), 3)
	return nil
}

// Value is a key's value at a commit.
type Value struct {
	Key    string      `json:"key"`
	Commit objects.CID `json:"commit"`
	CID    objects.CID `json:"cid"`
	Size   uint64      `json:"size"`
	// Data is the content when Size is within the asked maximum; otherwise
	// it is nil and Truncated is set. Text says the content read is text.
	// In JSON it is "content", base64 ('agentstate get --json'; MCP and
	// the page say it their own way: text, base64 or omitted).
	Data      []byte `json:"content,omitempty"`
	Text      bool   `json:"text"`
	Truncated bool   `json:"truncated,omitempty"`
	// Redacted: the content was removed by a redaction (Data nil).
	Redacted *Redacted `json:"redacted,omitempty"`
}

// Get returns key's value at rev, its content only if it is at most max
// bytes (max < 0: any size). The size is taken from the value's file node
// before any chunk is read: a larger value reads nothing more.
func (v *View) Get(ctx context.Context, agent, rev, key string, max int) (Value, error) {
	out, rd, err := v.Open(ctx, agent, rev, key)
	if red := (*RedactedError)(nil); errors.As(err, &red) {
		return out, nil // shown as redacted, not as an error
	}
	if err != nil {
		return Value{}, err
	}
	if max >= 0 && out.Size > uint64(max) {
		out.Truncated = true
		return out, nil
	}
	if out.Data, err = objects.ReadContent(rd, out.Size); err != nil {
		return Value{}, classify(err)
	}
	out.Text = textdiff.IsText(out.Data)
	return out, nil
}

// Open returns key's value at rev (Data nil) and a reader of its content,
// which reads one chunk at a time and ends with an error, not io.EOF, when
// a chunked value's content does not match its file node.
func (v *View) Open(ctx context.Context, agent, rev, key string) (Value, io.Reader, error) {
	if err := objects.ValidateKey(key); err != nil {
		return Value{}, nil, classify(err)
	}
	id, cm, err := v.resolve(ctx, agent, rev)
	if err != nil {
		return Value{}, nil, err
	}
	t, err := objects.LoadTree(ctx, v.R.Blocks, cm.Tree)
	if err != nil {
		return Value{}, nil, classify(err)
	}
	val, ok, err := t.Get(ctx, key)
	if err != nil {
		return Value{}, nil, classify(err)
	}
	if !ok {
		return Value{}, nil, &KeyNotFoundError{Key: key, At: id}
	}
	if size, red, err := v.sizeOf(ctx, val); err != nil {
		return Value{}, nil, classify(err)
	} else if red != nil {
		return Value{Key: key, Commit: id, CID: val, Size: size, Redacted: red}, nil, &RedactedError{Key: key, Commit: id, Value: val, Redacted: red}
	}
	rd, size, err := objects.OpenValue(ctx, v.R.Blocks, val)
	if err != nil {
		return Value{}, nil, classify(err)
	}
	return Value{Key: key, Commit: id, CID: val, Size: size}, rd, nil
}

// Entry is one key of a tree.
type Entry struct {
	Key  string      `json:"key"`
	CID  objects.CID `json:"cid"`
	Size uint64      `json:"size"`
	// Redacted: the value's content was removed by a redaction.
	Redacted *Redacted `json:"redacted,omitempty"`
}

// List returns the keys under prefix at rev, in key order, at most limit
// (<= 0: all); more says there were more.
func (v *View) List(ctx context.Context, agent, rev, prefix string, limit int) ([]Entry, bool, error) {
	return v.ListWith(ctx, agent, ListOptions{Rev: rev, Prefix: prefix, Limit: limit})
}

func (v *View) list(ctx context.Context, agent string, o ListOptions) ([]Entry, bool, error) {
	rev, prefix, limit := o.Rev, o.Prefix, o.Limit
	_, cm, err := v.resolve(ctx, agent, rev)
	if err != nil {
		return nil, false, err
	}
	t, err := objects.LoadTree(ctx, v.R.Blocks, cm.Tree)
	if err != nil {
		return nil, false, classify(err)
	}
	out := []Entry{}
	for en, err := range t.Entries(ctx, prefix) {
		if err != nil {
			return nil, false, classify(err)
		}
		if !strings.HasPrefix(en.Key, prefix) {
			break
		}
		if limit > 0 && len(out) >= limit {
			return out, true, nil
		}
		var size uint64
		var red *Redacted
		if !o.NoSizes {
			if size, red, err = v.sizeOf(ctx, en.Value); err != nil {
				return nil, false, classify(err)
			}
		}
		out = append(out, Entry{Key: en.Key, CID: en.Value, Size: size, Redacted: red})
	}
	return out, false, nil
}

// Op is one operation-log entry; Undone says an undo has reverted it and
// no redo has re-applied it.
type Op struct {
	Seq    uint64      `json:"seq"`
	Op     string      `json:"op"`
	Old    objects.CID `json:"old"`
	New    objects.CID `json:"new"`
	Time   int64       `json:"time"`
	Task   string      `json:"task"`
	Target uint64      `json:"target,omitempty"`
	Note   string      `json:"note,omitempty"`
	Prev   string      `json:"prev"`
	Undone bool        `json:"undone"`
}

// Oplog returns an agent's operation log, newest first, at most limit
// entries (<= 0: all).
func (v *View) Oplog(ctx context.Context, agent string, limit int) ([]Op, error) {
	if _, err := v.checkAgent(ctx, agent); err != nil {
		return nil, err
	}
	entries, err := v.R.Refs.Entries(ctx, agent)
	if err != nil {
		return nil, classify(err)
	}
	undone := undoneSeqs(entries)
	out := []Op{}
	for i := len(entries) - 1; i >= 0; i-- {
		if limit > 0 && len(out) >= limit {
			break
		}
		en := entries[i]
		out = append(out, Op{Seq: en.Seq, Op: string(en.Op), Old: en.Old, New: en.New, Time: en.Time, Task: en.Task,
			Target: en.Target, Note: en.Note, Prev: en.Prev, Undone: undone[en.Seq]})
	}
	return out, nil
}

// undoneSeqs replays the log as refs.UndoTarget does and returns the
// operations left undone.
func undoneSeqs(entries []refs.Entry) map[uint64]bool {
	var done, stack []refs.Entry
	undone := map[uint64]bool{}
	for _, e := range entries {
		switch e.Op {
		case refs.OpUndo:
			if n := len(done); n > 0 && done[n-1].Seq == e.Target {
				stack = append(stack, done[n-1])
				undone[e.Target] = true
				done = done[:n-1]
			}
		case refs.OpRedo:
			if n := len(stack); n > 0 && stack[n-1].Seq == e.Target {
				done = append(done, stack[n-1])
				delete(undone, e.Target)
				stack = stack[:n-1]
			}
		default:
			done = append(done, e)
			stack = stack[:0]
		}
	}
	return undone
}

// Receipt is one line of an agent's receipt tape.
type Receipt struct {
	N        int              `json:"n"`
	Receipt  *receipt.Receipt `json:"receipt,omitempty"`
	Line     string           `json:"line,omitempty"` // a line that does not parse
	Verified *bool            `json:"verified,omitempty"`
	Error    string           `json:"error,omitempty"`
	Note     string           `json:"note,omitempty"`
}

// Receipts returns an agent's receipts, oldest first; with verify, each is
// checked against the keys the store trusts for the agent's receipts and
// its commit's bundle hash (ReceiptsWith: against keys of the caller's).
func (v *View) Receipts(ctx context.Context, agent string, verify bool) ([]Receipt, error) {
	return v.ReceiptsWith(ctx, agent, ReceiptOptions{Verify: verify})
}

// Snapshots returns an agent's pushes and restores, oldest first ("" for
// every agent).
func (v *View) Snapshots(ctx context.Context, agent string) ([]snapshot.Record, error) {
	if agent != "" {
		if err := refs.ValidateAgent(agent); err != nil {
			return nil, classify(err)
		}
	}
	recs, err := snapshot.Records(ctx, v.R, agent)
	if recs == nil {
		recs = []snapshot.Record{}
	}
	return recs, classify(err)
}
