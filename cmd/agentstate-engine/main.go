// Command agentstate-engine runs agentstate commands in the process that
// opens the store: every command when no server holds the store, and
// 'agentstate serve'. The agentstate command (cmd/agentstate) starts it; people
// type agentstate.
package main

import (
	"os"

	"github.com/agentstate/agentstate/internal/cli"
)

func main() { os.Exit(cli.RunProcess()) }
