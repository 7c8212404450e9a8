package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/internal/rpcwire"
	"github.com/agentstate/agentstate/objects"
	"storj.io/drpc/drpcerr"
)

// execResult is what a client of Exec sees.
type execResult struct {
	stdout, stderr bytes.Buffer
	code           int
	wants          int // stdin requests answered
}

// runExec drives the client side of Exec (docs/service.md §3.3) on a bare
// connection: start, answer every stdin request from stdin, collect output
// until done.
func runExec(t testing.TB, sock string, start rpcwire.ExecStart, stdin []byte) (*execResult, error) {
	t.Helper()
	conn, _ := rawConn(t, sock)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), patience(t))
	defer cancel()
	st, err := conn.NewStream(ctx, rpcwire.RPCExec, rpcwire.Encoding)
	if err != nil {
		return nil, err
	}
	if err := st.MsgSend(&start, rpcwire.Encoding); err != nil {
		return nil, err
	}
	res := &execResult{}
	for {
		var out rpcwire.ExecOut
		if err := st.MsgRecv(&out, rpcwire.Encoding); err != nil {
			return res, err
		}
		switch {
		case out.Done:
			res.code = out.Code
			return res, nil
		case out.Want > 0:
			res.wants++
			n := min(out.Want, len(stdin), 1000) // answer in small pieces: the command reads on
			in := rpcwire.ExecIn{Data: stdin[:n], EOF: n == 0}
			stdin = stdin[n:]
			if err := st.MsgSend(&in, rpcwire.Encoding); err != nil {
				return res, err
			}
		case out.Stream == 1:
			res.stdout.Write(out.Data)
		case out.Stream == 2:
			res.stderr.Write(out.Data)
		default:
			return res, fmt.Errorf("a message that is none of output, stdin request or done: %+v", out)
		}
	}
}

// A command line runs in the server with the client's arguments, directory
// and environment, against the served repository; its stdin is asked for
// as it reads, its output comes back whole and in order, and so does its
// exit code.
func TestExec(t *testing.T) {
	exec := func(ctx context.Context, r *repo.Repo, req remote.ExecRequest, stdin io.Reader, stdout, stderr io.Writer) int {
		fmt.Fprintf(stderr, "dir=%s env=%s tty=%v width=%d\n", req.Dir, strings.Join(req.Env, ","), req.StdoutTTY, req.Width)
		switch req.Args[1] {
		case "upper": // stdin to stdout, upper-cased, a line at a time
			in, err := io.ReadAll(stdin)
			if err != nil {
				fmt.Fprintln(stderr, err)
				return 1
			}
			for _, l := range bytes.SplitAfter(in, []byte("\n")) {
				stdout.Write(bytes.ToUpper(l))
			}
			return 0
		case "put": // a commit in the served repository
			kv := strings.SplitN(req.Args[2], "=", 2)
			v := objects.NewValue([]byte(kv[1]))
			if _, err := r.Edit(ctx, repo.EditRequest{Agent: "lumen", Create: true, Blocks: []objects.Block{v},
				Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, kv[0], v.CID) }}); err != nil {
				fmt.Fprintln(stderr, err)
				return 1
			}
			fmt.Fprintln(stdout, "ok")
			return 0
		case "flood": // more output than a message holds, in many writes
			for i := range 40000 {
				fmt.Fprintf(stdout, "line %06d %s\n", i, strings.Repeat("x", 40))
			}
			return 0
		default:
			fmt.Fprintf(stderr, "unknown command %q\n", req.Args[1])
			return 3
		}
	}
	local, _, _ := startServed(t, remote.Options{Holder: "test", Exec: exec})
	sock := remote.SocketPath(local.Dir)

	var in bytes.Buffer
	for i := range 3000 {
		fmt.Fprintf(&in, "line %d of stdin\n", i)
	}
	res, err := runExec(t, sock, rpcwire.ExecStart{Args: []string{"agentstate", "upper"}, Dir: "/work", Env: []string{"A=1", "B=2"}, StdoutTTY: true, Width: 80}, in.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if res.code != 0 || res.stdout.String() != strings.ToUpper(in.String()) {
		t.Fatalf("upper: code %d, %d bytes out of %d", res.code, res.stdout.Len(), in.Len())
	}
	if res.stderr.String() != "dir=/work env=A=1,B=2 tty=true width=80\n" {
		t.Fatalf("stderr %q", res.stderr.String())
	}
	t.Logf("%d bytes of stdin in %d requests", in.Len(), res.wants)

	res, err = runExec(t, sock, rpcwire.ExecStart{Args: []string{"agentstate", "put", "k=v"}, Dir: "/"}, nil)
	if err != nil || res.code != 0 || res.stdout.String() != "ok\n" {
		t.Fatalf("put: %v %+v", err, res)
	}
	if got := treeOf(t, local, "lumen"); got["k"] != "v" {
		t.Fatalf("the command's commit is not in the store: %v", got)
	}

	res, err = runExec(t, sock, rpcwire.ExecStart{Args: []string{"agentstate", "flood"}, Dir: "/"}, nil)
	if err != nil || res.code != 0 {
		t.Fatalf("flood: %v %+v", err, res)
	}
	lines := strings.Split(strings.TrimSuffix(res.stdout.String(), "\n"), "\n")
	if len(lines) != 40000 || lines[0] != "line 000000 "+strings.Repeat("x", 40) || lines[39999] != "line 039999 "+strings.Repeat("x", 40) {
		t.Fatalf("flood: %d lines", len(lines))
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, fmt.Sprintf("line %06d ", i)) {
			t.Fatalf("line %d out of order: %q", i, l)
		}
	}

	res, err = runExec(t, sock, rpcwire.ExecStart{Args: []string{"agentstate", "nope"}, Dir: "/"}, nil)
	if err != nil || res.code != 3 || !strings.Contains(res.stderr.String(), `unknown command "nope"`) {
		t.Fatalf("a failing command: %v %+v", err, res)
	}

	// Malformed starts are refused before the command runs.
	for name, start := range map[string]rpcwire.ExecStart{"no args": {Dir: "/"}, "no dir": {Args: []string{"agentstate", "put", "x=y"}}} {
		_, err := runExec(t, sock, start, nil)
		if code := drpcerr.Code(err); code != rpcwire.CodeBadRequest {
			t.Errorf("%s: %v (code %d), want %d", name, err, code, rpcwire.CodeBadRequest)
		}
	}
	_, err = invokeRaw(t, sock, rpcwire.RPCExec, "", []byte("\xffjunk"))
	wantCode(t, "Exec with a body that is no ExecStart", err, rpcwire.CodeBadRequest)
	if got := treeOf(t, local, "lumen"); len(got) != 1 {
		t.Fatalf("a refused command ran: %v", got)
	}
	verifyClean(t, local)
}

// A client that goes away while its command runs cancels the command's
// context, whether the command is waiting or asking for stdin; the server
// serves on.
func TestExecClientGone(t *testing.T) {
	started := make(chan string, 2)
	ended := make(chan error, 2)
	exec := func(ctx context.Context, r *repo.Repo, req remote.ExecRequest, stdin io.Reader, stdout, stderr io.Writer) int {
		started <- req.Args[1]
		switch req.Args[1] {
		case "wait":
			<-ctx.Done()
			ended <- ctx.Err()
		case "read":
			_, err := io.ReadAll(stdin)
			ended <- err
		}
		return 0
	}
	local, _, c := startServed(t, remote.Options{Exec: exec})
	sock := remote.SocketPath(local.Dir)
	for _, cmd := range []string{"wait", "read"} {
		conn, nc := rawConn(t, sock)
		st, err := conn.NewStream(context.Background(), rpcwire.RPCExec, rpcwire.Encoding)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.MsgSend(&rpcwire.ExecStart{Args: []string{"agentstate", cmd}, Dir: "/"}, rpcwire.Encoding); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case <-time.After(patience(t)):
			t.Fatalf("%s: the command never started", cmd)
		}
		if cmd == "read" { // wait for the stdin request, then vanish
			var out rpcwire.ExecOut
			if err := st.MsgRecv(&out, rpcwire.Encoding); err != nil || out.Want == 0 {
				t.Fatalf("read: %+v %v, want a stdin request", out, err)
			}
		}
		nc.Close()
		select {
		case err := <-ended:
			if cmd == "wait" && !errors.Is(err, context.Canceled) {
				t.Fatalf("wait: the command's context ended with %v", err)
			}
			if cmd == "read" && err == nil {
				t.Fatal("read: stdin of a client gone read as a clean end")
			}
		case <-time.After(patience(t)):
			t.Fatalf("%s: the command outlived its client", cmd)
		}
	}
	if _, err := c.Status(context.Background()); err != nil {
		t.Fatal(err)
	}
}
