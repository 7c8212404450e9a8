package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentstate/agentstate/internal/rpcwire"
	"storj.io/drpc/drpcmetadata"
	"storj.io/drpc/drpcserver"
	"storj.io/drpc/drpcwire"
)

// Limits of a TCP listener (docs/service.md §4.2). Anyone who can reach the
// port reaches this code before any token is checked, so everything a
// connection may hold before it has shown a token is bounded: how many
// connections (per source address and in all), how long (authTimeout), and
// how many bytes (preAuthMax).
const (
	// DefaultMaxConns and DefaultMaxConnsPerHost bound a TCP listener's
	// open connections, API and HTTP together; a connection over either is
	// closed at once.
	DefaultMaxConns        = 1024
	DefaultMaxConnsPerHost = 128
	// preAuthMax bounds what an API connection may send before its token
	// is checked: the frames up to its first call's invoke, which hold only
	// the token and the call's name.
	preAuthMax = 16 << 10
)

// Timeouts of a TCP connection (variables for tests).
var (
	// authTimeout bounds a new connection's TLS handshake, its eight-byte
	// header and, on the API, its first call's authentication.
	authTimeout = 10 * time.Second
	// idleTimeout bounds an API connection's wait between calls, and a
	// call's wait for its request.
	idleTimeout = 2 * time.Minute
	// writeTimeout bounds each write to an API client that does not read.
	writeTimeout = 2 * time.Minute
)

// Accept-error backoff, as net/http's: 5ms doubling to 1s.
const (
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// temporaryAccept reports whether an accept error passes: the process or
// the system is out of descriptors or buffers for a moment, or a client
// gave up before it was accepted. The listener waits and accepts again.
func temporaryAccept(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ECONNABORTED, syscall.ENOBUFS, syscall.ENOMEM, syscall.EINTR, syscall.EAGAIN, syscall.ECONNRESET, syscall.EPROTO} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne interface{ Temporary() bool }
	return errors.As(err, &ne) && ne.Temporary()
}

// acceptLoop accepts on l until ctx ends or l is closed for good, handing
// each connection to handle. Temporary errors are waited out (backing off)
// and logged at most once a second: one "too many open files" must not end
// the listener.
func (s *Server) acceptLoop(ctx context.Context, l net.Listener, handle func(net.Conn)) {
	var delay time.Duration
	var logged time.Time
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			if !temporaryAccept(err) {
				s.logf("serve: %s: accept: %v; no longer listening", l.Addr(), err)
				return
			}
			if time.Since(logged) >= time.Second {
				s.logf("serve: %s: accept: %v; retrying", l.Addr(), err)
				logged = time.Now()
			}
			delay = min(max(2*delay, acceptBackoffMin), acceptBackoffMax)
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		delay = 0
		handle(c)
	}
}

func (s *Server) logf(format string, a ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, a...)
	}
}

// conns are a server's open connections: counted (Status.Clients), capped
// per source address and in all on TCP, and closed by Close.
type conns struct {
	mu      sync.Mutex
	open    map[*trackedConn]struct{}
	perHost map[string]int
	tcp     int
	refused atomic.Int64
	logged  time.Time
}

// track counts c; host is its source address on TCP ("" on the socket). It
// returns nil when a limit refuses it (c is then closed).
func (s *Server) track(c net.Conn, host string) *trackedConn {
	m := &s.conns
	m.mu.Lock()
	if host != "" {
		if m.tcp >= s.maxConns() || m.perHost[host] >= s.maxConnsPerHost() {
			log := time.Since(m.logged) >= time.Second
			if log {
				m.logged = time.Now()
			}
			total, fromHost := m.tcp, m.perHost[host]
			m.mu.Unlock()
			m.refused.Add(1)
			c.Close()
			if log {
				s.logf("serve: refusing connections: %d open, %d of them from %s (limits %d and %d per address)", total, fromHost, host, s.maxConns(), s.maxConnsPerHost())
			}
			return nil
		}
		m.tcp++
		if m.perHost == nil {
			m.perHost = map[string]int{}
		}
		m.perHost[host]++
	}
	tc := &trackedConn{Conn: c, s: s, host: host}
	if m.open == nil {
		m.open = map[*trackedConn]struct{}{}
	}
	m.open[tc] = struct{}{}
	m.mu.Unlock()
	s.clients.Add(1)
	return tc
}

func (s *Server) maxConns() int {
	if s.opts.MaxConns > 0 {
		return s.opts.MaxConns
	}
	return DefaultMaxConns
}

func (s *Server) maxConnsPerHost() int {
	if s.opts.MaxConnsPerHost > 0 {
		return s.opts.MaxConnsPerHost
	}
	return DefaultMaxConnsPerHost
}

// closeConns closes every open connection (Close).
func (s *Server) closeConns() {
	s.conns.mu.Lock()
	open := make([]*trackedConn, 0, len(s.conns.open))
	for c := range s.conns.open {
		open = append(open, c)
	}
	s.conns.mu.Unlock()
	for _, c := range open {
		c.Close()
	}
}

// Refused returns how many TCP connections the limits have refused.
func (s *Server) Refused() int64 { return s.conns.refused.Load() }

// trackedConn is a counted connection; closing it releases its count once.
type trackedConn struct {
	net.Conn
	s    *Server
	host string
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() {
		m := &c.s.conns
		m.mu.Lock()
		delete(m.open, c)
		if c.host != "" {
			m.tcp--
			if m.perHost[c.host]--; m.perHost[c.host] <= 0 {
				delete(m.perHost, c.host)
			}
		}
		m.mu.Unlock()
		c.s.clients.Add(-1)
	})
	return c.Conn.Close()
}

func hostOf(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	h, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return h
}

// serveUnix serves the API on the Unix socket: its mode is the access
// check, so there are no limits beyond the accept backoff.
func (s *Server) serveUnix(ctx context.Context, l net.Listener) {
	srv := s.drpcServer(true)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.acceptLoop(ctx, l, func(c net.Conn) {
			tc := s.track(c, "")
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer tc.Close()
				if err := srv.ServeOne(ctx, tc); err != nil {
					s.serveLog(err)
				}
			}()
		})
	}()
}

func (s *Server) drpcServer(local bool) *drpcserver.Server {
	return drpcserver.NewWithOptions(&handler{s: s, local: local}, drpcserver.Options{Manager: ManagerOptions()})
}

func (s *Server) serveLog(err error) {
	if !clientGone(err) && !isTimeout(err) {
		s.logf("serve: %v", err)
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// serveTCP serves the API and HTTP on one TCP listener. Each connection is
// counted against the limits, then given authTimeout for its TLS handshake
// and eight-byte header: Header routes it to the API, anything else to
// HTTP.
func (s *Server) serveTCP(ctx context.Context, l net.Listener, tlsConf *tls.Config) {
	api := s.drpcServer(false)
	httpL := &chanListener{addr: l.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}
	hs := s.httpServer(ctx)
	s.mu.Lock()
	s.lis = append(s.lis, l, httpL)
	s.addrs = append(s.addrs, l.Addr().String())
	s.https = append(s.https, hs)
	s.tcp = l.Addr().String()
	s.mu.Unlock()
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		hs.Serve(httpL)
	}()
	go func() {
		defer s.wg.Done()
		s.acceptLoop(ctx, l, func(c net.Conn) {
			tc := s.track(c, hostOf(c.RemoteAddr()))
			if tc == nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.route(ctx, tc, tlsConf, api, httpL)
			}()
		})
	}()
}

// route reads a new TCP connection's header and hands it on.
func (s *Server) route(ctx context.Context, tc *trackedConn, tlsConf *tls.Config, api *drpcserver.Server, httpL *chanListener) {
	var c net.Conn = tc
	c.SetDeadline(time.Now().Add(authTimeout))
	if tlsConf != nil {
		c = tls.Server(c, tlsConf)
	}
	var head [len(Header)]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		c.Close()
		return
	}
	if string(head[:]) != Header {
		c.SetDeadline(time.Time{}) // the HTTP server keeps its own
		select {
		case httpL.conns <- &writeConn{Conn: &prefixConn{Conn: c, prefix: head[:]}}:
		case <-httpL.done:
			c.Close()
		case <-ctx.Done():
			c.Close()
		}
		return
	}
	defer c.Close()
	pre, tok, err := readInvoke(c)
	if err != nil {
		return // not drpc, or more than preAuthMax before the token
	}
	if h := (&handler{s: s}); h.access(tok) == AccessNone {
		refuseInvoke(c, pre, tok)
		return
	}
	c.SetDeadline(time.Time{})
	ic := &idleConn{Conn: &prefixConn{Conn: c, prefix: pre.buf}}
	ic.idle() // until the first call begins
	if err := api.ServeOne(withConn(ctx, ic), ic); err != nil {
		s.serveLog(err)
	}
}

// preAuth is what readInvoke read: every byte (replayed to drpc) and where
// the first call's invoke is.
type preAuth struct {
	buf    []byte
	stream uint64 // the invoke's stream
}

var errPreAuth = errors.New("remote: too much before the token")

// readInvoke reads a new API connection's frames up to its first call's
// invoke (drpc sends the invoke's metadata, the token, before it), at most
// preAuthMax bytes of them, and returns the token. A frame announcing more
// than preAuthMax is refused before it is read.
func readInvoke(c net.Conn) (*preAuth, string, error) {
	buf := make([]byte, 0, 1024)
	var meta []byte
	off := 0
	for {
		// Parse the frames read so far.
		for {
			rem := buf[off:]
			if len(rem) < 1 {
				break
			}
			control := rem[0]
			r, stream, ok, err := drpcwire.ReadVarint(rem[1:])
			if err != nil {
				return nil, "", err
			}
			if !ok {
				break
			}
			r, _, ok, err = drpcwire.ReadVarint(r)
			if err != nil {
				return nil, "", err
			}
			if !ok {
				break
			}
			r, n, ok, err := drpcwire.ReadVarint(r)
			if err != nil {
				return nil, "", err
			}
			if !ok {
				break
			}
			if n > preAuthMax {
				return nil, "", errPreAuth
			}
			if uint64(len(r)) < n {
				break
			}
			data := r[:n]
			off = len(buf) - len(r) + int(n)
			kind := drpcwire.Kind((control & 0b01111110) >> 1)
			switch kind {
			case drpcwire.KindInvokeMetadata:
				meta = append(meta, data...)
			case drpcwire.KindInvoke:
				if control&1 == 1 {
					md, err := drpcmetadata.Decode(meta)
					if err != nil {
						md = nil
					}
					return &preAuth{buf: buf, stream: stream}, md[rpcwire.Token], nil
				}
			}
		}
		if off > preAuthMax || len(buf) >= preAuthMax+64 {
			return nil, "", errPreAuth
		}
		if cap(buf)-len(buf) < 512 {
			nb := make([]byte, len(buf), min(2*cap(buf), preAuthMax+64))
			copy(nb, buf)
			buf = nb
		}
		n, err := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil && n == 0 {
			return nil, "", err
		}
	}
}

// refuseInvoke answers a first call without a known token with drpc's
// error (code 102) and lets the client read it before the connection
// closes: half-closed, and at most preAuthMax more bytes read.
func refuseInvoke(c net.Conn, pre *preAuth, tok string) {
	err := unauthorized(tok)
	fr := drpcwire.AppendFrame(nil, drpcwire.Frame{
		Data: drpcwire.MarshalError(err),
		ID:   drpcwire.ID{Stream: pre.stream, Message: 1},
		Kind: drpcwire.KindError,
		Done: true,
	})
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write(fr); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, preAuthMax))
}

// idleConn is an authenticated API connection: between calls it has
// idleTimeout to begin the next, and each write has writeTimeout to reach
// a client that does not read.
type idleConn struct {
	net.Conn
	lastWrite atomic.Int64 // UnixNano of the last write deadline set
}

// idle starts the wait for the next call (or a call's request).
func (c *idleConn) idle() { c.Conn.SetReadDeadline(time.Now().Add(idleTimeout)) }

// busy lifts it while a call runs: the client may rightly send nothing
// more (a stream that follows HEAD for hours).
func (c *idleConn) busy() { c.Conn.SetReadDeadline(time.Time{}) }

func (c *idleConn) Write(p []byte) (int, error) {
	now := time.Now()
	if now.UnixNano()-c.lastWrite.Load() > int64(time.Second) {
		c.Conn.SetWriteDeadline(now.Add(writeTimeout))
		c.lastWrite.Store(now.UnixNano())
	}
	return c.Conn.Write(p)
}

type connKey struct{}

func withConn(ctx context.Context, c *idleConn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

func connOf(ctx context.Context) *idleConn {
	c, _ := ctx.Value(connKey{}).(*idleConn)
	return c
}

// prefixConn replays the bytes already read from a connection.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// chanListener hands routed connections to the HTTP server.
type chanListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }
