// Command agentstate-engine runs agentstate commands in the process that
// opens the store: every command when no server holds the store, and
// 'agentstate serve'. The agentstate command (cmd/agentstate) starts it; people
// type agentstate.
package main

import (
	"os"
	"runtime/debug"

	"github.com/agentstate/agentstate/internal/cli"
)

// memoryLimit is the engine's soft memory limit unless GOMEMLIMIT sets
// one: the collector runs early enough that a command over a million files
// (commit DIR holds the directory's listing, its stat cache and the new
// tree, about 470 MB) stays near what it holds, instead of twice that
// (Go's default lets the heap double between collections). Commands that
// hold little never reach it.
const memoryLimit = 576 << 20

func main() {
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(memoryLimit)
	}
	os.Exit(cli.RunProcess())
}
