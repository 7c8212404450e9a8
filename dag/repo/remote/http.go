package remote

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// The TCP listener carries two protocols. A connection that begins with the
// eight bytes of Header is the repository API (drpc); any other is HTTP,
// served by Options.HTTP (the MCP endpoint and the page) behind the same
// tokens.
const Header = "DRPC!!!1"

// CookieName is the cookie that carries a browser's token once it has
// opened the address with ?token=.
const CookieName = "agentstate_token"

type accessKey struct{}

// ReadOnlyRequest reports whether an HTTP request reached the handler with a
// read-only token. Handlers must offer such a request reads only.
func ReadOnlyRequest(r *http.Request) bool {
	ro, _ := r.Context().Value(accessKey{}).(bool)
	return ro
}

// WithReadOnly marks a request's context as read-only or not, as the server
// does after checking its token (for tests of handlers served elsewhere).
func WithReadOnly(ctx context.Context, readOnly bool) context.Context {
	return context.WithValue(ctx, accessKey{}, readOnly)
}

// httpServer is the HTTP server of a TCP listener, behind its tokens.
func (s *Server) httpServer(ctx context.Context) *http.Server {
	h := s.opts.HTTP
	if h == nil {
		h = http.NotFoundHandler()
	}
	return &http.Server{
		Handler:           s.authHTTP(h),
		ReadHeaderTimeout: authTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    16 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          nil,
	}
}

// authHTTP admits a request that carries a token: "Authorization: Bearer
// TOKEN" on any request; the cookie only on GET and HEAD (so that another
// site cannot make a browser write with it); "?token=" on a GET, which sets
// the cookie and redirects to the same address without it.
func (s *Server) authHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		safe := r.Method == http.MethodGet || r.Method == http.MethodHead
		tok, fromQuery := "", false
		if a := r.Header.Get("Authorization"); a != "" {
			scheme, t, ok := strings.Cut(a, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") {
				deny(w, "the Authorization header must be 'Bearer TOKEN'")
				return
			}
			tok = strings.TrimSpace(t)
		} else if q := r.URL.Query().Get("token"); q != "" && safe {
			tok, fromQuery = q, true
		} else if c, err := r.Cookie(CookieName); err == nil && safe {
			tok = c.Value
		}
		if tok == "" {
			deny(w, "a token is required: open the address 'agentstate serve' printed (it ends in ?token=...), or send 'Authorization: Bearer TOKEN'")
			return
		}
		var readOnly bool
		switch {
		case match(tok, s.opts.Tokens):
		case match(tok, s.opts.ReadTokens):
			readOnly = true
		default:
			deny(w, "wrong token")
			return
		}
		if fromQuery {
			http.SetCookie(w, &http.Cookie{Name: CookieName, Value: tok, Path: "/", HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			u := *r.URL
			q := u.Query()
			q.Del("token")
			u.RawQuery = q.Encode()
			w.Header().Set("Referrer-Policy", "no-referrer")
			http.Redirect(w, r, (&url.URL{Path: u.Path, RawQuery: u.RawQuery}).String(), http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithReadOnly(r.Context(), readOnly)))
	})
}

func deny(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="agentstate"`)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusUnauthorized)
	w.Write([]byte("agentstate: " + msg + "\n"))
}

// URL is the HTTP address of a TCP listener addr ("" when there is none).
func URL(addr string, tlsConf *tls.Config) string {
	if addr == "" {
		return ""
	}
	scheme := "http"
	if tlsConf != nil {
		scheme = "https"
	}
	return scheme + "://" + addr + "/"
}

// TCPAddr is the TCP address served (its port chosen when Listen asked for
// port 0), or "" when there is none.
func (s *Server) TCPAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tcp
}

// writeConn is an HTTP connection whose every write has writeTimeout to go
// out: a response that keeps moving (a large download to a slow client, an
// event stream) lasts as long as it needs, and one to a client that has
// stopped reading ends, its handler's writes failing. (net/http's own
// WriteTimeout is one deadline for a whole response, which would cut long
// downloads and event streams.)
type writeConn struct {
	net.Conn
	last atomic.Int64 // UnixNano of the last write deadline set
}

func (c *writeConn) Write(p []byte) (int, error) {
	now := time.Now()
	if now.UnixNano()-c.last.Load() > int64(writeTimeout/8) {
		c.Conn.SetWriteDeadline(now.Add(writeTimeout))
		c.last.Store(now.UnixNano())
	}
	return c.Conn.Write(p)
}
