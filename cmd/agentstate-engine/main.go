// Command agentstate-engine runs agentstate commands in the process that
// opens the store: every command when no server holds the store, and
// 'agentstate serve'. The agentstate command (cmd/agentstate) starts it; people
// type agentstate.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentstate/agentstate/internal/cli"
)

func main() { os.Exit(run()) }

// run executes the command line and returns the exit code: 0 success, 1 a
// failure, 2 a usage error, 3 an internal error (a bug, reported in one line).
func run() (code int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "agentstate: internal error: %v (this is a bug; the store is unchanged unless the command reported progress)\n", r)
			code = 3
		}
	}()
	return cli.Main(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
}
