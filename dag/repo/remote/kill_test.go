package remote_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/objects"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("AGENTSTATE_SERVE_STORE"); dir != "" {
		serveChild(dir) // never returns
	}
	os.Exit(m.Run())
}

// serveChild is the victim of TestServerKilled: it serves dir until killed.
func serveChild(dir string) {
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if _, err := remote.Start(r, remote.Options{Holder: "victim"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	<-ch
	os.Exit(0)
}

// TestServerKilled: a client commits through a server that is SIGKILLed at
// random instants. After each kill the store opens and verifies clean,
// every commit the client saw acknowledged is in the agent's history, the
// dead socket is reported as no server, and a new server takes over.
func TestServerKilled(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	rng := rand.New(rand.NewPCG(7, 9))
	var acked []objects.CID
	rounds := 8
	if testing.Short() {
		rounds = 3
	}
	for round := range rounds {
		child := exec.Command(os.Args[0], "-test.run=^$")
		child.Env = append(os.Environ(), "AGENTSTATE_SERVE_STORE="+dir)
		child.Stderr = os.Stderr
		if err := child.Start(); err != nil {
			t.Fatal(err)
		}
		var c *remote.Client
		for deadline := time.Now().Add(patience(t)); c == nil; time.Sleep(10 * time.Millisecond) {
			if c, err = remote.Dial(ctx, remote.SocketPath(dir), remote.DialOptions{}); err != nil && time.Now().After(deadline) {
				t.Fatalf("round %d: no server: %v", round, err)
			}
		}
		rr := repo.New(c)
		// The kill lands at a random instant after the round's first commit
		// is acknowledged (slow builds, -race, take longer to get there).
		killAt := time.Duration(5+rng.IntN(300)) * time.Millisecond
		var timer *time.Timer
		for i := 0; ; i++ {
			if i == 1 {
				timer = time.AfterFunc(killAt, func() { child.Process.Kill() })
			}
			size := 64 + rng.IntN(4096)
			if i%9 == 0 {
				size = 1 << 20
			}
			data := make([]byte, size)
			for k := range data {
				data[k] = byte(rng.Uint32())
			}
			v := objects.NewValue(data)
			key := fmt.Sprintf("k/%d/%d", round, i%50)
			id, err := rr.Edit(ctx, repo.EditRequest{Agent: "lumen", Create: true, Message: key, Blocks: []objects.Block{v},
				Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, key, v.CID) }})
			if err != nil {
				break // the server died
			}
			acked = append(acked, id)
		}
		if timer != nil {
			timer.Stop()
		}
		child.Wait()
		c.Close()
		if _, err := remote.Dial(ctx, remote.SocketPath(dir), remote.DialOptions{}); err == nil {
			t.Fatalf("round %d: a killed server still answers", round)
		}
		// The store opens, verifies clean, and holds every acknowledged commit.
		lr, err := repo.Open(dir, repo.Options{})
		if err != nil {
			t.Fatalf("round %d (killed at %s): open: %v", round, killAt, err)
		}
		rep, err := lr.Verify(ctx)
		if err != nil || len(rep.Problems) > 0 {
			t.Fatalf("round %d: verify: %v %v", round, err, rep.Problems)
		}
		h, err := lr.Refs.Head(ctx, "lumen")
		if err == nil {
			seen := map[objects.CID]bool{}
			for le, err := range dag.Log(ctx, lr.Blocks, h.Commit) {
				if err != nil {
					t.Fatal(err)
				}
				seen[le.CID] = true
			}
			for _, id := range acked {
				if !seen[id] {
					t.Fatalf("round %d: acknowledged commit %s is not in the history", round, id)
				}
			}
		} else if len(acked) > 0 {
			t.Fatalf("round %d: no HEAD after %d acknowledged commits: %v", round, len(acked), err)
		}
		lr.Close()
		t.Logf("round %d: killed at %s, %d commits acknowledged so far", round, killAt, len(acked))
	}
	if len(acked) == 0 {
		t.Fatal("no commit was ever acknowledged")
	}
}
