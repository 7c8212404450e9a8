package remote_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
)

// A server SIGKILLed in another process leaves its socket file behind: a
// client dialling it gets ErrNoServer at once (nothing listens), and the
// next server to hold the store replaces the file. Both for a short store
// path and for one whose socket path is longer than a sockaddr holds (108
// bytes), which client and server reach through /proc/self/fd.
func TestKilledServerSocket(t *testing.T) {
	ctx := context.Background()
	for name, dir := range map[string]string{
		"short": filepath.Join(t.TempDir(), "s"),
		"deep":  filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60), "s"),
	} {
		t.Run(name, func(t *testing.T) {
			sock := remote.SocketPath(dir)
			if name == "deep" && len(sock) <= 108 {
				t.Fatalf("socket path of %d bytes is not deep", len(sock))
			}
			r, err := repo.Init(dir, repo.Options{})
			if err != nil {
				t.Fatal(err)
			}
			c0 := putKey(t, r, "lumen", "a", "before")
			r.Close()

			// The victim: this test binary serving the store (kill_test.go's
			// TestMain).
			child := exec.Command(os.Args[0], "-test.run=^$")
			child.Env = append(os.Environ(), "AGENTSTATE_SERVE_STORE="+dir)
			child.Stderr = os.Stderr
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			defer child.Process.Kill()
			var c *remote.Client
			for deadline := time.Now().Add(patience(t)); c == nil; time.Sleep(10 * time.Millisecond) {
				if c, err = remote.Dial(ctx, sock, remote.DialOptions{}); err != nil && time.Now().After(deadline) {
					t.Fatalf("the child never served: %v", err)
				}
			}
			st, err := c.Status(ctx)
			if err != nil || st.PID != child.Process.Pid || st.Holder != "victim" || st.Store != dir {
				t.Fatalf("status of the child's server: %+v %v", st, err)
			}
			c1 := putKey(t, repo.New(c), "lumen", "b", "through the victim")

			if err := child.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			child.Wait()
			if _, err := c.Status(ctx); err == nil {
				t.Fatal("a killed server answered")
			}
			c.Close()
			fi, err := os.Lstat(sock)
			if err != nil || fi.Mode()&os.ModeSocket == 0 {
				t.Fatalf("after SIGKILL the socket file should remain: %v %v", fi, err)
			}
			start := time.Now()
			if _, err := remote.Dial(ctx, sock, remote.DialOptions{}); !errors.Is(err, remote.ErrNoServer) {
				t.Fatalf("dialling a dead server's socket: %v, want ErrNoServer", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("detecting the dead socket took %s", d)
			}

			// The next holder replaces the socket and serves everything the
			// victim acknowledged.
			r, err = repo.Open(dir, repo.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			verifyClean(t, r)
			headIs(t, r, "lumen", c1)
			if es, _ := r.Refs.Entries(ctx, "lumen"); len(es) != 2 || es[0].New != c0 {
				t.Fatalf("log after the kill: %+v", es)
			}
			srv, err := remote.Start(r, remote.Options{Holder: "successor"})
			if err != nil {
				t.Fatalf("replacing a dead server's socket: %v", err)
			}
			defer srv.Close()
			c2, err := remote.Dial(ctx, sock, remote.DialOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			if st, err := c2.Status(ctx); err != nil || st.PID != os.Getpid() || st.Holder != "successor" {
				t.Fatalf("status after the takeover: %+v %v", st, err)
			}
			if fi, err := os.Lstat(sock); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("the new socket: %v %v", fi, err)
			}
			if got := treeOf(t, repo.New(c2), "lumen"); got["b"] != "through the victim" {
				t.Fatalf("through the successor: %v", got)
			}
			// No stray private directories from the socket dance.
			if m, _ := filepath.Glob(filepath.Join(dir, ".sock-*")); len(m) > 0 {
				t.Fatalf("left behind: %v", m)
			}
		})
	}
}
