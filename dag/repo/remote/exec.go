package remote

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"time"

	"github.com/agentstate/agentstate/internal/rpcwire"
	"storj.io/drpc"
	"storj.io/drpc/drpcwire"
)

// Status says who holds a served store.
type Status struct {
	PID     int      // the holding process
	Holder  string   // what holds it: "agentstate serve", "runtime", ...
	Since   int64    // when it started serving, Unix seconds
	Store   string   // the store directory
	Listen  []string // the addresses it answers at
	Exec    bool     // it runs command lines for its Unix-socket clients
	Clients int      // connections open now
	Version string   // the holder's version, when it says
	// Access is what the asking connection may do: "owner" (the Unix
	// socket), "write" or "read" (a TCP token's kind). Server.Status leaves
	// it empty.
	Access string
}

func (st *Status) wire() *rpcwire.Status {
	return &rpcwire.Status{PID: st.PID, Holder: st.Holder, Since: st.Since, Store: st.Store, Listen: st.Listen,
		Exec: st.Exec, Clients: st.Clients, Version: st.Version, Access: st.Access}
}

func statusFromWire(w *rpcwire.Status) *Status {
	return &Status{PID: w.PID, Holder: w.Holder, Since: w.Since, Store: w.Store, Listen: w.Listen,
		Exec: w.Exec, Clients: w.Clients, Version: w.Version, Access: w.Access}
}

// Status says who holds the store.
func (s *Server) Status() *Status {
	return &Status{
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
	if s.opts.Admit != nil {
		if err := s.opts.Admit(ctx); err != nil {
			return err
		}
	}
	var mu sync.Mutex // one message at a time on the stream
	held := false     // the output left at the end waits for the exit code
	send := func(m *rpcwire.ExecOut) error {
		mu.Lock()
		defer mu.Unlock()
		if rw, ok := st.(rawWriter); ok && held && !m.Done {
			b, err := rpcwire.Encoding.Marshal(m)
			if err != nil {
				return err
			}
			return rw.RawWrite(drpcwire.KindMessage, b) // sent with the next message
		}
		return st.MsgSend(m, rpcwire.Encoding)
	}
	stdout := newBatchWriter(&streamWriter{send: send, stream: 1})
	if start.StdoutTTY {
		stdout.pager = func(cmd string) error { return send(&rpcwire.ExecOut{Pager: cmd}) }
	}
	stderr := newBatchWriter(&streamWriter{send: send, stream: 2})
	stdin := &streamReader{st: st, send: send, before: func() { stdout.Flush(); stderr.Flush() }}
	code := s.opts.Exec(ctx, s.r, ExecRequest{Args: start.Args, Dir: start.Dir, Env: start.Env, StdoutTTY: start.StdoutTTY, Width: start.Width}, stdin, stdout, stderr)
	if stdin.n >= bigStdin {
		// A large put passed through: its buffers are garbage now, and a
		// long-lived server gives their memory back at once rather than
		// when the runtime's scavenger gets to it, with the pages of the
		// store's files it touched.
		debug.FreeOSMemory()
		if sh, ok := s.r.Storage.(interface{ ShedResident() }); ok {
			sh.ShedResident()
		}
	}
	// The last output and the exit code leave in one write: the client
	// wakes once.
	mu.Lock()
	held = true
	mu.Unlock()
	stdout.Flush()
	stderr.Flush()
	return send(&rpcwire.ExecOut{Done: true, Code: code})
}

// rawWriter is drpc's stream writing a message without sending it yet.
type rawWriter interface {
	RawWrite(kind drpcwire.Kind, data []byte) error
}

// batchWriter gathers a command's many small writes (a log prints a line at
// a time) into few messages: it sends when 64 KiB are waiting, when a write
// has waited flushDelay (so output that trickles, like log --follow, still
// arrives at once to the eye), and at the end.
type batchWriter struct {
	mu    sync.Mutex
	w     io.Writer
	buf   []byte
	timer *time.Timer
	err   error
	pager func(cmd string) error // asks the client to run a pager (stdout on a terminal only)
}

// StartPager asks the client to run the shell command line cmd as its pager
// for the rest of the command's stdout (ExecOut.Pager); it fails when the
// client's stdout is not a terminal. A served command's stdout implements
// it (internal/cli's paging).
func (b *batchWriter) StartPager(cmd string) error {
	if b.pager == nil {
		return errors.New("the client's output is not a terminal")
	}
	if err := b.Flush(); err != nil {
		return err
	}
	return b.pager(cmd)
}

const flushDelay = 5 * time.Millisecond

func newBatchWriter(w io.Writer) *batchWriter { return &batchWriter{w: w} }

func (b *batchWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	b.buf = append(b.buf, p...)
	if len(b.buf) >= 64<<10 {
		return len(p), b.flushLocked()
	}
	if b.timer == nil {
		b.timer = time.AfterFunc(flushDelay, func() { b.Flush() })
	}
	return len(p), nil
}

// Flush sends what is waiting.
func (b *batchWriter) Flush() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.flushLocked()
}

func (b *batchWriter) flushLocked() error {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if len(b.buf) == 0 || b.err != nil {
		return b.err
	}
	_, b.err = b.w.Write(b.buf)
	b.buf = b.buf[:0]
	return b.err
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
	st     drpc.Stream
	send   func(*rpcwire.ExecOut) error
	before func() // flushes output before the client is asked for input
	buf    []byte
	eof    bool
	n      int64 // bytes received
}

// bigStdin is the stdin after which a command's memory is given back.
const bigStdin = 64 << 20

func (r *streamReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.eof {
			return 0, io.EOF
		}
		r.before()
		if err := r.send(&rpcwire.ExecOut{Want: min(max(len(p), 64<<10), 1<<20)}); err != nil {
			return 0, err
		}
		var in rpcwire.ExecIn
		if err := r.st.MsgRecv(&in, rpcwire.Encoding); err != nil {
			return 0, err
		}
		r.buf, r.eof = in.Data, in.EOF
		r.n += int64(len(in.Data))
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}
