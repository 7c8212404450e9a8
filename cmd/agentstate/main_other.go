//go:build !linux

package main

import (
	"os"

	"github.com/agentstate/agentstate/internal/cli"
)

// Where the fast front end is not built (it speaks Linux system calls),
// agentstate is the engine itself: a served store is reached through its
// API, as agentstate-engine reaches it.
func main() { os.Exit(cli.RunProcess()) }
