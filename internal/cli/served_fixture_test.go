package cli

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/runtime"
	"github.com/rogpeppe/go-internal/testscript"
)

// runtimeFixture is agentstate-runtime STORE AGENT [api] [PAUSE]: a runtime
// that serves STORE (running command lines in-process, or with "api" only
// the repository API) and lands a task every PAUSE (default 3ms) on AGENT
// until SIGTERM or SIGINT, then closes and prints how many tasks landed and
// failed.
func runtimeFixture(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: agentstate-runtime STORE AGENT [api]")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	_, key, _ := ed25519.GenerateKey(nil)
	opts := runtime.Options{Store: args[0], Signer: key}
	if len(args) < 3 || args[2] != "api" {
		opts.Serve.Exec = Exec
	}
	pause := 3 * time.Millisecond
	if len(args) > 3 {
		d, err := time.ParseDuration(args[3])
		if err != nil {
			fmt.Fprintln(os.Stderr, "agentstate-runtime:", err)
			return 2
		}
		pause = d
	}
	rt, err := runtime.Open(context.Background(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentstate-runtime:", err)
		return 1
	}
	landed, failed, rerun := 0, 0, 0
	for i := 1; ctx.Err() == nil; i++ {
	again:
		_, err := rt.RunTask(context.Background(), args[1], runtime.Task{ID: "task-" + strconv.Itoa(i), Model: "fixture"},
			func(ctx context.Context, tx *runtime.Tx) error {
				if err := tx.Put(ctx, fmt.Sprintf("notes/task-%04d.md", i), []byte(fmt.Sprintf("# task %d\nlanded by the fixture\n", i))); err != nil {
					return err
				}
				return tx.Put(ctx, "state/counter", []byte(strconv.Itoa(i)))
			})
		if errors.Is(err, runtime.ErrConflict) && rerun < 100 {
			rerun++ // a command line changed the same key: re-run on the new HEAD
			goto again
		}
		if err != nil {
			failed++
			fmt.Fprintln(os.Stderr, "agentstate-runtime: task", i, err)
		} else {
			landed++
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
	}
	if err := rt.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "agentstate-runtime: close:", err)
		return 1
	}
	fmt.Printf("landed %d failed %d (re-run after a conflict: %d)\n", landed, failed, rerun)
	return 0
}

func init() {
	// freeport VAR: set VAR to a free TCP address on 127.0.0.1.
	scriptCmds["freeport"] = func(ts *testscript.TestScript, neg bool, args []string) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		ts.Check(err)
		ts.Setenv(args[0], l.Addr().String())
		l.Close()
	}
	// waitserved STORE [HOLDER]: wait (patience at most) until a server
	// answers on STORE's socket, and has landed at least one commit.
	scriptCmds["waitserved"] = func(ts *testscript.TestScript, neg bool, args []string) {
		dir := ts.MkAbs(args[0])
		wait := patience()
		deadline := time.Now().Add(wait)
		for {
			c, err := remote.Dial(context.Background(), remote.SocketPath(dir), remote.DialOptions{})
			if err == nil {
				st, serr := c.Status(context.Background())
				n := 0
				for range c.HeadRecords(context.Background()) {
					n++
				}
				c.Close()
				if serr == nil && n > 0 && (len(args) < 2 || st.Holder == args[1]) {
					return
				}
			}
			if time.Now().After(deadline) {
				ts.Fatalf("no server with a HEAD on %s after %s (last: %v)", dir, wait.Round(time.Second), err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// followlog N ARGS...: run 'agentstate ARGS... log --oneline --follow',
	// and succeed once it has printed N more lines than the log had when it
	// started (patience at most); the lines go to stdout.
	scriptCmds["followlog"] = func(ts *testscript.TestScript, neg bool, args []string) {
		n, err := strconv.Atoi(args[0])
		ts.Check(err)
		command := func(extra ...string) *exec.Cmd {
			cmd := exec.Command("agentstate", append(append([]string(nil), args[1:]...), extra...)...)
			cmd.Dir = ts.Getenv("WORK")
			cmd.Env = os.Environ()
			for _, k := range []string{"PATH", "HOME", "SOURCE_DATE_EPOCH", "NO_COLOR"} {
				cmd.Env = append(cmd.Env, k+"="+ts.Getenv(k))
			}
			return cmd
		}
		// The log as it stands before the follow starts: the follow's
		// initial output has at least these lines, however slowly a loaded
		// machine prints them, so a quiet moment before them is not its end.
		before, err := command("log", "--oneline").Output()
		ts.Check(err)
		floor := strings.Count(string(before), "\n")
		cmd := command("log", "--oneline", "--follow")
		out, err := cmd.StdoutPipe()
		ts.Check(err)
		ts.Check(cmd.Start())
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		lines := make(chan string)
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		var got []string
		initial := -1
		wait := patience()
		timeout := time.After(wait)
		quiet := time.NewTimer(300 * time.Millisecond) // the initial log is printed at once
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					ts.Fatalf("log --follow ended after %d lines:\n%s", len(got), strings.Join(got, "\n"))
				}
				got = append(got, l)
				if initial >= 0 && len(got)-initial >= n {
					ts.Logf("log --follow: %d lines at start, %d after", initial, len(got))
					fmt.Fprint(ts.Stdout(), strings.Join(got, "\n")+"\n")
					return
				}
			case <-quiet.C:
				if initial < 0 && len(got) >= floor {
					initial = len(got)
				} else if initial < 0 {
					quiet.Reset(300 * time.Millisecond)
				}
			case <-timeout:
				ts.Fatalf("log --follow printed %d lines (%d at start), want %d more within %s", len(got), initial, n, wait.Round(time.Second))
			}
		}
	}
}
