// Command agentstate is the git-like command line of the agentstate store:
// time-travel debugging, undo, fork and audit of an agent's brain.
//
// It is deliberately small (internal/front): against a served store it
// hands the command line to the server; otherwise it runs the engine,
// agentstate-engine, which must be installed beside it.
package main

import (
	"syscall"

	"github.com/agentstate/agentstate/internal/front"
)

// It exits with syscall.Exit: package os is not linked (see internal/front).
func main() { syscall.Exit(front.Main()) }
