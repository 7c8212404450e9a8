package mcpserver

import (
	"net/http"
	"sync"
	"time"
)

// Sessions of the streamable HTTP endpoint: each initialize makes one,
// which holds memory in the server until it ends. A session idle for
// SessionTimeout is closed (its client initializes again), and at most
// MaxSessions live at once: an initialize beyond that is refused with 503
// until one ends.
const (
	SessionTimeout = 30 * time.Minute
	MaxSessions    = 256
)

// sessionHeader is the MCP session header (streamable HTTP transport).
const sessionHeader = "Mcp-Session-Id"

// sessionCap refuses new sessions while max live ones exist. It follows
// them by the session header: created when an answer carries a new one,
// used by each request that names one, gone when deleted or idle for
// timeout (when the SDK closes them too).
type sessionCap struct {
	next    http.Handler
	max     int
	timeout time.Duration
	now     func() time.Time

	mu   sync.Mutex
	live map[string]time.Time // session id → last request
}

func capSessions(next http.Handler, max int, timeout time.Duration) *sessionCap {
	return &sessionCap{next: next, max: max, timeout: timeout, now: time.Now, live: map[string]time.Time{}}
}

func (c *sessionCap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := c.now()
	id := r.Header.Get(sessionHeader)
	c.mu.Lock()
	for k, t := range c.live {
		if now.Sub(t) > c.timeout {
			delete(c.live, k)
		}
	}
	if id != "" {
		if _, ok := c.live[id]; ok {
			c.live[id] = now
			if r.Method == http.MethodDelete {
				delete(c.live, id)
			}
		}
	} else if r.Method == http.MethodPost && len(c.live) >= c.max {
		c.mu.Unlock()
		w.Header().Set("Retry-After", "60")
		http.Error(w, "agentstate: too many MCP sessions; one must end (or idle out) first", http.StatusServiceUnavailable)
		return
	}
	c.mu.Unlock()
	c.next.ServeHTTP(&sessionWriter{ResponseWriter: w, c: c, had: id}, r)
	if id != "" && r.Method != http.MethodDelete { // idle from the end of its last request
		c.mu.Lock()
		if _, ok := c.live[id]; ok {
			c.live[id] = c.now()
		}
		c.mu.Unlock()
	}
}

// sessionWriter notes a session the answer creates.
type sessionWriter struct {
	http.ResponseWriter
	c     *sessionCap
	had   string
	noted bool
}

func (w *sessionWriter) note() {
	if w.noted {
		return
	}
	w.noted = true
	if id := w.Header().Get(sessionHeader); id != "" && id != w.had {
		w.c.mu.Lock()
		w.c.live[id] = w.c.now()
		w.c.mu.Unlock()
	}
}

func (w *sessionWriter) WriteHeader(code int) {
	w.note()
	w.ResponseWriter.WriteHeader(code)
}

func (w *sessionWriter) Write(p []byte) (int, error) {
	w.note()
	return w.ResponseWriter.Write(p)
}

func (w *sessionWriter) Flush() {
	w.note()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *sessionWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
