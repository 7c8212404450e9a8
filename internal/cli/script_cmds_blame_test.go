package cli

import (
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"

	"github.com/agentstate/agentstate/runtime"
	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// runtask AGENT TASK KEY FILE [KEY FILE...]: land one runtime task on
	// the store in $WORK/.agentstate that puts each KEY to FILE's content
	// (one commit per put, the task's metadata on each).
	scriptCmds["runtask"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) < 4 || len(args)%2 != 0 {
			ts.Fatalf("usage: runtask AGENT TASK KEY FILE [KEY FILE...]")
		}
		_, key, err := ed25519.GenerateKey(nil)
		ts.Check(err)
		ctx := context.Background()
		rt, err := runtime.Open(ctx, runtime.Options{Store: filepath.Join(ts.Getenv("WORK"), ".agentstate"), Signer: key, NoServe: true})
		ts.Check(err)
		_, err = rt.RunTask(ctx, args[0], runtime.Task{ID: args[1]}, func(ctx context.Context, tx *runtime.Tx) error {
			for i := 2; i < len(args); i += 2 {
				data, err := os.ReadFile(ts.MkAbs(args[i+1]))
				if err != nil {
					return err
				}
				if err := tx.Put(ctx, args[i], data); err != nil {
					return err
				}
			}
			return nil
		})
		ts.Check(rt.Close())
		ts.Check(err)
	}
}
