// Package front is the agentstate command itself: a small program that
// starts in about the time a hello-world program does. When a server holds
// the store (agentstate serve), it hands the command line to that server,
// which runs it in-process against the open store, and relays the output,
// stdin and exit code. Otherwise, and for what a server does not run, it
// replaces itself with the engine (agentstate-engine), which opens the store
// itself or goes through a server's repository API.
//
// It imports only the standard library, drpc's wire and error packages and
// internal/rpcwire/execwire: every package linked here is start-up time paid
// by every command.
package front

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/agentstate/agentstate/internal/rpcwire/execwire"
	"storj.io/drpc/drpcerr"
	"storj.io/drpc/drpcwire"
)

// Engine is the program that runs commands in its own process.
const Engine = "agentstate-engine"

// Main runs the command line and returns its exit code (when it does not
// replace the process with the engine).
func Main() int {
	args := os.Args
	if sock := servedSocket(args); sock != "" {
		code, err := execOn(sock, args)
		if err == nil {
			return code
		}
		if !errors.Is(err, errNotServed) {
			os.Stderr.WriteString("agentstate: " + err.Error() + "\n")
			return 1
		}
	}
	return runEngine(args)
}

// errNotServed: no server took the command; the engine runs it.
var errNotServed = errors.New("not served")

// servedSocket returns the socket of the store the command line names, or
// "" when the command must go to the engine (--remote, or no store found).
// The store is found as the engine finds it: --store, AGENTSTATE_STORE, or
// the nearest .agentstate walking up from the working directory.
func servedSocket(args []string) string {
	store := os.Getenv("AGENTSTATE_STORE")
	if os.Getenv("AGENTSTATE_REMOTE") != "" {
		return ""
	}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch name {
		case "store", "agent", "remote":
			if !hasVal {
				if i+1 >= len(args) {
					return "" // the engine reports the usage error
				}
				i++
				val = args[i]
			}
			if name == "store" {
				store = val
			}
			if name == "remote" {
				return ""
			}
		}
	}
	if store == "" {
		dir, err := os.Getwd()
		if err != nil {
			return ""
		}
		for {
			cand := filepath.Join(dir, ".agentstate")
			if fi, err := os.Stat(cand); err == nil && fi.IsDir() {
				store = cand
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				return ""
			}
			dir = parent
		}
	}
	return filepath.Join(store, execwire.SocketName)
}

// fdConn is a connected socket used with plain system calls: no network
// poller to start, which is most of what a served command costs.
type fdConn struct{ fd int }

func (c fdConn) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(c.fd, p)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, err
		}
		if n == 0 {
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c fdConn) Write(p []byte) (int, error) {
	off := 0
	for off < len(p) {
		n, err := syscall.Write(c.fd, p[off:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return off, err
		}
		off += n
	}
	return off, nil
}

// Close shuts the socket down before closing it: a read blocked in another
// goroutine returns at once, which closing alone does not do.
func (c fdConn) Close() error {
	syscall.Shutdown(c.fd, syscall.SHUT_RDWR)
	return syscall.Close(c.fd)
}

func dial(sock string) (fdConn, error) {
	addr, release, err := execwire.SocketAddr(sock)
	if err != nil {
		return fdConn{}, errNotServed
	}
	defer release()
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return fdConn{}, errNotServed
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: addr})
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		// No socket, or a socket nobody listens on (a killed server's).
		syscall.Close(fd)
		return fdConn{}, errNotServed
	}
	return fdConn{fd}, nil
}

// passEnv lists the environment a served command reads besides the
// AGENTSTATE_ variables.
var passEnv = []string{"NO_COLOR", "TERM", "SOURCE_DATE_EPOCH"}

// execOn runs the command line on the server at sock. It speaks drpc's wire
// protocol (package drpcwire: frames, packets, the Invoke/Message/Error/
// CloseSend kinds) on one stream, reading and writing the socket from this
// goroutine with plain system calls: a served command needs no connection
// manager (drpcconn starts goroutines that hand each packet over with futex
// wake-ups, most of a short command's cost on a small machine). The server
// is the ordinary drpc server.
func execOn(sock string, args []string) (int, error) {
	c, err := dial(sock)
	if err != nil {
		return 0, err
	}
	// Its messages are encoded by rpcwire's hand codec, not the CBOR
	// library, whose first use in a process costs a tenth of a command.
	// The connection is never closed politely: the process exits right after
	// the answer, and the kernel closes the socket (the server sees EOF).
	start := execwire.ExecStart{Args: args, StdoutTTY: isTerminal(1)}
	start.Dir, _ = os.Getwd()
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AGENTSTATE_") || contains(passEnv, k) {
			start.Env = append(start.Env, kv)
		}
	}
	st := &wireStream{w: drpcwire.NewWriter(c, 64<<10)}
	if err := st.send(drpcwire.KindInvoke, []byte(execwire.RPCExec)); err != nil {
		return 0, errNotServed
	}
	if err := st.send(drpcwire.KindMessage, start.AppendCBOR(nil)); err != nil {
		return 0, errNotServed // the server went away before taking the command
	}
	rd := drpcwire.NewReaderWithOptions(c, drpcwire.ReaderOptions{MaximumBufferSize: execwire.MaxMessage})
	// Stdin is read when the command asks for it, on a goroutine of its own:
	// the command's output keeps flowing while a read waits (an interactive
	// protocol, such as 'agentstate mcp', answers before it reads again).
	var wants chan int
	defer func() {
		if wants != nil {
			close(wants)
		}
	}()
	started := false
	for {
		pkt, err := rd.ReadPacket()
		if err == nil && pkt.ID.Stream != st.id.Stream {
			continue // not this command's stream
		}
		if err == nil {
			switch pkt.Kind {
			case drpcwire.KindMessage:
			case drpcwire.KindError:
				err = drpcwire.UnmarshalError(pkt.Data)
			default: // CloseSend, Close, Cancel: the stream ended without Done
				err = io.EOF
			}
		}
		if err != nil {
			if code := drpcerr.Code(err); code == execwire.CodeNoExec || (!started && code == 0 && isGone(err)) {
				return 0, errNotServed
			}
			if started {
				return 1, errors.New("the server went away during the command; it may have completed or not ('agentstate oplog' tells): " + err.Error())
			}
			return 1, errors.New("the server refused the command: " + err.Error())
		}
		m, err := execwire.DecodeExecOut(pkt.Data)
		if err != nil {
			return 1, errors.New("the server sent a message that does not decode: " + err.Error())
		}
		started = true
		switch {
		case m.Done:
			return m.Code, nil
		case m.Want > 0:
			if wants == nil {
				wants = make(chan int, 1)
				go readStdin(st, wants)
			}
			select {
			case wants <- m.Want:
			default: // a read is already waiting
			}
		case m.Stream == 1:
			if _, err := os.Stdout.Write(m.Data); err != nil {
				return 1, nil // the reader went away (a pipe closed early)
			}
		case m.Stream == 2:
			os.Stderr.Write(m.Data)
		}
	}
}

// readStdin answers the command's requests for stdin, one read each.
func readStdin(st *wireStream, wants <-chan int) {
	for want := range wants {
		buf := make([]byte, min(want, 1<<20))
		n, rerr := os.Stdin.Read(buf)
		in := execwire.ExecIn{Data: buf[:n], EOF: rerr != nil && n == 0}
		if st.send(drpcwire.KindMessage, in.AppendCBOR(nil)) != nil {
			return // the main loop sees the stream end
		}
	}
}

// wireStream writes one drpc stream's packets: stream 1 (the first stream
// of a connection, as drpc's client numbers them), message ids counting up.
type wireStream struct {
	mu sync.Mutex
	w  *drpcwire.Writer
	id drpcwire.ID
}

func (s *wireStream) send(kind drpcwire.Kind, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.id.Stream = 1
	s.id.Message++
	if err := s.w.WritePacket(drpcwire.Packet{ID: s.id, Kind: kind, Data: data}); err != nil {
		return err
	}
	if kind == drpcwire.KindInvoke {
		return nil // sent with the first message
	}
	return s.w.Flush()
}

func isGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || strings.Contains(err.Error(), "closed")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// isTerminal reports whether fd is a terminal (TCGETS succeeds).
func isTerminal(fd int) bool {
	var t syscall.Termios
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return e == 0
}

// runEngine replaces this process with the engine, found beside this
// program or on PATH.
func runEngine(args []string) int {
	path := enginePath()
	if path == "" {
		os.Stderr.WriteString("agentstate: " + Engine + " is not installed beside agentstate or on PATH (make build, or go install ./cmd/...)\n")
		return 1
	}
	argv := append([]string{path}, args[1:]...)
	err := syscall.Exec(path, argv, os.Environ())
	os.Stderr.WriteString("agentstate: starting " + path + ": " + err.Error() + "\n")
	return 1
}

func enginePath() string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), Engine)
		if isExecutable(p) {
			return p
		}
	}
	if a0 := os.Args[0]; strings.Contains(a0, "/") {
		p := filepath.Join(filepath.Dir(a0), Engine)
		if isExecutable(p) {
			return p
		}
	}
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, Engine)
		if isExecutable(p) {
			return p
		}
	}
	return ""
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}
