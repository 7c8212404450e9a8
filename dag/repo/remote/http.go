package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"storj.io/drpc/drpcmigrate"
)

// The TCP listener carries two protocols. A connection that begins with the
// eight bytes of Header is the repository API (drpc); any other is HTTP,
// served by Options.HTTP (the MCP endpoint and the page) behind the same
// tokens.
const Header = "DRPC!!!1"

// prefixTimeout bounds how long a new TCP connection (its TLS handshake
// included) may take to send its first eight bytes.
const prefixTimeout = 10 * time.Second

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

// serveTCP serves the API and HTTP on one TCP listener.
func (s *Server) serveTCP(ctx context.Context, l net.Listener) {
	mux := drpcmigrate.NewListenMux(&deadlineListener{Listener: &countingListener{Listener: l, n: &s.clients}}, len(Header))
	s.serve(ctx, &clearDeadlineListener{Listener: mux.Route(Header), addr: l.Addr()}, false, false)
	h := s.opts.HTTP
	if h == nil {
		h = http.NotFoundHandler()
	}
	hs := &http.Server{
		Handler:           s.authHTTP(h),
		ReadHeaderTimeout: prefixTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          nil,
	}
	s.mu.Lock()
	s.https = append(s.https, hs)
	s.tcp = l.Addr().String()
	s.mu.Unlock()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		mux.Run(ctx)
	}()
	go func() {
		defer s.wg.Done()
		hs.Serve(&clearDeadlineListener{Listener: mux.Default(), addr: l.Addr()})
	}()
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

// deadlineListener gives each new connection prefixTimeout to send the
// bytes that route it.
type deadlineListener struct{ net.Listener }

func (l *deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(prefixTimeout))
	return c, nil
}

// clearDeadlineListener lifts that deadline once a connection is routed;
// Addr reports the TCP address (the mux's listeners have none of their own).
type clearDeadlineListener struct {
	net.Listener
	addr net.Addr
}

func (l *clearDeadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		if errors.Is(err, drpcmigrate.Closed) {
			return nil, net.ErrClosed
		}
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

func (l *clearDeadlineListener) Addr() net.Addr { return l.addr }

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
