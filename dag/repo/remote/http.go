package remote

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strconv"
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
// opened the address with ?token=: "agentstate_token_" and the port served,
// so that another service on the same host (cookies do not tell ports
// apart) is never sent it under a name it would read as its own, and two
// servers on one host do not overwrite each other's.
func CookieName(addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "agentstate_token"
	}
	return "agentstate_token_" + port
}

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
// the cookie and redirects to the same path on this origin without it. A
// request a browser may have made (an Origin header, the cookie, ?token=)
// must name this server in Host and come from its own origin (checkOrigin).
func (s *Server) authHTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		safe := r.Method == http.MethodGet || r.Method == http.MethodHead
		cookie := CookieName(s.TCPAddr())
		tok, fromQuery, browser := "", false, r.Header.Get("Origin") != ""
		if a := r.Header.Get("Authorization"); a != "" {
			scheme, t, ok := strings.Cut(a, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") {
				deny(w, "the Authorization header must be 'Bearer TOKEN'")
				return
			}
			tok = strings.TrimSpace(t)
		} else if q := r.URL.Query().Get("token"); q != "" && safe {
			tok, fromQuery, browser = q, true, true
		} else if c, err := r.Cookie(cookie); err == nil && safe {
			tok, browser = c.Value, true
		}
		if browser {
			if msg := s.checkOrigin(r); msg != "" {
				forbid(w, msg)
				return
			}
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
			http.SetCookie(w, &http.Cookie{Name: cookie, Value: tok, Path: "/", HttpOnly: true,
				SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
			q := r.URL.Query()
			q.Del("token")
			// The same path on this origin: never "//host/..." or "/\\host",
			// which a browser would take for another site.
			loc := "/" + strings.TrimLeft(r.URL.EscapedPath(), "/\\")
			if enc := q.Encode(); enc != "" {
				loc += "?" + enc
			}
			w.Header().Set("Referrer-Policy", "no-referrer")
			w.Header().Set("Location", loc)
			w.WriteHeader(http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithReadOnly(r.Context(), readOnly)))
	})
}

// checkOrigin checks what a browser sent (DNS rebinding: a page of another
// site whose name was made to resolve to this address): Host must be an
// address this server is reached at (an IP address, localhost, a name in
// Options.HTTPHosts, or any name with TLS, whose certificate binds it), and
// Origin, when present, this server's own origin. It returns why not, or "".
func (s *Server) checkOrigin(r *http.Request) string {
	host := r.Host
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.TrimPrefix(name, "["), "]")
	ok := s.opts.TLS != nil || net.ParseIP(name) != nil || strings.EqualFold(name, "localhost")
	for _, h := range s.opts.HTTPHosts {
		ok = ok || strings.EqualFold(name, h)
	}
	if !ok {
		return "Host " + strconv.Quote(host) + " is not an address this server answers at (serve --http-host NAME adds a name)"
	}
	if o := r.Header.Get("Origin"); o != "" {
		scheme := "http://"
		if r.TLS != nil {
			scheme = "https://"
		}
		if !strings.EqualFold(o, scheme+host) {
			return "a request from another origin (" + strconv.Quote(o) + ") is refused"
		}
	}
	return ""
}

func forbid(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusForbidden)
	w.Write([]byte("agentstate: " + msg + "\n"))
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
