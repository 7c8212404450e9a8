package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// A fake MCP endpoint: every POST without a session header makes a new one.
type fakeEndpoint struct{ n int }

func (f *fakeEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(sessionHeader) == "" {
		f.n++
		w.Header().Set(sessionHeader, "s"+strconv.Itoa(f.n))
	}
	w.WriteHeader(http.StatusOK)
}

// Sessions are capped, and one idle past the timeout no longer counts.
func TestSessionCap(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c := capSessions(&fakeEndpoint{}, 3, time.Minute)
	c.now = func() time.Time { return now }
	do := func(method, id string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/mcp", nil)
		if id != "" {
			r.Header.Set(sessionHeader, id)
		}
		w := httptest.NewRecorder()
		c.ServeHTTP(w, r)
		return w
	}
	for i := 1; i <= 3; i++ {
		if w := do("POST", ""); w.Code != 200 || w.Header().Get(sessionHeader) != "s"+strconv.Itoa(i) {
			t.Fatalf("session %d: %d %q", i, w.Code, w.Header().Get(sessionHeader))
		}
	}
	if w := do("POST", ""); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("a fourth session: %d, want 503", w.Code)
	}
	if w := do("POST", "s1"); w.Code != 200 {
		t.Fatalf("a live session's request: %d", w.Code)
	}
	do("DELETE", "s2") // ended by its client
	if w := do("POST", ""); w.Code != 200 {
		t.Fatalf("a session after one ended: %d", w.Code)
	}
	if w := do("POST", ""); w.Code != http.StatusServiceUnavailable {
		t.Fatalf("over the cap again: %d", w.Code)
	}
	now = now.Add(2 * time.Minute) // every session idles out
	for i := 0; i < 3; i++ {
		if w := do("POST", ""); w.Code != 200 {
			t.Fatalf("after the idle timeout: %d", w.Code)
		}
	}
}

// The endpoint Handler serves is capped and its sessions expire.
func TestHandlerSessionOptions(t *testing.T) {
	h, ok := Handler(nil, func(*http.Request) bool { return true }, Options{}).(*sessionCap)
	if !ok || h.max != MaxSessions || h.timeout != SessionTimeout || SessionTimeout <= 0 {
		t.Fatalf("Handler is not capped: %T", h)
	}
}
