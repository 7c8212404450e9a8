package front

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentstate/agentstate/internal/rpcwire/execwire"
)

// The test binary doubles as a child that writes with the front end's
// functions (FRONT_TEST_CHILD says what to do).
func TestMain(m *testing.M) {
	switch os.Getenv("FRONT_TEST_CHILD") {
	case "":
		os.Exit(m.Run())
	case "write":
		err := writeAll(1, bytes.Repeat([]byte("x"), 1<<20))
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(3)
		}
		os.Exit(0)
	case "args":
		args, err := commandLine()
		if err != nil {
			os.Exit(3)
		}
		writeAll(1, []byte(strings.Join(args, "\n")))
		os.Exit(0)
	}
}

func child(t *testing.T, what string, args ...string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "FRONT_TEST_CHILD="+what)
	return cmd
}

// The command line read from /proc is the process's, empty and odd
// arguments included.
func TestCommandLine(t *testing.T) {
	args := []string{"get", "", "a b", "--store=/x y", "é\tz"}
	cmd := child(t, "args", args...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(string(out), "\n")
	if !slices.Equal(got[1:], args) || got[0] != cmd.Path {
		t.Fatalf("got %q, want %q then %q", got, cmd.Path, args)
	}
}

// A reader gone from standard output ends the process by SIGPIPE, as it
// ends other tools.
func TestWriteToAClosedPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	cmd := child(t, "write")
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	w.Close()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("exit: %v (%s)", err, stderr.String())
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGPIPE {
		t.Fatalf("the child ended with %v (%s), want SIGPIPE", err, stderr.String())
	}
}

// Standard output that does not block (a parent's non-blocking pipe) gets
// every byte: the writer waits for room.
func TestWriteToANonBlockingPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := syscall.SetNonblock(int(w.Fd()), true); err != nil {
		t.Fatal(err)
	}
	cmd := child(t, "write")
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	time.Sleep(50 * time.Millisecond) // let the pipe fill
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
	if len(got) != 1<<20 {
		t.Fatalf("read %d bytes, want %d", len(got), 1<<20)
	}
}

// The working directory keeps the path the user came by ($PWD through a
// symbolic link) when it names the same directory, as os.Getwd does.
func TestGetwd(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	t.Chdir(link)
	realPath, _ := filepath.EvalSymlinks(real)
	for _, c := range []struct{ pwd, want string }{
		{link, link},           // the same directory: kept
		{dir, realPath},        // another directory: the kernel's answer
		{"relative", realPath}, // not absolute
	} {
		t.Setenv("PWD", c.pwd)
		if got := getwd(); got != c.want {
			t.Errorf("PWD=%s: %q, want %q", c.pwd, got, c.want)
		}
		if got, _ := os.Getwd(); got != c.want {
			t.Errorf("PWD=%s: os.Getwd says %q, the test wants %q", c.pwd, got, c.want)
		}
	}
}

// The store is found as the engine finds it.
func TestServedSocket(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, ".agentstate")
	sub := filepath.Join(dir, "a", "b")
	if err := os.MkdirAll(store, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AGENTSTATE_STORE", "")
	t.Setenv("AGENTSTATE_REMOTE", "")
	sock := filepath.Join(store, "agentstate.sock")
	for _, c := range []struct {
		args []string
		wd   string
		env  map[string]string
		want string
	}{
		{[]string{"agentstate", "log"}, sub, nil, sock},                                               // walking up
		{[]string{"agentstate", "log"}, "/", nil, ""},                                                 // none found
		{[]string{"agentstate", "--store", "/s", "log"}, sub, nil, "/s/agentstate.sock"},              // --store
		{[]string{"agentstate", "--store=rel", "log"}, sub, nil, "rel/agentstate.sock"},               // relative, as given
		{[]string{"agentstate", "--agent", "x", "--store=/s", "log"}, sub, nil, "/s/agentstate.sock"}, // after another flag
		{[]string{"agentstate", "log", "--store=/s"}, sub, nil, "/s/agentstate.sock"},                 // after the command
		{[]string{"agentstate", "log", "HEAD", "-n", "1", "--store", "/s"}, sub, nil, "/s/agentstate.sock"},
		{[]string{"agentstate", "get", "--", "--store=/s"}, sub, nil, sock}, // after --: an argument
		{[]string{"agentstate", "log", "HEAD", "--remote", "h:1"}, sub, nil, ""},
		{[]string{"agentstate", "log"}, sub, map[string]string{"AGENTSTATE_STORE": "/e"}, "/e/agentstate.sock"},
		{[]string{"agentstate", "--remote", "h:1", "log"}, sub, nil, ""}, // --remote: the engine
		{[]string{"agentstate", "log"}, sub, map[string]string{"AGENTSTATE_REMOTE": "h:1"}, ""},
		{[]string{"agentstate", "--store"}, sub, nil, ""}, // a usage error: the engine says it
	} {
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		if got := servedSocket(c.args, c.wd); got != c.want {
			t.Errorf("%q in %s with %v: %q, want %q", c.args, c.wd, c.env, got, c.want)
		}
		for k := range c.env {
			t.Setenv(k, "")
		}
	}
}

// A server that answers with anything but the protocol gets a clean error
// (or, for one that does not run command lines or is gone before answering,
// the engine), never a hang or a panic.
func TestHostileServer(t *testing.T) {
	packet := func(kind byte, msg uint64, data []byte) []byte {
		return execwire.AppendPacket(nil, execwire.Packet{Kind: kind, Stream: 1, Message: msg, Data: data})
	}
	errorPacket := func(code uint64, msg string) []byte {
		b := make([]byte, 8, 8+len(msg))
		for i := range 8 {
			b[i] = byte(code >> (56 - 8*i))
		}
		return packet(execwire.KindError, 1, append(b, msg...))
	}
	done := []byte{0xa2, 0x04, 0xf5, 0x05, 0x07} // ExecOut{Done: true, Code: 7}
	for _, c := range []struct {
		name    string
		answer  []byte
		code    int
		wantErr string // "" with code: a clean exit; "engine": errNotServed
	}{
		{"garbage", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 1, "protocol error"},
		{"done at a later message id", packet(execwire.KindMessage, 5, done), 7, ""},
		{"an id below the last", append(execwire.AppendPacket(nil, execwire.Packet{Kind: execwire.KindMessage, Stream: 2, Message: 1, Data: done}),
			packet(execwire.KindMessage, 1, done)...), 1, "monotonicity"},
		{"stream 0", execwire.AppendPacket(nil, execwire.Packet{Kind: execwire.KindMessage, Stream: 0, Message: 9, Data: done}), 1, "monotonicity"},
		{"not an ExecOut", packet(execwire.KindMessage, 1, []byte("\xa1\x09\x01")), 1, "does not decode"},
		{"a refusal", errorPacket(104, "bad request: no"), 1, "the server refused the command: bad request: no"},
		{"no command lines here", errorPacket(execwire.CodeNoExec, "no exec"), 0, "engine"},
		{"gone before answering", nil, 0, "engine"},
		{"a stream ended without done", packet(execwire.KindCloseSend, 1, nil), 0, "engine"},
		{"done", packet(execwire.KindMessage, 1, done), 7, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			sock := filepath.Join(dir, "s")
			l, err := net.Listen("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			go func() {
				conn, err := l.Accept()
				if err != nil {
					return
				}
				defer conn.Close()
				conn.Read(make([]byte, 4096)) // the command line
				conn.Write(c.answer)
			}()
			code, err := execOn(sock, []string{"agentstate", "get", "k"}, dir)
			switch {
			case c.wantErr == "engine":
				if !errors.Is(err, errNotServed) {
					t.Fatalf("%d %v, want the engine to run it", code, err)
				}
			case c.wantErr == "":
				if err != nil || code != c.code {
					t.Fatalf("%d %v, want exit %d", code, err, c.code)
				}
			default:
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || code != c.code {
					t.Fatalf("%d %v, want exit %d and %q", code, err, c.code, c.wantErr)
				}
			}
		})
	}
}

// The front end starts the lean engine when it is beside argv[0] (or this
// program's file), and else finds the full one as before.
func TestLeanEnginePath(t *testing.T) {
	dir := t.TempDir()
	arg0 := filepath.Join(dir, "agentstate")
	if p := leanEnginePath(arg0); p != "" {
		t.Fatalf("no lean engine installed, but leanEnginePath found %q", p)
	}
	for _, name := range []string{Engine, LeanEngine} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if p, want := leanEnginePath(arg0), filepath.Join(dir, LeanEngine); p != want {
		t.Fatalf("leanEnginePath = %q, want %q", p, want)
	}
	if p, want := enginePath(arg0), filepath.Join(dir, Engine); p != want {
		t.Fatalf("enginePath = %q, want %q", p, want)
	}
	// Not executable: not an engine.
	if err := os.Chmod(filepath.Join(dir, LeanEngine), 0o644); err != nil {
		t.Fatal(err)
	}
	if p := leanEnginePath(arg0); p != "" {
		t.Fatalf("a lean engine file that cannot be run was chosen: %q", p)
	}
}
