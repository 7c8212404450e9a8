package cli

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"os"
	"sync"

	"github.com/agentstate/agentstate/runtime"
)

// tasksFixture is agentstate-tasks STORE AGENT: a runtime (not serving)
// lands a fixed set of tasks on AGENT and closes. "plan" (model m-1,
// adapter a-1) writes two keys; "fix" lands twice, attempts 1 and 2; "slow"
// and "fast" run at once on different keys, so "slow" lands as a merge;
// "tidy" puts a key and deletes another. The operator key is fixed.
func tasksFixture(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: agentstate-tasks STORE AGENT")
		return 2
	}
	ctx := context.Background()
	seed := sha256.Sum256([]byte("tasks fixture operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: args[0], Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentstate-tasks:", err)
		return 1
	}
	agent := args[1]
	failed := false
	land := func(task runtime.Task, fn func(context.Context, *runtime.Tx) error) {
		if _, err := rt.RunTask(ctx, agent, task, fn); err != nil {
			fmt.Fprintln(os.Stderr, "agentstate-tasks:", err)
			failed = true
		}
	}
	puts := func(kv ...string) func(context.Context, *runtime.Tx) error {
		return func(ctx context.Context, tx *runtime.Tx) error {
			for i := 0; i+1 < len(kv); i += 2 {
				if err := tx.Put(ctx, kv[i], []byte(kv[i+1])); err != nil {
					return err
				}
			}
			return nil
		}
	}
	land(runtime.Task{ID: "plan", Model: "m-1", Adapter: "a-1"}, puts("skills/plan.md", "step one\n", "memory/facts.md", "the sky is blue\n"))
	land(runtime.Task{ID: "fix", Attempt: "1", Model: "m-1"}, puts("skills/plan.md", "step one\nstep two\n"))
	land(runtime.Task{ID: "fix", Attempt: "2", Model: "m-2"}, puts("skills/plan.md", "step one\nstep 2\n", "memory/facts.md", "the sky is grey\n"))
	in, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		land(runtime.Task{ID: "slow", Model: "m-2"}, func(ctx context.Context, tx *runtime.Tx) error {
			if err := tx.Put(ctx, "notes/slow.md", []byte("slow work\n")); err != nil {
				close(in)
				return err
			}
			close(in)
			<-release
			return nil
		})
	}()
	<-in
	land(runtime.Task{ID: "fast", Model: "m-2"}, puts("notes/fast.md", "fast work\n"))
	close(release)
	wg.Wait()
	land(runtime.Task{ID: "tidy", Model: "m-2"}, func(ctx context.Context, tx *runtime.Tx) error {
		if err := tx.Put(ctx, "notes/tidy.md", []byte("tidied\n")); err != nil {
			return err
		}
		return tx.Delete(ctx, "notes/fast.md")
	})
	if err := rt.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "agentstate-tasks: close:", err)
		return 1
	}
	if failed {
		return 1
	}
	return 0
}
