// Package webui is agentstate's time-travel page: one HTML page, its script
// and stylesheet (embedded: the page works offline), and a JSON API over
// dag/inspect, with Server-Sent Events as HEADs move. The page only
// reads. docs/ui.md describes the views and the API.
package webui

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/objects"
)

//go:embed assets
var assets embed.FS

// MaxPreview bounds the text a value view inlines.
const MaxPreview = 256 << 10

// Options configure the page.
type Options struct {
	// Heartbeat is how often the event stream says it is alive (default 15s).
	Heartbeat time.Duration
}

// Handler serves the page and its API for v.
func Handler(v *inspect.View, o Options) http.Handler {
	if o.Heartbeat <= 0 {
		o.Heartbeat = 15 * time.Second
	}
	h := &handler{v: v, o: o}
	mux := http.NewServeMux()
	for path, file := range map[string]string{"/": "assets/index.html", "/app.js": "assets/app.js", "/app.css": "assets/app.css", "/favicon.svg": "assets/favicon.svg"} {
		mux.HandleFunc("GET "+path, h.asset(path, file))
	}
	mux.HandleFunc("GET /api/agents", h.json(func(r *http.Request) (any, error) { return v.Agents(r.Context()) }))
	mux.HandleFunc("GET /api/log", h.json(h.log))
	mux.HandleFunc("GET /api/commit", h.json(h.commit))
	mux.HandleFunc("GET /api/diff", h.json(func(r *http.Request) (any, error) {
		q := r.URL.Query()
		ch, err := v.Diff(r.Context(), q.Get("agent"), q.Get("from"), q.Get("to"), true)
		if err != nil {
			return ch, err
		}
		return ch, v.DiffRows(r.Context(), ch)
	}))
	mux.HandleFunc("GET /api/value", h.json(h.value))
	mux.HandleFunc("GET /api/raw", h.raw)
	mux.HandleFunc("GET /api/blame", h.json(func(r *http.Request) (any, error) {
		q := r.URL.Query()
		return v.Blame(r.Context(), q.Get("agent"), q.Get("rev"), q.Get("key"))
	}))
	mux.HandleFunc("GET /api/tasks", h.json(func(r *http.Request) (any, error) {
		q := r.URL.Query()
		skip, _ := strconv.Atoi(q.Get("skip"))
		return v.Tasks(r.Context(), q.Get("agent"), inspect.TaskOptions{Rev: q.Get("rev"), Skip: max(skip, 0), Limit: limit(r, 50), Verify: true})
	}))
	mux.HandleFunc("GET /api/task", h.json(func(r *http.Request) (any, error) {
		q := r.URL.Query()
		return v.Task(r.Context(), q.Get("agent"), q.Get("id"), true)
	}))
	mux.HandleFunc("GET /api/keys", h.json(func(r *http.Request) (any, error) {
		q := r.URL.Query()
		es, more, err := v.List(r.Context(), q.Get("agent"), q.Get("rev"), q.Get("prefix"), 10000)
		return map[string]any{"entries": es, "more": more}, err
	}))
	mux.HandleFunc("GET /api/oplog", h.json(func(r *http.Request) (any, error) {
		before, err := number(r, "before")
		if err != nil {
			return nil, err
		}
		p, err := v.OplogBefore(r.Context(), r.URL.Query().Get("agent"), uint64(before), limit(r, 100))
		return p.Ops, err
	}))
	mux.HandleFunc("GET /api/receipts", h.json(func(r *http.Request) (any, error) {
		from, err := number(r, "from")
		if err != nil {
			return nil, err
		}
		return v.ReceiptsPage(r.Context(), r.URL.Query().Get("agent"), from, min(limit(r, 50), 1000), true)
	}))
	mux.HandleFunc("GET /api/snapshots", h.json(func(r *http.Request) (any, error) {
		return v.Snapshots(r.Context(), r.URL.Query().Get("agent"))
	}))
	mux.HandleFunc("GET /api/sql/tables", h.json(func(r *http.Request) (any, error) {
		q := r.URL.Query()
		t, err := v.SQLTables(r.Context(), q.Get("agent"), q.Get("rev"), q.Get("key"))
		return map[string]any{"tables": t}, err
	}))
	mux.HandleFunc("GET /api/sql/rows", h.json(h.sqlRows))
	mux.HandleFunc("GET /api/sql", h.json(h.sql))
	mux.HandleFunc("GET /api/events", h.events)
	return secure(mux)
}

type handler struct {
	v *inspect.View
	o Options
}

// secure sets the headers every answer carries: the page runs only its own
// script, is never framed, and nothing is sniffed.
func secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func (h *handler) asset(path, file string) http.HandlerFunc {
	types := map[string]string{"/": "text/html; charset=utf-8", "/app.js": "text/javascript; charset=utf-8", "/app.css": "text/css; charset=utf-8", "/favicon.svg": "image/svg+xml"}
	return func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		data, err := assets.ReadFile(file)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", types[path])
		w.Write(data)
	}
}

func status(err error) int {
	switch {
	case errors.Is(err, inspect.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, inspect.ErrBadRequest):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func (h *handler) json(fn func(r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		out, err := fn(r)
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(status(err))
			json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		json.NewEncoder(w).Encode(out)
	}
}

func limit(r *http.Request, def int) int {
	if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n > 0 {
		return min(n, 10000)
	}
	return def
}

// log is a page of history: limit commits (default 200) from rev, or from
// where cursor (the last page's "next") says; path, prefix and grep filter.
func (h *handler) log(r *http.Request) (any, error) {
	q := r.URL.Query()
	p, err := h.v.LogPage(r.Context(), q.Get("agent"), inspect.LogPageOptions{Rev: q.Get("rev"), Cursor: q.Get("cursor"),
		Path: q.Get("path"), Prefix: q.Get("prefix"), Grep: q.Get("grep"), Limit: limit(r, 200)})
	if err != nil {
		return nil, err
	}
	// What names the page's commits: HEAD, tags, other agents' HEADs.
	all, err := h.v.Decorations(r.Context(), q.Get("agent"))
	if err != nil {
		return nil, err
	}
	decorations := map[string]*inspect.Decoration{}
	for _, c := range p.Commits {
		if d := all[c.CID]; d != nil {
			decorations[c.CID.String()] = d
		}
	}
	// The page's documented shape has "forgotten": null when nothing was cut.
	return map[string]any{"head": p.Head, "commits": p.Commits, "forgotten": p.Forgotten, "next": p.Next, "scanned": p.Scanned, "decorations": decorations}, nil
}

// number is a query parameter that must be a number at least 0 when given.
func number(r *http.Request, name string) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: %s %q is not a number of 0 or more", inspect.ErrBadRequest, name, s)
	}
	return n, nil
}

func (h *handler) commit(r *http.Request) (any, error) {
	q := r.URL.Query()
	sh, err := h.v.Show(r.Context(), q.Get("agent"), q.Get("rev"), true)
	if err != nil {
		return sh, err
	}
	// A SQLite value's change by table, for the commit view's row tables.
	return sh, h.v.DiffRows(r.Context(), sh.Changes)
}

// value is a value's preview: text inlined up to MaxPreview, never bytes.
func (h *handler) value(r *http.Request) (any, error) {
	q := r.URL.Query()
	v, err := h.v.Get(r.Context(), q.Get("agent"), q.Get("rev"), q.Get("key"), MaxPreview)
	if err != nil {
		return nil, err
	}
	out := map[string]any{"key": v.Key, "commit": v.Commit, "cid": v.CID, "size": v.Size}
	switch {
	case v.Redacted != nil:
		out["redacted"] = v.Redacted
		out["omitted"] = v.Redacted.String()
	case v.Truncated:
		out["omitted"] = fmt.Sprintf("over %d bytes: not shown", MaxPreview)
	case v.Text:
		out["text"] = string(v.Data)
	default:
		out["omitted"] = "binary"
	}
	return out, nil
}

// raw sends a value's bytes as a download, never as a page. The value
// streams a chunk at a time whatever its size; a chunked value whose content
// does not match its file node ends the response short of its length (the
// connection is cut), so a client never takes it for a whole download.
func (h *handler) raw(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v, rd, err := h.v.Open(r.Context(), q.Get("agent"), q.Get("rev"), q.Get("key"))
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status(err))
		json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", `attachment; filename="value.bin"`)
	w.Header().Set("Content-Length", strconv.FormatUint(v.Size, 10))
	if _, err := objects.CopyValue(w, rd); err != nil {
		panic(http.ErrAbortHandler)
	}
}

// sqlRows is one page of a SQLite value's table (offset, limit: default 50).
func (h *handler) sqlRows(r *http.Request) (any, error) {
	q := r.URL.Query()
	offset := 0
	if s := q.Get("offset"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("%w: offset %q is not a number", inspect.ErrBadRequest, s)
		}
		offset = n
	}
	return h.v.SQLRows(r.Context(), q.Get("agent"), q.Get("rev"), q.Get("key"), q.Get("table"), offset, min(limit(r, 50), 1000))
}

// sql runs one read-only query (max_rows: default 100, at most 1000; a
// 5-second time limit).
func (h *handler) sql(r *http.Request) (any, error) {
	q := r.URL.Query()
	rows := 100
	if n, err := strconv.Atoi(q.Get("max_rows")); err == nil && n > 0 {
		rows = min(n, 1000)
	}
	return h.v.SQL(r.Context(), q.Get("agent"), q.Get("rev"), q.Get("key"), q.Get("query"), inspect.SQLLimits{MaxRows: rows, Timeout: 5 * time.Second})
}

// events sends "head" whenever any agent's HEAD moves, until the client goes.
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, ": agentstate\n\n")
	fl.Flush()
	beat := time.NewTicker(h.o.Heartbeat)
	defer beat.Stop()
	for {
		changed := h.v.R.Refs.Changed()
		select {
		case <-r.Context().Done():
			return
		case <-beat.C:
			fmt.Fprint(w, ": alive\n\n")
		case <-changed:
			fmt.Fprint(w, "event: head\ndata: {}\n\n")
		}
		fl.Flush()
	}
}
