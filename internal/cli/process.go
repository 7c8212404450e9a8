package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// engineName is the program that runs commands in its own process
// (cmd/agentstate-engine); on Linux the agentstate front end starts it.
const engineName = "agentstate-engine"

// RunProcess runs this process's command line and returns its exit code: 0
// success, 1 a failure, 2 a usage error, 3 an internal error (a bug,
// reported in one line). An interrupt or SIGTERM cancels the command. It is
// the whole of agentstate-engine, and of agentstate where the fast front end
// (internal/front, Linux only) is not built.
func RunProcess() (code int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "agentstate: internal error: %v (this is a bug; the store is unchanged unless the command reported progress)\n", r)
			code = 3
		}
	}()
	return mainIn(ctx, true, os.Args, os.Stdin, os.Stdout, os.Stderr)
}
