package remote_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/internal/rpcwire"
	"github.com/agentstate/agentstate/internal/rpcwire/execwire"
)

// A client that goes away (the agentstate front end exits as soon as it
// has its exit code, with the server's stream close unread; a killed
// command; an interrupted one) is not news: the server logs none of it.
func TestClientGoneIsNotLogged(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	exec := func(ctx context.Context, r *repo.Repo, req remote.ExecRequest, stdin io.Reader, stdout, stderr io.Writer) int {
		if req.Args[1] == "slow" {
			// Output that outlives its reader: the write fails.
			for ctx.Err() == nil {
				if _, err := stdout.Write([]byte(strings.Repeat("x", 64<<10))); err != nil {
					return 1
				}
			}
			return 1
		}
		stdout.Write([]byte("hello\n"))
		return 0
	}
	r, srv, _ := startServed(t, remote.Options{Exec: exec, Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, args...))
	}})
	sock := remote.SocketPath(r.Dir)
	request := func(args ...string) []byte {
		start := execwire.ExecStart{Args: args, Dir: "/"}
		b := execwire.AppendPacket(nil, execwire.Packet{Kind: execwire.KindInvoke, Stream: 1, Message: 1, Data: []byte(rpcwire.RPCExec)})
		return execwire.AppendPacket(b, execwire.Packet{Kind: execwire.KindMessage, Stream: 1, Message: 2, Data: start.AppendCBOR(nil)})
	}
	dial := func() net.Conn {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for range 20 {
		// Read to the exit code, then close with the rest unread (the server
		// reads a reset).
		c := dial()
		if _, err := c.Write(request("agentstate", "get")); err != nil {
			t.Fatal(err)
		}
		rd := execwire.NewReader(c, execwire.MaxMessage)
		for {
			p, err := rd.ReadPacket()
			if err != nil {
				t.Fatal(err)
			}
			if m, err := execwire.DecodeExecOut(p.Data); err == nil && m.Done {
				break
			}
		}
		time.Sleep(time.Millisecond) // let the server's close arrive, unread
		c.Close()
	}
	for range 5 {
		// Gone in the middle of the output.
		c := dial()
		if _, err := c.Write(request("agentstate", "slow")); err != nil {
			t.Fatal(err)
		}
		c.Read(make([]byte, 100))
		c.Close()
	}
	// The server still serves, and has logged nothing.
	alive(t, sock, remote.DialOptions{})
	srv.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(logged) > 0 {
		t.Errorf("the server logged %d departures of clients, e.g. %q", len(logged), logged[0])
	}
}
