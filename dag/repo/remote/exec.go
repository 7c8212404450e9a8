package remote

import (
	"context"
	"io"
	"os"
	"sync"

	"github.com/agentstate/agentstate/internal/rpcwire"
	"storj.io/drpc"
)

// Status says who holds the store.
func (s *Server) Status() *rpcwire.Status {
	return &rpcwire.Status{
		PID:     os.Getpid(),
		Holder:  s.opts.Holder,
		Since:   s.started.Unix(),
		Store:   s.r.Dir,
		Listen:  s.Addrs(),
		Exec:    s.opts.Exec != nil,
		Clients: int(s.clients.Load()),
	}
}

// exec runs one command line for a Unix-socket client: its output goes back
// as it is written, its stdin is asked for when the command reads.
func (s *Server) exec(ctx context.Context, st drpc.Stream) error {
	if s.opts.Exec == nil {
		return coded(rpcwire.CodeNoExec, "this server (%s) does not run command lines", s.opts.Holder)
	}
	var start rpcwire.ExecStart
	if err := st.MsgRecv(&start, rpcwire.Encoding); err != nil {
		if rpcwire.IsMalformed(err) {
			return coded(rpcwire.CodeBadRequest, "%v", err)
		}
		return err
	}
	if len(start.Args) == 0 || start.Dir == "" {
		return coded(rpcwire.CodeBadRequest, "a command line and a working directory are required")
	}
	var mu sync.Mutex // one message at a time on the stream
	send := func(m *rpcwire.ExecOut) error {
		mu.Lock()
		defer mu.Unlock()
		return st.MsgSend(m, rpcwire.Encoding)
	}
	stdout := &streamWriter{send: send, stream: 1}
	stderr := &streamWriter{send: send, stream: 2}
	stdin := &streamReader{st: st, send: send}
	code := s.opts.Exec(ctx, s.r, ExecRequest{Args: start.Args, Dir: start.Dir, Env: start.Env, StdoutTTY: start.StdoutTTY, Width: start.Width}, stdin, stdout, stderr)
	return send(&rpcwire.ExecOut{Done: true, Code: code})
}

// streamWriter sends a command's output; a write fails once the client is gone.
type streamWriter struct {
	send   func(*rpcwire.ExecOut) error
	stream int
}

func (w *streamWriter) Write(p []byte) (int, error) {
	for off := 0; off < len(p); {
		n := min(len(p)-off, 1<<20)
		if err := w.send(&rpcwire.ExecOut{Stream: w.stream, Data: p[off : off+n]}); err != nil {
			return off, err
		}
		off += n
	}
	return len(p), nil
}

// streamReader asks the client for stdin when the command reads it.
type streamReader struct {
	st   drpc.Stream
	send func(*rpcwire.ExecOut) error
	buf  []byte
	eof  bool
}

func (r *streamReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.eof {
			return 0, io.EOF
		}
		if err := r.send(&rpcwire.ExecOut{Want: max(len(p), 64<<10)}); err != nil {
			return 0, err
		}
		var in rpcwire.ExecIn
		if err := r.st.MsgRecv(&in, rpcwire.Encoding); err != nil {
			return 0, err
		}
		r.buf, r.eof = in.Data, in.EOF
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
