package inspect

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs/receipt"
)

// Bounds on what a page of history reads and what a client may send.
const (
	// MaxLogScan is how many commits one page of a filtered history walks
	// at most; a page that found fewer than it asked for says how far it
	// got and gives a cursor to go on from.
	MaxLogScan = 5000
	// MaxCursor bounds a cursor's text; MaxGrep a search string's.
	MaxCursor = 64 << 10
	MaxGrep   = 1 << 10
)

// LogPageOptions select one page of a history.
type LogPageOptions struct {
	Rev    string // where the first page starts; "" is HEAD; a range A..B (SplitRange) pages B's commits A does not reach
	Cursor string // where a later page goes on (LogPage.Next); Rev is then ignored
	Path   string // only commits that changed this key
	Prefix string // only commits that changed a key starting with this
	// Grep keeps the commits whose message or task, model, op or source
	// metadata contains it (case-insensitive).
	Grep  string
	Limit int // commits on the page (default 200)
}

// LogPage is one page of a history: a History and, when more follow, the
// cursor to the next page.
type LogPage struct {
	History
	// Next goes on from where this page stopped ("" at the end). It names
	// the page's start and the commits the walk stopped at: the next page
	// walks on from them, never again through what this one walked, and
	// does not move as HEAD does.
	Next string `json:"next,omitempty"`
	// Scanned is how many commits the page walked (more than it shows when
	// filtered; a filtered page stops after MaxLogScan).
	Scanned int `json:"scanned"`
}

// logCursor is a cursor's content: the agent, the commit the first page
// started at, and the walk's frontier.
type logCursor struct {
	Agent    string        `json:"a"`
	Start    objects.CID   `json:"s"`
	Frontier []objects.CID `json:"f"`
	Exclude  objects.CID   `json:"x,omitzero"` // a range's A
}

func (c logCursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeCursor(agent, s string) (logCursor, error) {
	var c logCursor
	if len(s) > MaxCursor {
		return c, badf("cursor over %d bytes", MaxCursor)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || len(c.Frontier) == 0 || c.Start.IsZero() {
		return c, badf("cursor %.40q is not one a log gave", s)
	}
	if c.Agent != agent {
		return c, badf("cursor is for agent %q, not %q", c.Agent, agent)
	}
	return c, nil
}

// LogPage returns a page of an agent's history as Log walks it, newest
// first: o.Limit commits (filtered by o.Path, o.Prefix, o.Grep), from o.Rev
// or from where o.Cursor says an earlier page stopped.
//
// A cursor that does not decode, is another agent's, or names commits the
// store does not hold (a cursor from another store, or one a forget made
// stale) is ErrBadRequest.
func (v *View) LogPage(ctx context.Context, agent string, o LogPageOptions) (LogPage, error) {
	if o.Path != "" {
		if err := objects.ValidateKey(o.Path); err != nil {
			return LogPage{}, classify(err)
		}
	}
	if len(o.Grep) > MaxGrep {
		return LogPage{}, badf("search text of %d bytes: at most %d", len(o.Grep), MaxGrep)
	}
	if len(o.Prefix) > objects.MaxKeyLen {
		return LogPage{}, badf("key prefix of %d bytes: at most %d", len(o.Prefix), objects.MaxKeyLen)
	}
	if o.Limit <= 0 {
		o.Limit = 200
	}
	// As Log does: a forget beside the walk may delete what the walk is
	// following; the page starts again (a few times) as things are then.
	for attempt := 1; ; attempt++ {
		p, err := v.logPageOnce(ctx, agent, o)
		if err == nil || attempt == 4 || !errors.Is(err, ErrNotFound) || ctx.Err() != nil {
			return p, err
		}
	}
}

func (v *View) logPageOnce(ctx context.Context, agent string, o LogPageOptions) (LogPage, error) {
	head, err := v.checkAgent(ctx, agent)
	if err != nil {
		return LogPage{}, err
	}
	var cur logCursor
	if o.Cursor != "" {
		if cur, err = decodeCursor(agent, o.Cursor); err != nil {
			return LogPage{}, err
		}
	} else {
		rev, exclude, err := v.pageRange(ctx, agent, o.Rev)
		if err != nil {
			return LogPage{}, err
		}
		start, _, err := v.resolve(ctx, agent, rev)
		if err != nil {
			return LogPage{}, err
		}
		cur = logCursor{Agent: agent, Start: start, Exclude: exclude}
	}
	lo, cp, err := v.R.LogOptions(ctx, agent)
	if err != nil {
		return LogPage{}, classify(err)
	}
	out := LogPage{History: History{Head: head.Commit, Commits: []Commit{}}}
	if cp != nil {
		out.Forgotten = &Forgotten{Time: cp.Time, Policy: cp.Policy, Ops: cp.ForgottenOps, Commits: cp.ForgottenCommits}
	}
	grep := strings.ToLower(o.Grep)
	excluded, err := v.reachable(ctx, cur.Exclude, lo)
	if err != nil {
		return LogPage{}, err
	}
	filtered := o.Path != "" || o.Prefix != "" || o.Grep != "" || excluded != nil
	next, err := dag.LogPage(ctx, v.R.Blocks, cur.Start, cur.Frontier, lo, func(le dag.LogEntry) (bool, error) {
		out.Scanned++
		if excluded[le.CID] {
			return out.Scanned < MaxLogScan, nil
		}
		ok, err := v.pageKeeps(ctx, le, o, grep)
		if err != nil {
			return false, err
		}
		if ok {
			c, err := v.entryCommit(ctx, le)
			if err != nil {
				return false, err
			}
			c.Cut = le.Cut
			out.Commits = append(out.Commits, c)
		}
		return len(out.Commits) < o.Limit && (!filtered || out.Scanned < MaxLogScan), nil
	})
	if err != nil {
		if o.Cursor != "" && (errors.Is(err, objects.ErrNotFound) || errors.Is(err, dag.ErrUnknown)) {
			return LogPage{}, badf("cursor names commits this store does not hold (from another store, or forgotten since): %v", err)
		}
		return LogPage{}, classify(err)
	}
	if next != nil {
		cur.Frontier = next
		out.Next = cur.encode()
	}
	return out, nil
}

// pageKeeps says whether a page's filters keep a commit.
func (v *View) pageKeeps(ctx context.Context, le dag.LogEntry, o LogPageOptions, grep string) (bool, error) {
	if grep != "" && !commitMatches(le.Commit, grep) {
		return false, nil
	}
	if o.Path != "" {
		if ok, err := dag.EntryTouchesKey(ctx, v.R.Blocks, le, o.Path); err != nil || !ok {
			return false, err
		}
	}
	if o.Prefix != "" {
		return v.touchesPrefix(ctx, le, o.Prefix)
	}
	return true, nil
}

// commitMatches: the message or task, model, op or source metadata holds
// grep (lower case).
func commitMatches(cm *objects.Commit, grep string) bool {
	if strings.Contains(strings.ToLower(cm.Message), grep) {
		return true
	}
	for _, k := range []string{"task", "model", "op", "source"} {
		if strings.Contains(strings.ToLower(cm.Metadata[k]), grep) {
			return true
		}
	}
	return false
}

// touchesPrefix says whether a commit changed a key starting with prefix
// against its first parent (a root, or a commit whose first parent a
// forget cut, against nothing).
func (v *View) touchesPrefix(ctx context.Context, le dag.LogEntry, prefix string) (bool, error) {
	var parentTree objects.CID
	if ps := le.Commit.Parents; len(ps) > 0 && !containsCID(le.Cut, ps[0]) {
		pc, err := dag.ReadCommit(ctx, v.R.Blocks, ps[0])
		if err != nil {
			return false, err
		}
		parentTree = pc.Tree
	}
	if parentTree == le.Commit.Tree {
		return false, nil
	}
	if parentTree.IsZero() {
		t, err := objects.LoadTree(ctx, v.R.Blocks, le.Commit.Tree)
		if err != nil {
			return false, err
		}
		for e, err := range t.Entries(ctx, prefix) {
			if err != nil {
				return false, err
			}
			return strings.HasPrefix(e.Key, prefix), nil
		}
		return false, nil
	}
	for ch, err := range objects.DiffTrees(ctx, v.R.Blocks, parentTree, le.Commit.Tree) {
		if err != nil {
			return false, err
		}
		if strings.HasPrefix(ch.Path, prefix) {
			return true, nil
		}
		if ch.Path > prefix {
			return false, nil
		}
	}
	return false, nil
}

func containsCID(s []objects.CID, c objects.CID) bool {
	for _, x := range s {
		if x == c {
			return true
		}
	}
	return false
}

// OplogPage is a page of an operation log, newest first.
type OplogPage struct {
	Ops []Op `json:"ops"`
	// Before is the seq to ask the next (older) page before (0: no more).
	Before uint64 `json:"before,omitempty"`
}

// OplogBefore returns at most limit operations with a seq below before (0:
// from the newest), newest first.
func (v *View) OplogBefore(ctx context.Context, agent string, before uint64, limit int) (OplogPage, error) {
	all, err := v.Oplog(ctx, agent, 0)
	if err != nil {
		return OplogPage{}, err
	}
	i := 0
	if before > 0 {
		for i < len(all) && all[i].Seq >= before {
			i++
		}
	}
	out := OplogPage{}
	if j := i + limit; j < len(all) && limit > 0 {
		out.Ops = all[i:j]
		out.Before = all[j-1].Seq
	} else {
		out.Ops = all[i:]
	}
	return out, nil
}

// ReceiptPage is a page of an agent's receipt tape.
type ReceiptPage struct {
	Receipts []Receipt `json:"receipts"`
	Total    int       `json:"total"` // lines on the tape
	From     int       `json:"from"`  // the first one's number
}

// ReceiptsPage returns limit receipts numbered from from (1: the oldest;
// 0: the newest limit), oldest first, each verified when verify is set: a
// page verifies its own receipts, not the whole tape's.
func (v *View) ReceiptsPage(ctx context.Context, agent string, from, limit int, verify bool) (ReceiptPage, error) {
	if from < 0 || limit < 1 {
		return ReceiptPage{}, badf("receipts from %d, %d of them: from is at least 0, and at least one", from, limit)
	}
	if _, err := v.checkAgent(ctx, agent); err != nil {
		return ReceiptPage{}, err
	}
	var keys []ed25519.PublicKey
	if verify {
		var err error
		if keys, err = v.receiptKeys(ctx, agent); err != nil {
			return ReceiptPage{}, err
		}
	}
	var lines [][]byte
	for l, err := range v.R.Tape.Lines(ctx, agent) {
		if err != nil {
			return ReceiptPage{}, fmt.Errorf("reading the receipt tape of %q: %w", agent, err)
		}
		lines = append(lines, l)
	}
	if from == 0 {
		from = max(1, len(lines)-limit+1)
	}
	lo, hi := min(from-1, len(lines)), min(from-1+limit, len(lines))
	rs := readReceipts(lines[lo:hi], verify, func(rc *receipt.Receipt) (string, error) { return v.checkReceipt(ctx, rc, keys) })
	for i := range rs {
		rs[i].N += lo
	}
	return ReceiptPage{Receipts: rs, Total: len(lines), From: lo + 1}, nil
}
