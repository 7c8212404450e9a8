// Package mcpserver is agentstate's Model Context Protocol server, built on
// the official Go SDK: tools and a resource template over dag/inspect,
// served on stdio ('agentstate mcp') or streamable HTTP ('/mcp' on a served
// store's TCP address). docs/mcp.md describes every tool.
package mcpserver

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits on what a tool result carries inline.
const (
	MaxInline  = 256 << 10 // one value
	MaxSubtree = 256 << 10 // the values of one read_subtree answer (keys count 128 bytes each)
	MaxList    = 10000     // entries of one list
	MaxPage    = 1000      // commits, operations or receipts of one answer
)

// Options configure a server.
type Options struct {
	ReadOnly bool   // register the reads only
	Agent    string // the agent when a call names none
	Version  string
	// Open, when set, gives each call the view it works on, for the call
	// only: write says the call may write. A process that does not hold
	// the store opens it per call (and closes it after), so it never holds
	// a free store between calls. Without Open every call uses the view
	// NewServer was given.
	Open func(ctx context.Context, write bool, fn func(*inspect.View) error) error
	// RedactSigner, when set, offers a read-write session the redact tool
	// (redact.go), whose records it signs. Unset (the default), no session
	// may redact.
	RedactSigner ed25519.PrivateKey
}

// Source is the metadata every MCP write records.
const Source = "mcp"

// NewServer returns an MCP server over v (nil when o.Open gives the views).
func NewServer(v *inspect.View, o Options) *sdk.Server {
	s, _ := newServer(v, o)
	return s
}

func newServer(v *inspect.View, o Options) (*sdk.Server, *subs) {
	if o.Version == "" {
		o.Version = "1"
	}
	h := &handlers{v: v, o: o}
	sub := newSubs(h)
	s := sdk.NewServer(&sdk.Implementation{Name: "agentstate", Version: o.Version}, &sdk.ServerOptions{
		CompletionHandler:  h.complete,    // complete.go
		SubscribeHandler:   sub.subscribe, // subscribe.go
		UnsubscribeHandler: sub.unsubscribe,
		Instructions: "agentstate keeps an agent's brain (skills, memory, prompt, key-value state) as a content-addressed history. " +
			"Revisions: HEAD, HEAD~N, HEAD^2, a commit CID (10+ characters), a tag, task:ID (the commit a task landed; task:ID@ATTEMPT). Values are also resources: agentstate://AGENT/REV/KEY.",
	})
	sub.srv = s
	s.AddReceivingMiddleware(notFoundCode, logCalls)
	// Outputs are 'any' to the SDK: CIDs are JSON strings, which a schema
	// inferred from their Go struct would call objects.
	sdk.AddTool(s, &sdk.Tool{Name: "list_agents", Description: "List the agents in the store with their HEAD commit, last message and bundle hash."}, h.listAgents)
	sdk.AddTool(s, &sdk.Tool{Name: "log", Description: "An agent's history, newest first (merged lines included); path limits it to commits that changed a key."}, h.log)
	sdk.AddTool(s, &sdk.Tool{Name: "show", Description: "One commit: message, metadata, parents, bundle hash, and what it changed against its first parent (with line diffs when lines is true)."}, h.show)
	sdk.AddTool(s, &sdk.Tool{Name: "diff", Description: "What changed between two revisions of an agent, per key; line diffs of text values when lines is true, sizes for binary ones. A SQLite value's change (e.g. memory.db) comes by table in rows: schema changes, and per table the rows inserted, deleted and updated (matched by rowid, or primary key for WITHOUT ROWID) with the changed columns' old and new values; an FTS5 table as its own rows."}, h.diff)
	sdk.AddTool(s, &sdk.Tool{Name: "get", Description: "A key's value at a revision (default HEAD): text inline, binary as base64; values over 256 KiB give their size only: read those in ranges with offset and length (at most 256 KiB each)."}, h.get)
	sdk.AddTool(s, &sdk.Tool{Name: "blame", Description: "Each line of a text value at a revision (default HEAD) with the commit, task and time that last changed it (git blame's walk; boundary marks a line at a forget cut, which may be older). Values over 1 MiB or not text are refused. With table, for a SQLite value: each row of that table (its key) with the commit, task and time that last inserted or changed it."}, h.blameAny)
	sdk.AddTool(s, &sdk.Tool{Name: "sql", Description: "Run one read-only SQL statement against a SQLite value (e.g. memory.db) as it was at a revision (default HEAD), straight from the store: columns and typed rows (integers and reals as numbers, text as strings, blobs as {\"base64\"}); truncated when there were more rows than max_rows. Without a query: the database's tables and views. Writes, ATTACH, extensions, PRAGMAs that set anything and a second statement are refused; a query has a time limit."}, h.sql)
	sdk.AddTool(s, &sdk.Tool{Name: "row_history", Description: "The history of one row of a SQLite value (default memory.db): every commit, with its task, that inserted, changed or deleted it, newest first, with the row's values after it (an update: old values and the changed columns too). Only commits that changed the value are read, and of each only the row."}, h.rowHistory)
	sdk.AddTool(s, &sdk.Tool{Name: "task", Description: "Tasks in history. With id (ID, or ID@ATTEMPT for one attempt; the latest landing otherwise): that task's commits, its receipt (verified) and its whole change from the commit it started from (line diffs when lines is true). Without id: the agent's history grouped by task, newest first, one entry per landed task (commits folded, keys written, bundle hash before and after, merge or not, receipt state), paged by skip and limit."}, h.task)
	sdk.AddTool(s, &sdk.Tool{Name: "list", Description: "The keys under a prefix at a revision, with their sizes."}, h.list)
	sdk.AddTool(s, &sdk.Tool{Name: "read_subtree", Description: "Every key under a prefix at a revision with its value, without a checkout, in pages of at most 256 KiB of values: when cursor is set, call again with it (and the same prefix) for the next page, read at the same commit. A value over 256 KiB gives its size only (read it with get's offset and length)."}, h.readSubtree)
	sdk.AddTool(s, &sdk.Tool{Name: "oplog", Description: "An agent's operation log, newest first: every HEAD move (commit, merge, undo, redo, reset, fork, restore, pull), undone ones marked."}, h.oplog)
	sdk.AddTool(s, &sdk.Tool{Name: "receipts", Description: "An agent's signed task receipts; with verify, each checked against the store's operator keys and its commit's bundle hash."}, h.receipts)
	sdk.AddTool(s, &sdk.Tool{Name: "snapshots", Description: "An agent's snapshot pushes and restores: blob ids, commits, bundle hashes, expiry epochs."}, h.snapshots)
	if !o.ReadOnly {
		sdk.AddTool(s, &sdk.Tool{Name: "put", Description: "Set a key to a value (text, or base64 for bytes) at the agent's HEAD: one commit, recorded as coming from MCP."}, h.put)
		sdk.AddTool(s, &sdk.Tool{Name: "delete", Description: "Delete a key at the agent's HEAD: one commit, recorded as coming from MCP."}, h.delete)
		sdk.AddTool(s, &sdk.Tool{Name: "undo", Description: "Revert the agent's last operation (HEAD moves back; it can be redone from the command line)."}, h.undo)
		sdk.AddTool(s, &sdk.Tool{Name: "fork", Description: "Start a new agent at a revision of another: O(1), history shared."}, h.fork)
		if o.RedactSigner != nil {
			sdk.AddTool(s, &sdk.Tool{Name: "redact", Description: redactDescription}, h.redact)
		}
	}
	s.AddResourceTemplate(&sdk.ResourceTemplate{Name: "value", URITemplate: ValueTemplate,
		Description: "A key's value at a revision of an agent (rev percent-encoded: HEAD%7E2 for HEAD~2).", MIMEType: "application/octet-stream"}, h.resource)
	return s, sub
}

// Handler serves MCP over streamable HTTP: a read-only server for requests
// readOnly reports, the full one otherwise. Authentication is the caller's.
func Handler(v *inspect.View, readOnly func(*http.Request) bool, o Options) http.Handler {
	ro, rw := o, o
	ro.ReadOnly, rw.ReadOnly = true, false
	roS, rwS := NewServer(v, ro), NewServer(v, rw)
	h := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		if o.ReadOnly || readOnly(r) {
			return roS
		}
		return rwS
	}, &sdk.StreamableHTTPOptions{SessionTimeout: SessionTimeout})
	return capSessions(h, MaxSessions, SessionTimeout) // sessions.go
}

// ServeStdio serves MCP on in and out (newline-delimited JSON-RPC) until in
// ends or ctx is done.
func ServeStdio(ctx context.Context, v *inspect.View, o Options, in io.Reader, out io.Writer) error {
	err := NewServer(v, o).Run(ctx, &sdk.IOTransport{Reader: io.NopCloser(in), Writer: nopCloser{out}})
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

type handlers struct {
	v *inspect.View
	o Options
}

// with runs fn with the call's view: o.Open's, or the server's own.
// Its errors carry the hint an MCP client needs (hint).
func (h *handlers) with(ctx context.Context, write bool, fn func(v *inspect.View) error) error {
	if h.o.Open != nil {
		return hinted(h.o.Open(ctx, write, fn))
	}
	return hinted(fn(h.v))
}

// hint is what MCP adds to an error from below it: the tool that answers
// it. The libraries say what went wrong in their own words (and the CLI
// adds its commands); tools are named only here.
func hint(err error) string {
	switch {
	case errors.Is(err, refs.ErrNoAgent):
		return "list_agents lists the agents; put or fork creates one"
	}
	return ""
}

// hinted is err with its hint, if it has one, in parentheses; errors.Is
// and errors.As still see err.
func hinted(err error) error {
	if err == nil {
		return nil
	}
	if h := hint(err); h != "" {
		return &hintError{err: err, hint: h}
	}
	return err
}

type hintError struct {
	err  error
	hint string
}

func (e *hintError) Error() string { return e.err.Error() + " (" + e.hint + ")" }
func (e *hintError) Unwrap() error { return e.err }

func (h *handlers) agent(a string) string {
	if a == "" {
		return h.o.Agent
	}
	return a
}

// The tools' inputs and outputs.

type agentIn struct {
	Agent string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
}

type agentsOut struct {
	Agents []inspect.Agent `json:"agents"`
}

func (h *handlers) listAgents(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
	var out agentsOut
	err := h.with(ctx, false, func(v *inspect.View) (err error) {
		out.Agents, err = v.Agents(ctx)
		return err
	})
	return nil, out, err
}

type logIn struct {
	Agent  string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	Rev    string `json:"rev,omitempty" jsonschema:"where to start (default HEAD), or a range A..B: the commits reachable from B and not from A"`
	Path   string `json:"path,omitempty" jsonschema:"only commits that changed this key"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many commits (default 50, at most 1000)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"continue after the answer that gave this nextCursor (same agent and path; rev is then ignored)"`
}

// logOut is a page of history and the cursor to the next.
type logOut struct {
	inspect.History
	NextCursor string `json:"nextCursor,omitempty"`
}

// log gives a page of history (inspect.View.LogPaged): later pages walk
// on from where the first stopped, whatever HEAD did since.
func (h *handlers) log(ctx context.Context, _ *sdk.CallToolRequest, in logIn) (*sdk.CallToolResult, any, error) {
	in.Limit = bound(in.Limit, 50, MaxPage)
	var out logOut
	err := h.with(ctx, false, func(v *inspect.View) error {
		p, err := v.LogPage(ctx, h.agent(in.Agent), inspect.LogPageOptions{Rev: in.Rev, Cursor: in.Cursor, Path: in.Path, Limit: in.Limit})
		out = logOut{History: p.History, NextCursor: p.Next}
		return err
	})
	return nil, out, err
}

// bound is n, or def when n is not positive, and at most most.
func bound(n, def, most int) int {
	if n <= 0 {
		n = def
	}
	return min(n, most)
}

type showIn struct {
	Agent string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	Rev   string `json:"rev,omitempty" jsonschema:"the commit (default HEAD)"`
	Lines bool   `json:"lines,omitempty" jsonschema:"include unified line diffs of text values"`
}

func (h *handlers) show(ctx context.Context, _ *sdk.CallToolRequest, in showIn) (*sdk.CallToolResult, any, error) {
	var out inspect.Shown
	err := h.with(ctx, false, func(v *inspect.View) (err error) {
		out, err = v.Show(ctx, h.agent(in.Agent), in.Rev, in.Lines)
		return err
	})
	return nil, out, err
}

type diffIn struct {
	Agent string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	From  string `json:"from" jsonschema:"the older revision"`
	To    string `json:"to,omitempty" jsonschema:"the newer revision (default HEAD)"`
	Lines bool   `json:"lines,omitempty" jsonschema:"include unified line diffs of text values"`
}

type diffOut struct {
	Changes []inspect.Change `json:"changes"`
}

func (h *handlers) diff(ctx context.Context, _ *sdk.CallToolRequest, in diffIn) (*sdk.CallToolResult, any, error) {
	var out diffOut
	err := h.with(ctx, false, func(v *inspect.View) (err error) {
		out.Changes, err = v.Diff(ctx, h.agent(in.Agent), in.From, in.To, in.Lines)
		if err != nil {
			return err
		}
		return v.DiffRows(ctx, out.Changes)
	})
	return nil, out, err
}

type keyIn struct {
	Agent string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	Rev   string `json:"rev,omitempty" jsonschema:"the revision (default HEAD)"`
	Key   string `json:"key" jsonschema:"the key, e.g. skills/search.md"`
}

// valueOut is a value: Text when it is UTF-8 text, else Base64; neither
// (Omitted) when it is over the inline limit.
type valueOut struct {
	Key     string      `json:"key"`
	Commit  objects.CID `json:"commit"`
	CID     objects.CID `json:"cid"`
	Size    uint64      `json:"size"`
	Text    *string     `json:"text,omitempty"`
	Base64  string      `json:"base64,omitempty"`
	Omitted string      `json:"omitted,omitempty"`
	// A range (get with offset or length): where it starts and its
	// length; Size is the whole value's.
	Offset *int64 `json:"offset,omitempty"`
	Length int    `json:"length,omitempty"`
	// Redacted: the value's content was removed by a redaction (the
	// record), and is not given.
	Redacted *inspect.Redacted `json:"redacted,omitempty"`
}

func toValue(v inspect.Value) valueOut {
	out := valueOut{Key: v.Key, Commit: v.Commit, CID: v.CID, Size: v.Size, Redacted: v.Redacted}
	switch {
	case v.Redacted != nil:
		out.Omitted = v.Redacted.String()
	case v.Truncated:
		out.Omitted = fmt.Sprintf("%d bytes, over the %d-byte inline limit; read it in ranges with get (offset, length)", v.Size, MaxInline)
	case v.Text && utf8.Valid(v.Data):
		s := string(v.Data)
		out.Text = &s
	default:
		out.Base64 = base64.StdEncoding.EncodeToString(v.Data)
	}
	return out
}

type getIn struct {
	Agent  string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	Rev    string `json:"rev,omitempty" jsonschema:"the revision (default HEAD)"`
	Key    string `json:"key" jsonschema:"the key, e.g. skills/search.md"`
	Offset int64  `json:"offset,omitempty" jsonschema:"read a range: the first byte (default 0)"`
	Length int    `json:"length,omitempty" jsonschema:"read a range: at most this many bytes (at most 262144)"`
}

func (h *handlers) get(ctx context.Context, _ *sdk.CallToolRequest, in getIn) (*sdk.CallToolResult, any, error) {
	ranged := in.Offset != 0 || in.Length != 0
	if in.Length < 0 || in.Length > MaxInline {
		return nil, valueOut{}, fmt.Errorf("length %d: a range is 1 to %d bytes", in.Length, MaxInline)
	}
	if in.Length == 0 {
		in.Length = MaxInline
	}
	var v inspect.Value
	err := h.with(ctx, false, func(vw *inspect.View) (err error) {
		if ranged {
			v, err = vw.ReadRange(ctx, h.agent(in.Agent), in.Rev, in.Key, in.Offset, in.Length)
		} else {
			v, err = vw.Get(ctx, h.agent(in.Agent), in.Rev, in.Key, MaxInline)
		}
		return err
	})
	if err != nil {
		return nil, valueOut{}, err
	}
	out := toValue(v)
	if ranged {
		out.Offset, out.Length = &in.Offset, len(v.Data)
	}
	return nil, out, nil
}

type listIn struct {
	Agent  string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	Rev    string `json:"rev,omitempty" jsonschema:"the revision (default HEAD; with a cursor, the cursor's commit)"`
	Prefix string `json:"prefix,omitempty" jsonschema:"only keys starting with this"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many keys (default and most 10000)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"continue after the answer that gave this nextCursor (same prefix)"`
}

type listOut struct {
	Commit     objects.CID     `json:"commit"`
	Entries    []inspect.Entry `json:"entries"`
	More       bool            `json:"more"`
	NextCursor string          `json:"nextCursor,omitempty"`
}

func (h *handlers) list(ctx context.Context, _ *sdk.CallToolRequest, in listIn) (*sdk.CallToolResult, any, error) {
	in.Limit = bound(in.Limit, MaxList, MaxList)
	var out listOut
	err := h.with(ctx, false, func(v *inspect.View) error {
		p, err := v.ListPaged(ctx, h.agent(in.Agent), inspect.ListPageOptions{Rev: in.Rev, Prefix: in.Prefix, Cursor: in.Cursor, Limit: in.Limit})
		out = listOut{Commit: p.Commit, Entries: p.Entries, More: p.Next != "", NextCursor: p.Next}
		return err
	})
	return nil, out, err
}

type subtreeIn struct {
	Agent  string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	Rev    string `json:"rev,omitempty" jsonschema:"the revision (default HEAD; with a cursor, the cursor's commit)"`
	Prefix string `json:"prefix,omitempty" jsonschema:"only keys starting with this"`
	Cursor string `json:"cursor,omitempty" jsonschema:"continue after the answer that gave this cursor (same prefix)"`
}

type subtreeOut struct {
	Commit objects.CID `json:"commit"`
	Values []valueOut  `json:"values"`
	Cursor string      `json:"cursor,omitempty"`
	More   bool        `json:"more"`
	// NextCursor is Cursor under the name the specification's paging
	// gives it.
	NextCursor string `json:"nextCursor,omitempty"`
}

// readSubtree gives one page of the subtree (inspect.View.Subtree): at
// most MaxSubtree bytes of values, and a cursor when more follow.
func (h *handlers) readSubtree(ctx context.Context, _ *sdk.CallToolRequest, in subtreeIn) (*sdk.CallToolResult, any, error) {
	var p inspect.SubtreePage
	err := h.with(ctx, false, func(v *inspect.View) (err error) {
		p, err = v.Subtree(ctx, h.agent(in.Agent), inspect.SubtreeOptions{Rev: in.Rev, Prefix: in.Prefix, Cursor: in.Cursor, Budget: MaxSubtree, MaxValue: MaxInline})
		return err
	})
	if err != nil {
		return nil, subtreeOut{}, err
	}
	out := subtreeOut{Commit: p.Commit, Values: make([]valueOut, 0, len(p.Values)), Cursor: p.Cursor, More: p.Cursor != "", NextCursor: p.Cursor}
	for _, v := range p.Values {
		out.Values = append(out.Values, toValue(v))
	}
	return nil, out, nil
}

type oplogIn struct {
	Agent  string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many entries (default 100, at most 1000)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"continue (older entries) after the answer that gave this nextCursor"`
}

type oplogOut struct {
	Ops        []inspect.Op `json:"ops"`
	NextCursor string       `json:"nextCursor,omitempty"`
}

func (h *handlers) oplog(ctx context.Context, _ *sdk.CallToolRequest, in oplogIn) (*sdk.CallToolResult, any, error) {
	in.Limit = bound(in.Limit, 100, MaxPage)
	var out oplogOut
	err := h.with(ctx, false, func(v *inspect.View) error {
		p, err := v.OplogPaged(ctx, h.agent(in.Agent), in.Cursor, in.Limit)
		out = oplogOut{Ops: p.Ops, NextCursor: p.Next}
		return err
	})
	return nil, out, err
}

type receiptsIn struct {
	Agent  string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	Verify bool   `json:"verify,omitempty" jsonschema:"check each receipt's signature and its commit's bundle hash"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many receipts (default 100, at most 1000)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"continue (newer receipts) after the answer that gave this nextCursor"`
}

type receiptsOut struct {
	Receipts   []inspect.Receipt `json:"receipts"`
	Total      int               `json:"total"`
	NextCursor string            `json:"nextCursor,omitempty"`
}

func (h *handlers) receipts(ctx context.Context, _ *sdk.CallToolRequest, in receiptsIn) (*sdk.CallToolResult, any, error) {
	in.Limit = bound(in.Limit, 100, MaxPage)
	var out receiptsOut
	err := h.with(ctx, false, func(v *inspect.View) error {
		p, err := v.ReceiptsPaged(ctx, h.agent(in.Agent), in.Cursor, in.Limit, in.Verify)
		out = receiptsOut{Receipts: p.Receipts, Total: p.Total, NextCursor: p.Next}
		return err
	})
	return nil, out, err
}

type snapshotsOut struct {
	Records []snapshot.Record `json:"records"`
}

func (h *handlers) snapshots(ctx context.Context, _ *sdk.CallToolRequest, in agentIn) (*sdk.CallToolResult, any, error) {
	var out snapshotsOut
	err := h.with(ctx, false, func(v *inspect.View) (err error) {
		out.Records, err = v.Snapshots(ctx, h.agent(in.Agent))
		return err
	})
	return nil, out, err
}

type putIn struct {
	Agent   string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	Key     string `json:"key" jsonschema:"the key"`
	Value   string `json:"value,omitempty" jsonschema:"the value as text"`
	Base64  string `json:"base64,omitempty" jsonschema:"the value as base64 (instead of value)"`
	Message string `json:"message,omitempty" jsonschema:"the commit message (default: mcp: put KEY)"`
}

type commitOut struct {
	Commit objects.CID `json:"commit"`
}

func (h *handlers) put(ctx context.Context, _ *sdk.CallToolRequest, in putIn) (*sdk.CallToolResult, any, error) {
	data := []byte(in.Value)
	if in.Base64 != "" {
		if in.Value != "" {
			return nil, commitOut{}, errors.New("give value or base64, not both")
		}
		var err error
		if data, err = base64.StdEncoding.DecodeString(in.Base64); err != nil {
			return nil, commitOut{}, fmt.Errorf("base64: %w", err)
		}
	}
	msg := in.Message
	if msg == "" {
		msg = "mcp: put " + in.Key
	}
	var out commitOut
	err := h.with(ctx, true, func(v *inspect.View) (err error) {
		out.Commit, err = v.Put(ctx, h.agent(in.Agent), in.Key, data, inspect.WriteOptions{Message: msg, Metadata: map[string]string{"source": Source}})
		return err
	})
	return nil, out, err
}

type deleteIn struct {
	Agent   string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	Key     string `json:"key" jsonschema:"the key"`
	Message string `json:"message,omitempty" jsonschema:"the commit message (default: mcp: delete KEY)"`
}

func (h *handlers) delete(ctx context.Context, _ *sdk.CallToolRequest, in deleteIn) (*sdk.CallToolResult, any, error) {
	msg := in.Message
	if msg == "" {
		msg = "mcp: delete " + in.Key
	}
	var out commitOut
	err := h.with(ctx, true, func(v *inspect.View) (err error) {
		out.Commit, err = v.Delete(ctx, h.agent(in.Agent), in.Key, inspect.WriteOptions{Message: msg, Metadata: map[string]string{"source": Source}})
		return err
	})
	return nil, out, err
}

type undoOut struct {
	Undid uint64      `json:"undid"` // the operation reverted
	Head  objects.CID `json:"head"`
}

func (h *handlers) undo(ctx context.Context, _ *sdk.CallToolRequest, in agentIn) (*sdk.CallToolResult, any, error) {
	var out undoOut
	err := h.with(ctx, true, func(v *inspect.View) error {
		u, err := v.Undo(ctx, h.agent(in.Agent))
		out = undoOut{Undid: u.Target.Seq, Head: u.Entry.New}
		return err
	})
	return nil, out, err
}

type forkIn struct {
	Agent string `json:"agent,omitempty" jsonschema:"the agent forked (default: the server's)"`
	Rev   string `json:"rev,omitempty" jsonschema:"where (default HEAD)"`
	To    string `json:"to" jsonschema:"the new agent's name"`
}

type forkOut struct {
	Agent string      `json:"agent"`
	Head  objects.CID `json:"head"`
}

func (h *handlers) fork(ctx context.Context, _ *sdk.CallToolRequest, in forkIn) (*sdk.CallToolResult, any, error) {
	out := forkOut{Agent: in.To}
	err := h.with(ctx, true, func(v *inspect.View) error {
		e, err := v.Fork(ctx, h.agent(in.Agent), in.Rev, in.To)
		out.Head = e.New
		return err
	})
	return nil, out, err
}

// CodeResourceNotFound is "resource not found" up to protocol version
// 2025-11-25; later versions (and the SDK) give it -32602.
const CodeResourceNotFound = -32002

// notFoundMessage is the message of sdk.ResourceNotFoundError, which tells
// it from other errors with its code (-32602).
var notFoundMessage = sdk.ResourceNotFoundError("").(*jsonrpc.Error).Message

// notFoundCode gives "resource not found" (the SDK's, for a URI no template
// matches, or this server's) the code of the session's protocol version.
func notFoundCode(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		var je *jsonrpc.Error
		if method == "resources/read" && errors.As(err, &je) && je.Code == sdk.CodeResourceNotFound && je.Message == notFoundMessage {
			if ss, ok := req.GetSession().(*sdk.ServerSession); ok {
				if p := ss.InitializeParams(); p != nil && p.ProtocolVersion != "" && p.ProtocolVersion <= "2025-11-25" {
					e := *je
					e.Code = CodeResourceNotFound
					return res, &e
				}
			}
		}
		return res, err
	}
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// parseValueURI reads agentstate://AGENT/REV/KEY (REV percent-decoded).
func parseValueURI(uri string) (agent, rev, key string, ok bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "agentstate" || u.Host == "" {
		return "", "", "", false
	}
	rev, key, ok = strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if !ok || rev == "" || key == "" {
		return "", "", "", false
	}
	return u.Host, rev, key, true
}

// resource reads agentstate://AGENT/REV/KEY.
func (h *handlers) resource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	agent, rev, key, ok := parseValueURI(uri)
	if !ok {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	var v inspect.Value
	err := h.with(ctx, false, func(vw *inspect.View) (err error) {
		v, err = vw.Get(ctx, agent, rev, key, MaxInline)
		return err
	})
	if errors.Is(err, inspect.ErrNotFound) || errors.Is(err, inspect.ErrBadRequest) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if err != nil {
		return nil, err
	}
	if v.Truncated {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("%s is %d bytes, over the %d bytes a resource read returns; read it in ranges with the get tool (agent %q, rev %q, key %q, offset, length up to %d)",
				uri, v.Size, MaxInline, agent, rev, key, MaxInline),
			Data: mustJSON(map[string]any{"uri": uri, "size": v.Size, "limit": MaxInline})}
	}
	c := &sdk.ResourceContents{URI: uri}
	if v.Text && utf8.Valid(v.Data) {
		c.MIMEType, c.Text = "text/plain; charset=utf-8", string(v.Data)
	} else {
		c.MIMEType, c.Blob = "application/octet-stream", v.Data
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{c}}, nil
}

type taskIn struct {
	Agent string `json:"agent,omitempty" jsonschema:"the agent (default: the server's)"`
	ID    string `json:"id,omitempty" jsonschema:"the task: ID or ID@ATTEMPT (omit to list the agent's tasks)"`
	Lines bool   `json:"lines,omitempty" jsonschema:"with id: include unified line diffs of text values"`
	Rev   string `json:"rev,omitempty" jsonschema:"without id: where the history starts (default HEAD)"`
	Skip  int    `json:"skip,omitempty" jsonschema:"without id: leave out this many newest tasks"`
	Limit int    `json:"limit,omitempty" jsonschema:"without id: at most this many tasks (default 50)"`
}

func (h *handlers) task(ctx context.Context, _ *sdk.CallToolRequest, in taskIn) (*sdk.CallToolResult, any, error) {
	var out any
	err := h.with(ctx, false, func(v *inspect.View) error {
		if in.ID != "" {
			d, err := v.Task(ctx, h.agent(in.Agent), in.ID, in.Lines)
			out = d
			return err
		}
		if in.Limit <= 0 {
			in.Limit = 50
		}
		lg, err := v.Tasks(ctx, h.agent(in.Agent), inspect.TaskOptions{Rev: in.Rev, Skip: in.Skip, Limit: in.Limit, Verify: true})
		out = lg
		return err
	})
	return nil, out, err
}
