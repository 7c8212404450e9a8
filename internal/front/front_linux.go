// Package front is the agentstate command itself: a small program that
// starts in about the time the smallest Go program does. When a server
// holds the store (agentstate serve), it hands the command line to that
// server, which runs it in-process against the open store, and relays the
// output, stdin and exit code. Otherwise, and for what a server does not
// run, it replaces itself with the engine (agentstate-engine), which opens
// the store itself or goes through a server's repository API.
//
// It imports only syscall and packages that initialise nothing (path,
// sync, io, errors) besides internal/rpcwire/execwire: every package
// linked here is start-up time paid by every command (go list -deps
// ./cmd/agentstate; GODEBUG=inittrace=1 shows what runs). Package os alone
// (through its GODEBUG machinery) cost a served command a tenth of its
// time, so the command line, the environment, the working directory and
// the standard streams are read and written with system calls here.
package front

import (
	"errors"
	"io"
	"path"
	"sync"
	"syscall"
	"unsafe"

	"github.com/agentstate/agentstate/internal/rpcwire/execwire"
)

// Engine is the program that runs commands in its own process.
const Engine = "agentstate-engine"

// LeanEngine is the engine built without the commands that link
// go-ethereum, the MCP SDK and the page (cmd/agentstate-engine with the tag
// lean): it starts sooner, and hands those commands to Engine.
const LeanEngine = "agentstate-engine-lean"

// Main runs the command line and returns its exit code (when it does not
// replace the process with the engine).
func Main() int {
	args, err := commandLine()
	if err != nil {
		errorf("reading this process's command line (/proc/self/cmdline): " + err.Error() + "; run " + Engine + " directly")
		return 1
	}
	wd := getwd()
	if sock := servedSocket(args, wd); sock != "" {
		code, err := execOn(sock, args, wd)
		if err == nil {
			return code
		}
		if !errors.Is(err, errNotServed) {
			errorf(err.Error())
			return 1
		}
	}
	return runEngine(args)
}

func errorf(msg string) { writeAll(2, []byte("agentstate: "+msg+"\n")) }

// errNotServed: no server took the command; the engine runs it.
var errNotServed = errors.New("not served")

// commandLine returns the process's arguments, argv[0] first, as the kernel
// keeps them: NUL-terminated strings one after another.
func commandLine() ([]string, error) {
	fd, err := open("/proc/self/cmdline")
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var b []byte
	buf := make([]byte, 4096)
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		b = append(b, buf[:n]...)
	}
	if len(b) == 0 || b[len(b)-1] != 0 {
		return nil, errors.New("not a list of NUL-terminated arguments")
	}
	return split(string(b[:len(b)-1]), 0), nil
}

func open(p string) (int, error) {
	for {
		fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			return fd, err
		}
	}
}

// getwd returns the working directory as os.Getwd does: $PWD when it names
// the same directory (so a path through a symbolic link stays as the user
// typed it), else the kernel's. It is "" when there is none.
func getwd() string {
	wd, err := syscall.Getwd()
	for err == syscall.EINTR {
		wd, err = syscall.Getwd()
	}
	pwd, _ := syscall.Getenv("PWD")
	if pwd == wd && err == nil {
		return wd
	}
	if hasPrefix(pwd, "/") {
		var dot, d syscall.Stat_t
		if syscall.Stat(".", &dot) == nil && syscall.Stat(pwd, &d) == nil && d.Dev == dot.Dev && d.Ino == dot.Ino {
			return pwd
		}
	}
	if err != nil {
		return ""
	}
	return wd
}

// GlobalFlags are the names of agentstate's global flags; every one takes
// a value. (internal/cli's TestFrontKnowsGlobalFlags holds
// the list to the command line's own.)
var GlobalFlags = []string{"store", "agent", "remote"}

// servedSocket returns the socket of the store the command line names, or
// "" when the command must go to the engine (--remote, or no store found).
// The store is found as the engine finds it: --store, AGENTSTATE_STORE, or
// the nearest .agentstate walking up from the working directory.
func servedSocket(args []string, wd string) string {
	store, _ := syscall.Getenv("AGENTSTATE_STORE")
	if v, _ := syscall.Getenv("AGENTSTATE_REMOTE"); v != "" {
		return ""
	}
	// A global flag may come anywhere before a "--", after the command too
	// (internal/cli's reorderArgs moves it before the command).
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		if !hasPrefix(a, "-") || a == "-" {
			continue
		}
		name := a
		for hasPrefix(name, "-") {
			name = name[1:]
		}
		name, val, hasVal := cut(name, '=')
		if !contains(GlobalFlags, name) {
			continue
		}
		if !hasVal {
			if i+1 >= len(args) {
				return "" // the engine reports the usage error
			}
			i++
			val = args[i]
		}
		switch name {
		case "store":
			store = val
		case "remote":
			return ""
		}
	}
	if store == "" {
		if wd == "" {
			return ""
		}
		for dir := wd; ; {
			cand := path.Join(dir, ".agentstate")
			if isDir(cand) {
				store = cand
				break
			}
			parent := path.Dir(dir)
			if parent == dir {
				return ""
			}
			dir = parent
		}
	}
	return path.Join(store, execwire.SocketName)
}

func isDir(p string) bool {
	var st syscall.Stat_t
	return syscall.Stat(p, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR
}

// fdConn is a connected socket used with plain system calls: no network
// poller to start, which is most of what a served command costs.
type fdConn struct{ fd int }

func (c fdConn) Read(p []byte) (int, error)  { return readFd(c.fd, p) }
func (c fdConn) Write(p []byte) (int, error) { return writeFd(c.fd, p) }

// writeFd writes all of p to fd, waiting for room when fd does not block.
func writeFd(fd int, p []byte) (int, error) {
	off := 0
	for off < len(p) {
		n, err := syscall.Write(fd, p[off:])
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			if err := waitFd(fd, pollOut); err != nil {
				return off, err
			}
			continue
		case err != nil:
			return off, err
		}
		off += n
	}
	return off, nil
}

// readFd reads from fd, waiting for input when fd does not block.
func readFd(fd int, p []byte) (int, error) {
	for {
		n, err := syscall.Read(fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			if err := waitFd(fd, pollIn); err != nil {
				return 0, err
			}
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

const (
	pollIn  = 0x1
	pollOut = 0x4
)

// waitFd waits until fd is ready for events (poll(2)).
func waitFd(fd int, events int16) error {
	pfd := struct {
		fd              int32
		events, revents int16
	}{int32(fd), events, 0}
	for {
		_, _, e := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, 0, 0, 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return e
		}
		return nil
	}
}

// writeAll writes p to the standard stream fd (1 or 2). A reader gone away
// from standard output ends the process by SIGPIPE, as it ends other tools
// (and as package os does for Go programs).
func writeAll(fd int, p []byte) error {
	_, err := writeFd(fd, p)
	if err == syscall.EPIPE {
		dieOfSIGPIPE()
	}
	return err
}

// dieOfSIGPIPE restores SIGPIPE's default action (the Go runtime catches
// it) and raises it.
func dieOfSIGPIPE() {
	var act [4]uintptr // struct sigaction: handler SIG_DFL, no flags, no restorer, empty mask
	syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(syscall.SIGPIPE), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	mask := uint64(1) << (syscall.SIGPIPE - 1)
	syscall.RawSyscall6(syscall.SYS_RT_SIGPROCMASK, 1 /* SIG_UNBLOCK */, uintptr(unsafe.Pointer(&mask)), 0, 8, 0, 0)
	syscall.Tgkill(syscall.Getpid(), syscall.Gettid(), syscall.SIGPIPE)
	syscall.Exit(128 + int(syscall.SIGPIPE)) // not reached
}

func (c fdConn) Close() error { return syscall.Close(c.fd) }

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
var passEnv = []string{"NO_COLOR", "TERM", "SOURCE_DATE_EPOCH", "PAGER"}

// execOn runs the command line on the server at sock. It speaks drpc's wire
// protocol (frames, packets, the Invoke/Message/Error/CloseSend kinds) on
// one stream, reading and writing the socket from this goroutine with plain
// system calls: a served command needs no connection manager (drpc's client
// starts goroutines that hand each packet over with futex wake-ups, most of
// a short command's cost on a small machine). The server is the ordinary
// drpc server.
func execOn(sock string, args []string, wd string) (int, error) {
	// The request is ready before the connection is made: the server, woken
	// by the connection, finds it there and does not sleep again to wait.
	start := execwire.ExecStart{Args: args, Dir: wd, StdoutTTY: isTerminal(1)}
	for _, kv := range syscall.Environ() {
		k, _, _ := cut(kv, '=')
		if hasPrefix(k, "AGENTSTATE_") || contains(passEnv, k) {
			start.Env = append(start.Env, kv)
		}
	}
	st := &wireStream{}
	// The invocation and the command line go in one write.
	first := st.appendLocked(nil, execwire.KindInvoke, []byte(execwire.RPCExec))
	first = st.appendLocked(first, execwire.KindMessage, start.AppendCBOR(nil))
	c, err := dial(sock)
	if err != nil {
		return 0, err
	}
	st.c = c
	// The connection is never closed politely: the process exits right after
	// the answer, and the kernel closes the socket (the server sees EOF).
	if _, err := c.Write(first); err != nil {
		return 0, errNotServed // the server went away before taking the command
	}
	rd := execwire.NewReader(c, execwire.MaxMessage)
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
	// The pager the server asked for (ExecOut.Pager) takes stdout from
	// there on; it is waited for however the command ends.
	var pg pager
	defer pg.wait()
	for {
		pkt, err := rd.ReadPacket()
		if err == nil && pkt.Stream != 1 {
			continue // not this command's stream
		}
		var code uint64
		if err == nil {
			switch pkt.Kind {
			case execwire.KindMessage:
			case execwire.KindError:
				re := execwire.DecodeError(pkt.Data)
				err, code = re, re.Code
			default: // CloseSend, Close, Cancel: the stream ended without Done
				err = io.EOF
			}
		}
		if err != nil {
			if code == execwire.CodeNoExec || (!started && code == 0 && isGone(err)) {
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
		case m.Pager != "":
			if !pg.started() && isTerminal(1) {
				pg.start(m.Pager) // a pager that cannot start leaves stdout as it was
			}
		case m.Stream == 1 && pg.started():
			pg.write(m.Data)
		case m.Stream == 1:
			if writeAll(1, m.Data) != nil {
				return 1, nil // standard output is gone
			}
		case m.Stream == 2:
			writeAll(2, m.Data)
		}
	}
}

// pager is a pager run by the shell, as git runs it, reading a served
// command's standard output from a pipe, on this process's terminal.
type pager struct {
	pid  int
	w    int  // the pipe's end this process writes, -1 once closed
	gone bool // the user quit the pager: the rest of the output is dropped
}

func (p *pager) started() bool { return p.pid > 0 }

func (p *pager) start(cmd string) {
	var fds [2]int
	if syscall.Pipe2(fds[:], syscall.O_CLOEXEC) != nil {
		return
	}
	pid, err := syscall.ForkExec("/bin/sh", []string{"sh", "-c", cmd}, &syscall.ProcAttr{
		Env:   syscall.Environ(),
		Files: []uintptr{uintptr(fds[0]), 1, 2},
	})
	syscall.Close(fds[0])
	if err != nil {
		syscall.Close(fds[1])
		return
	}
	p.pid, p.w = pid, fds[1]
}

// write hands the pager output; once the pager has ended (the user quit
// it), output is dropped and the command runs to its end quietly.
func (p *pager) write(b []byte) {
	if p.gone {
		return
	}
	if _, err := writeFd(p.w, b); err != nil {
		p.gone = true
	}
}

// wait closes the pager's input and waits for the user to leave it.
func (p *pager) wait() {
	if !p.started() {
		return
	}
	syscall.Close(p.w)
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(p.pid, &ws, 0, nil); err != syscall.EINTR {
			break
		}
	}
	p.pid = 0
}

// readStdin answers the command's requests for stdin, one read each.
func readStdin(st *wireStream, wants <-chan int) {
	for want := range wants {
		buf := make([]byte, min(want, 1<<20))
		n, rerr := readFd(0, buf)
		in := execwire.ExecIn{Data: buf[:n], EOF: rerr != nil && n == 0}
		if st.send(execwire.KindMessage, in.AppendCBOR(nil)) != nil {
			return // the main loop sees the stream end
		}
	}
}

// wireStream writes one drpc stream's packets: stream 1 (the first stream
// of a connection, as drpc's client numbers them), message ids counting up.
type wireStream struct {
	mu  sync.Mutex
	c   fdConn
	msg uint64
}

func (s *wireStream) appendLocked(b []byte, kind byte, data []byte) []byte {
	s.msg++
	return execwire.AppendPacket(b, execwire.Packet{Kind: kind, Stream: 1, Message: s.msg, Data: data})
}

func (s *wireStream) send(kind byte, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.c.Write(s.appendLocked(nil, kind, data))
	return err
}

func isGone(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE)
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

// runEngine replaces this process with the engine: the lean one when it is
// installed beside this program, else the full one, found beside this
// program or on PATH. The lean engine hands the commands it leaves out to
// the full one beside it (cli.NeedsFullEngine).
func runEngine(args []string) int {
	p := leanEnginePath(args[0])
	if p == "" {
		p = enginePath(args[0])
	}
	if p == "" {
		errorf(Engine + " is not installed beside agentstate or on PATH (make build, or go install ./cmd/...)")
		return 1
	}
	argv := append([]string{p}, args[1:]...)
	err := syscall.Exec(p, argv, syscall.Environ())
	errorf("starting " + p + ": " + err.Error())
	return 1
}

// leanEnginePath is LeanEngine beside this program's file or beside
// argv[0]; "" when neither holds it.
func leanEnginePath(arg0 string) string { return beside(arg0, LeanEngine) }

// beside is the program name beside this program's file, else beside
// argv[0]; "" when neither holds it.
func beside(arg0, name string) string {
	if exe := executable(); exe != "" {
		if p := path.Join(path.Dir(exe), name); isExecutable(p) {
			return p
		}
	}
	if indexByte(arg0, '/') >= 0 {
		if p := path.Join(path.Dir(arg0), name); isExecutable(p) {
			return p
		}
	}
	return ""
}

// enginePath looks beside this program's file, beside argv[0], then on PATH.
func enginePath(arg0 string) string {
	if p := beside(arg0, Engine); p != "" {
		return p
	}
	pathVar, _ := syscall.Getenv("PATH")
	for _, d := range split(pathVar, ':') {
		if d == "" {
			d = "."
		}
		if p := path.Join(d, Engine); isExecutable(p) {
			if indexByte(p, '/') < 0 {
				p = "./" + p
			}
			return p
		}
	}
	return ""
}

// executable is the path of this program's file (/proc/self/exe).
func executable() string {
	buf := make([]byte, 4096)
	n, err := syscall.Readlink("/proc/self/exe", buf)
	if err != nil || n >= len(buf) {
		return ""
	}
	return string(buf[:n])
}

func isExecutable(p string) bool {
	var st syscall.Stat_t
	return syscall.Stat(p, &st) == nil && st.Mode&syscall.S_IFMT != syscall.S_IFDIR && st.Mode&0o111 != 0
}
