// Package remote serves an open repository to other processes and reaches a
// served one: the process that holds a store (agentstate serve, or a
// runtime) serves it on a Unix socket inside the store directory, and
// optionally on TCP with bearer tokens and TLS; everything else goes through
// that process.
//
// The API is the repository's storage (dag/repo.Storage) one call for one,
// so a Go program uses a served store exactly as a local one:
//
//	c, err := remote.Dial(ctx, remote.SocketPath(dir), remote.DialOptions{})
//	r := repo.New(c) // every repo operation, through the server
//
// Writes follow the same compare-and-swap rule as in-process writers: blocks
// first, then one SwapHead that fails with refs.ErrSwapped when another
// writer moved HEAD first. A Unix-socket client can also ask the server to
// run a whole command line in-process (Exec), which is how the agentstate
// command stays fast against a served store.
//
// Transport and encoding are internal/rpcwire's: drpc streams carrying CBOR
// messages. docs/service.md describes them.
package remote

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/rpcwire"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"storj.io/drpc"
	"storj.io/drpc/drpccache"
	"storj.io/drpc/drpcerr"
	"storj.io/drpc/drpcmanager"
	"storj.io/drpc/drpcmetadata"
	"storj.io/drpc/drpcwire"
)

// SocketPath is where the server of the store in dir listens.
func SocketPath(dir string) string { return filepath.Join(dir, rpcwire.SocketName) }

// ExecFunc runs one command line against the served repository, with the
// client's working directory and environment, and returns its exit code.
type ExecFunc func(ctx context.Context, r *repo.Repo, req ExecRequest, stdin io.Reader, stdout, stderr io.Writer) int

// ExecRequest is a client's command line and surroundings.
type ExecRequest struct {
	Args      []string
	Dir       string   // the client's working directory
	Env       []string // KEY=VALUE
	StdoutTTY bool
	Width     int
}

// Options configure a server.
type Options struct {
	// Holder names the holding process in 'agentstate status' ("agentstate
	// serve", "runtime").
	Holder string
	// Exec, if set, lets Unix-socket clients run command lines in this
	// process. Never offered on TCP: a command reads and writes the files it
	// names.
	Exec ExecFunc
	// Admit, if set, is called before each command line runs (Exec), and
	// before the first call of every other connection (a command that
	// goes through the repository API from its own process, a remote
	// program), and may make it wait: a holder uses it to pace commands
	// while it is busy (the runtime, while tasks land). An error refuses the
	// command (the client's context ended while it waited).
	Admit func(ctx context.Context) error
	// Listen is an optional TCP address. A TCP client must present one of
	// the tokens; ReadTokens allow only reads.
	Listen     string
	Tokens     []string
	ReadTokens []string
	TLS        *tls.Config // nil: plain TCP
	NoSocket   bool        // do not listen on the Unix socket (tests)
	// HTTP serves the HTTP requests that reach the TCP listener (the MCP
	// endpoint, the page), once their token is checked; ReadOnlyRequest
	// tells a handler which kind of token it was.
	HTTP http.Handler
	// HTTPHosts are host names (beside IP addresses and localhost) a
	// browser may reach the HTTP server by without TLS; any other Host is
	// refused on a browser's request (DNS rebinding).
	HTTPHosts []string
	// MaxConns and MaxConnsPerHost bound the TCP listener's open
	// connections, in all and per source address (zero:
	// DefaultMaxConns, DefaultMaxConnsPerHost).
	MaxConns, MaxConnsPerHost int
	Logf                      func(format string, args ...any)
}

// Server serves one repository.
type Server struct {
	r       *repo.Repo
	opts    Options
	started time.Time
	clients atomic.Int64

	mu     sync.Mutex
	lis    []net.Listener
	https  []*http.Server
	tcp    string
	addrs  []string
	cancel context.CancelFunc
	wg     sync.WaitGroup
	sock   string
	conns  conns
}

// Start serves r on the Unix socket in r.Dir (and opts.Listen). The caller
// must hold the store (repo.Open took its lock): any socket file already
// there is then a dead server's, and is replaced.
func Start(r *repo.Repo, opts Options) (*Server, error) {
	if r.Dir == "" && !opts.NoSocket {
		return nil, errors.New("remote: a store in memory has no socket; set Listen and NoSocket")
	}
	if opts.Listen != "" && len(opts.Tokens)+len(opts.ReadTokens) == 0 {
		return nil, errors.New("remote: a TCP listener needs at least one token")
	}
	s := &Server{r: r, opts: opts, started: time.Now()}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	if !opts.NoSocket {
		p := SocketPath(r.Dir)
		os.Remove(p) // a dead server's: we hold the store
		l, err := listenUnix(p)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("remote: listening on %s: %w", p, err)
		}
		s.sock = p
		s.mu.Lock()
		s.lis = append(s.lis, l)
		s.addrs = append(s.addrs, p)
		s.mu.Unlock()
		s.serveUnix(ctx, l)
	}
	if opts.Listen != "" {
		l, err := net.Listen("tcp", opts.Listen)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("remote: listening on %s: %w", opts.Listen, err)
		}
		s.serveTCP(ctx, l, opts.TLS)
	}
	return s, nil
}

// listenUnix listens on p with mode 0600 from the first instant: the umask
// is not the process's to change, so the socket is made in a private
// directory and renamed into place.
func listenUnix(p string) (net.Listener, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(p), ".sock-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o700); err != nil {
		return nil, err
	}
	tp := filepath.Join(tmp, "s")
	addr, release, err := rpcwire.SocketAddr(tp)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("unix", addr)
	release()
	if err != nil {
		return nil, err
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false)
	if err := os.Chmod(tp, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	if err := os.Rename(tp, p); err != nil {
		l.Close()
		return nil, err
	}
	return &unlinkListener{Listener: l, path: p}, nil
}

type unlinkListener struct {
	net.Listener
	path string
	once sync.Once
}

func (l *unlinkListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { os.Remove(l.path) })
	return err
}

// Addrs returns the addresses served (the socket path first).
func (s *Server) Addrs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.addrs...)
}

// clientGone reports whether err only says that a client went away: it
// closed its connection (the agentstate command exits as soon as it has its
// exit code, whatever the server still sends), or was killed or interrupted
// in the middle. That is not news.
func clientGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, context.Canceled) || strings.Contains(err.Error(), "EOF")
}

// ManagerOptions are drpc's connection options on both ends: messages are
// bounded by rpcwire.MaxMessage.
func ManagerOptions() drpcmanager.Options {
	return drpcmanager.Options{Reader: drpcwire.ReaderOptions{MaximumBufferSize: rpcwire.MaxMessage}}
}

// Close stops listening, ends every connection and waits for the handlers.
// The socket file is removed.
func (s *Server) Close() error {
	s.cancel()
	s.mu.Lock()
	for _, l := range s.lis {
		l.Close()
	}
	for _, hs := range s.https {
		hs.Close()
	}
	s.mu.Unlock()
	s.closeConns()
	s.wg.Wait()
	return nil
}

// handler answers the RPCs of one listener.
type handler struct {
	s     *Server
	local bool // the Unix socket: its mode is the access check
}

func coded(code uint64, format string, a ...any) error {
	return drpcerr.WithCode(fmt.Errorf(format, a...), code)
}

// Access is what a caller may do.
type Access int

const (
	AccessNone  Access = iota // no token, or an unknown one
	AccessRead                // a read-only token: reads only
	AccessWrite               // a token: reads and writes
	// AccessOwner is the store's owner, on the Unix socket (its mode is the
	// check): everything, including what only an operator may change
	// (trusted keys).
	AccessOwner
)

// String names the access as Status reports it.
func (a Access) String() string {
	switch a {
	case AccessRead:
		return "read"
	case AccessWrite:
		return "write"
	case AccessOwner:
		return "owner"
	}
	return "none"
}

// access is what a caller presenting tok may do.
func (h *handler) access(tok string) Access {
	switch {
	case h.local:
		return AccessOwner
	case tok == "":
		return AccessNone
	case match(tok, h.s.opts.Tokens):
		return AccessWrite
	case match(tok, h.s.opts.ReadTokens):
		return AccessRead
	}
	return AccessNone
}

func unauthorized(tok string) error {
	if tok == "" {
		return coded(rpcwire.CodeUnauthorized, "a token is required")
	}
	return coded(rpcwire.CodeUnauthorized, "wrong token")
}

// authorize checks a caller's token against the RPC and returns its access.
func (h *handler) authorize(ctx context.Context, rpc string) (Access, error) {
	if rpc == rpcwire.RPCExec && !h.local {
		return AccessNone, coded(rpcwire.CodeNoExec, "command lines run only over the Unix socket")
	}
	md, _ := drpcmetadata.Get(ctx)
	tok := md[rpcwire.Token]
	a := h.access(tok)
	switch {
	case a == AccessNone:
		return a, unauthorized(tok)
	case a == AccessRead && rpcwire.Writes[rpc]:
		return a, coded(rpcwire.CodeReadOnly, "this token may only read")
	case a != AccessOwner && rpcwire.OperatorOnly[rpc]:
		return a, coded(rpcwire.CodeReadOnly, "only the store's operator (over the Unix socket) may change the keys it trusts")
	}
	return a, nil
}

type accessKey2 struct{}

// accessOf is the access of the call whose context ctx is.
func accessOf(ctx context.Context) Access {
	a, _ := ctx.Value(accessKey2{}).(Access)
	return a
}

func match(tok string, set []string) bool {
	ok := 0
	for _, t := range set {
		ok |= subtle.ConstantTimeCompare([]byte(tok), []byte(t))
	}
	return ok == 1
}

// HandleRPC is drpc's entry point: one call or stream.
func (h *handler) HandleRPC(st drpc.Stream, rpc string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("internal error serving %s: %v", rpc, r)
		}
	}()
	ctx := st.Context()
	a, err := h.authorize(ctx, rpc)
	if err != nil {
		return err
	}
	ctx = context.WithValue(ctx, accessKey2{}, a)
	if rpc == rpcwire.RPCExec {
		return h.s.exec(ctx, st)
	}
	if _, ok := calls[rpc]; !ok {
		return coded(rpcwire.CodeUnknown, "unknown call %q", rpc)
	}
	if err := h.s.admitConnection(ctx); err != nil {
		return err
	}
	// On TCP: idleTimeout for the request, then none while the call runs
	// (a stream may rightly hear nothing more from its client), then
	// idleTimeout again until the next call.
	if c := connOf(ctx); c != nil {
		c.idle()
		defer c.idle()
	}
	var req rpcwire.Req
	if err := st.MsgRecv(&req, rpcwire.Encoding); err != nil {
		if rpcwire.IsMalformed(err) {
			return coded(rpcwire.CodeBadRequest, "%v", err)
		}
		return err
	}
	if c := connOf(ctx); c != nil {
		c.busy()
	}
	send := func(m *rpcwire.Resp) error { return st.MsgSend(m, rpcwire.Encoding) }
	if err := calls[rpc](ctx, h.s, &req, send); err != nil {
		return wireError(err)
	}
	return nil
}

// admitted marks a connection Admit let through (in drpc's per-connection
// cache).
type admitted struct{}

// admitConnection calls Admit for a connection's first call: a client's
// connection is one command, however many calls it makes.
func (s *Server) admitConnection(ctx context.Context) error {
	if s.opts.Admit == nil {
		return nil
	}
	conn := drpccache.FromContext(ctx)
	if conn != nil && conn.Load(admitted{}) != nil {
		return nil
	}
	if err := s.opts.Admit(ctx); err != nil {
		return err
	}
	if conn != nil {
		conn.Store(admitted{}, true)
	}
	return nil
}

// wireError gives err the code a client maps back to a sentinel.
func wireError(err error) error {
	var code uint64
	switch {
	case drpcerr.Code(err) != 0:
		return err
	case errors.Is(err, objects.ErrNotFound):
		code = rpcwire.CodeNotFound
	case errors.Is(err, objects.ErrHashMismatch):
		code = rpcwire.CodeCorrupt
	case errors.Is(err, refs.ErrSwapped):
		code = rpcwire.CodeSwapped
	case errors.Is(err, repo.ErrDiskFull):
		code = rpcwire.CodeDiskFull
	case errors.Is(err, repo.ErrBadLanding):
		code = rpcwire.CodeBadLanding
	case errors.Is(err, repo.ErrTagExists):
		code = rpcwire.CodeTagExists
	case errors.Is(err, refs.ErrNothingUndo):
		code = rpcwire.CodeNothingUndo
	case errors.Is(err, refs.ErrNothingRedo):
		code = rpcwire.CodeNothingRedo
	case errors.Is(err, repo.ErrHorizon):
		code = rpcwire.CodeHorizon
	case errors.Is(err, refs.ErrNoAgent):
		code = rpcwire.CodeNoAgent
	case errors.Is(err, errBadRequest):
		code = rpcwire.CodeBadRequest
	}
	return drpcerr.WithCode(err, code)
}

var errBadRequest = errors.New("bad request")

func badRequest(format string, a ...any) error {
	return fmt.Errorf("%w: %s", errBadRequest, fmt.Sprintf(format, a...))
}
