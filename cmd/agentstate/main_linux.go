package main

import (
	"syscall"

	"github.com/agentstate/agentstate/internal/front"
)

// It exits with syscall.Exit: package os is not linked (see internal/front).
func main() { syscall.Exit(front.Main()) }
