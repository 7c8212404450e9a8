package cli

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"os"
	"strings"

	"github.com/agentstate/agentstate/runtime"
)

// taskFixture is agentstate-task STORE AGENT TASK KEY=FILE...: a runtime
// (the tasks fixture's operator key) lands one task that puts each FILE's
// content at KEY, with its receipt.
func taskFixture(args []string) int {
	if len(args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: agentstate-task STORE AGENT TASK KEY=FILE...")
		return 2
	}
	ctx := context.Background()
	seed := sha256.Sum256([]byte("tasks fixture operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: args[0], Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentstate-task:", err)
		return 1
	}
	defer rt.Close()
	_, err = rt.RunTask(ctx, args[1], runtime.Task{ID: args[2], Model: "m-1", Adapter: "a-1"}, func(ctx context.Context, tx *runtime.Tx) error {
		for _, kv := range args[3:] {
			k, f, _ := strings.Cut(kv, "=")
			data, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			if err := tx.Put(ctx, k, data); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentstate-task:", err)
		return 1
	}
	return 0
}
