package inspect

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs/receipt"
)

// Cursors of the paged reads a client continues (MCP's log, list, oplog
// and receipts; read_subtree's is subtree.go's): opaque text a page gives
// and the next call passes back unchanged. Each names what it continues
// (the agent, and the commit, operation or receipt line the page ended
// at, by content), so a cursor from another store, another agent, or one
// a forget has made stale is refused with ErrBadRequest, never read as
// something else.

// pageCursor is a cursor's content; which fields are set depends on its
// kind.
type pageCursor struct {
	Kind   string      `json:"k"`
	Agent  string      `json:"a"`
	Commit objects.CID `json:"c,omitzero"` // list: the commit the first page read
	Prefix string      `json:"p,omitempty"`
	After  string      `json:"x,omitempty"` // list: the last key given
	N      uint64      `json:"n,omitempty"` // oplog: the last seq given; receipts: the last line given
	Hash   string      `json:"h,omitempty"` // oplog, receipts: what that entry or line was
}

func (c pageCursor) encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodePageCursor(kind, agent, s string) (pageCursor, error) {
	var c pageCursor
	if len(s) > MaxCursor {
		return c, badf("cursor over %d bytes", MaxCursor)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.Kind == "" {
		return c, badf("invalid cursor %.40q (a cursor is passed back unchanged)", s)
	}
	if c.Kind != kind {
		return c, badf("the cursor continues a %s, not a %s", c.Kind, kind)
	}
	if c.Agent != agent {
		return c, badf("the cursor is for agent %q, not %q", c.Agent, agent)
	}
	return c, nil
}

// ListPageOptions select one page of a listing.
type ListPageOptions struct {
	Rev    string // the revision; "" is HEAD (ignored with a cursor)
	Prefix string // only keys starting with this
	Cursor string // continue after the page that gave it, at its commit
	Limit  int    // keys on a page (default 1000)
}

// ListPage is one page of the keys under a prefix, in key order, read at
// Commit; Next continues it ("" at the end).
type ListPage struct {
	Commit  objects.CID `json:"commit"`
	Entries []Entry     `json:"entries"`
	Next    string      `json:"next,omitempty"`
}

// ListPaged returns a page of the keys under o.Prefix. A later page reads
// the commit the first read, whatever HEAD did since; a cursor for
// another prefix is refused, and one naming a commit this store does not
// hold is ErrNotFound.
func (v *View) ListPaged(ctx context.Context, agent string, o ListPageOptions) (ListPage, error) {
	if o.Limit <= 0 {
		o.Limit = 1000
	}
	rev, after := o.Rev, ""
	if o.Cursor != "" {
		c, err := decodePageCursor("list", agent, o.Cursor)
		if err != nil {
			return ListPage{}, err
		}
		if c.Prefix != o.Prefix {
			return ListPage{}, badf("the cursor continues prefix %q, not %q", c.Prefix, o.Prefix)
		}
		if c.Commit.IsZero() {
			return ListPage{}, badf("invalid cursor (a cursor is passed back unchanged)")
		}
		rev, after = c.Commit.String(), c.After
	}
	id, cm, err := v.resolve(ctx, agent, rev)
	if err != nil {
		return ListPage{}, err
	}
	t, err := objects.LoadTree(ctx, v.R.Blocks, cm.Tree)
	if err != nil {
		return ListPage{}, classify(err)
	}
	out := ListPage{Commit: id, Entries: []Entry{}}
	from := max(o.Prefix, after)
	for en, err := range t.Entries(ctx, from) {
		if err != nil {
			return ListPage{}, classify(err)
		}
		if !strings.HasPrefix(en.Key, o.Prefix) {
			break
		}
		if en.Key == after {
			continue
		}
		if len(out.Entries) == o.Limit {
			out.Next = pageCursor{Kind: "list", Agent: agent, Commit: id, Prefix: o.Prefix, After: out.Entries[len(out.Entries)-1].Key}.encode()
			break
		}
		size, err := v.size(ctx, en.Value)
		if err != nil {
			return ListPage{}, classify(err)
		}
		out.Entries = append(out.Entries, Entry{Key: en.Key, CID: en.Value, Size: size})
	}
	return out, nil
}

// OplogCursorPage is a page of an operation log, newest first, and the
// cursor to the older entries ("" at the end).
type OplogCursorPage struct {
	Ops  []Op   `json:"ops"`
	Next string `json:"next,omitempty"`
}

// OplogPaged returns limit operations (default 100), newest first, from
// the newest or, with a cursor, from the one before where that page
// ended. The cursor holds the last operation's seq and its link to the
// one before it: a cursor that does not name an operation of this log
// (another store's, or one a forget cut away) is refused.
func (v *View) OplogPaged(ctx context.Context, agent, cursor string, limit int) (OplogCursorPage, error) {
	if limit <= 0 {
		limit = 100
	}
	var c pageCursor
	if cursor != "" {
		var err error
		if c, err = decodePageCursor("oplog", agent, cursor); err != nil {
			return OplogCursorPage{}, err
		}
	}
	all, err := v.Oplog(ctx, agent, 0)
	if err != nil {
		return OplogCursorPage{}, err
	}
	i := 0
	if cursor != "" {
		for i < len(all) && all[i].Seq > c.N {
			i++
		}
		if i == len(all) || all[i].Seq != c.N || opHash(all[i]) != c.Hash {
			return OplogCursorPage{}, badf("the cursor names operation %d, which this operation log does not hold (a cursor from another store, or forgotten since)", c.N)
		}
		i++
	}
	out := OplogCursorPage{Ops: all[i:min(i+limit, len(all))]}
	if i+limit < len(all) {
		last := out.Ops[len(out.Ops)-1]
		out.Next = pageCursor{Kind: "oplog", Agent: agent, N: last.Seq, Hash: opHash(last)}.encode()
	}
	return out, nil
}

// opHash names an operation by what it did, its time and its link to
// the one before.
func opHash(o Op) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%d\x00%s\x00%s\x00%s\x00%d\x00%s", o.Seq, o.Op, o.Old, o.New, o.Time, o.Prev))
	return hex.EncodeToString(h[:12])
}

// ReceiptCursorPage is a page of an agent's receipts, oldest first, and
// the cursor to the next ("" at the end).
type ReceiptCursorPage struct {
	Receipts []Receipt `json:"receipts"`
	Total    int       `json:"total"` // lines on the tape
	Next     string    `json:"next,omitempty"`
}

// ReceiptsPaged returns limit receipts (default 100), oldest first, from
// the first or, with a cursor, from the one after where that page ended;
// each verified when verify is set (a page verifies its own). The cursor
// holds the last line's number and hash: a tape that does not have that
// line there (another store's, another agent's) refuses it.
func (v *View) ReceiptsPaged(ctx context.Context, agent, cursor string, limit int, verify bool) (ReceiptCursorPage, error) {
	if limit <= 0 {
		limit = 100
	}
	var c pageCursor
	if cursor != "" {
		var err error
		if c, err = decodePageCursor("receipts", agent, cursor); err != nil {
			return ReceiptCursorPage{}, err
		}
	}
	if _, err := v.checkAgent(ctx, agent); err != nil {
		return ReceiptCursorPage{}, err
	}
	var lines [][]byte
	for l, err := range v.R.Tape.Lines(ctx, agent) {
		if err != nil {
			return ReceiptCursorPage{}, fmt.Errorf("reading the receipt tape of %q: %w", agent, err)
		}
		lines = append(lines, l)
	}
	from := 0
	if cursor != "" {
		if c.N == 0 || c.N > uint64(len(lines)) || lineHash(lines[c.N-1]) != c.Hash {
			return ReceiptCursorPage{}, badf("the cursor names receipt %d, which this agent's tape does not hold (a cursor from another store or agent)", c.N)
		}
		from = int(c.N)
	}
	hi := min(from+limit, len(lines))
	var keys []ed25519.PublicKey
	if verify {
		var err error
		if keys, err = v.receiptKeys(ctx, agent); err != nil {
			return ReceiptCursorPage{}, err
		}
	}
	rs := readReceipts(lines[from:hi], verify, func(rc *receipt.Receipt) (string, error) { return v.checkReceipt(ctx, rc, keys) })
	for i := range rs {
		rs[i].N += from
	}
	out := ReceiptCursorPage{Receipts: rs, Total: len(lines)}
	if hi < len(lines) {
		out.Next = pageCursor{Kind: "receipts", Agent: agent, N: uint64(hi), Hash: lineHash(lines[hi-1])}.encode()
	}
	return out, nil
}

func lineHash(l []byte) string {
	h := sha256.Sum256(l)
	return hex.EncodeToString(h[:12])
}

// pageRange reads a page's rev: a range A..B is B and A's commit (zero
// when rev is no range).
func (v *View) pageRange(ctx context.Context, agent, rev string) (string, objects.CID, error) {
	from, to, ok, err := SplitRange(rev)
	if err != nil || !ok {
		return rev, objects.CID{}, err
	}
	a, _, err := v.resolve(ctx, agent, from)
	return to, a, err
}

// reachable is the set of commits the log walks from a (around the
// agent's cuts, as the log walks); nil for a zero a.
func (v *View) reachable(ctx context.Context, a objects.CID, lo dag.LogOptions) (map[objects.CID]bool, error) {
	if a.IsZero() {
		return nil, nil
	}
	out := map[objects.CID]bool{}
	for le, err := range dag.LogWith(ctx, v.R.Blocks, a, lo) {
		if err != nil {
			return nil, classify(err)
		}
		out[le.CID] = true
	}
	return out, nil
}
