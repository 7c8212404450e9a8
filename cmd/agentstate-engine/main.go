// Command agentstate-engine runs agentstate commands in the process that
// opens the store: every command when no server holds the store, and
// 'agentstate serve'. The agentstate command (cmd/agentstate) starts it; people
// type agentstate.
//
// Built with the tag lean it is agentstate-engine-lean: every command but
// those linking go-ethereum, the MCP SDK and the page (cli.Lean), which it
// hands to agentstate-engine beside it. The front end starts the lean
// engine when it is installed, the full one otherwise.
package main

import (
	"os"
	"runtime"
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

// firstGCPercent is the collector's setting until its first collection
// (unless GOGC sets one): Go's first goal is 4 MiB × GOGC/100, and a
// writable store's open alone allocates a 12 MiB memtable arena, so at the
// default every unserved write ran a whole collection (its mark workers'
// threads and stacks, some 350 page faults) for a heap it was about to
// drop at exit. At 800 the first goal is 32 MiB; after that first
// collection, which a command holding more than that reaches, the setting
// is Go's default again.
const firstGCPercent = 800

func main() {
	if cli.NeedsFullEngine(os.Args) {
		os.Exit(cli.ExecFullEngine(os.Args))
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(memoryLimit)
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		startGC()
	}
	os.Exit(cli.RunProcess())
}

// startGC sets firstGCPercent and restores the default once the first
// collection has run: a cleanup of an object nothing reaches runs after
// the collection that finds it unreachable.
func startGC() {
	prev := debug.SetGCPercent(firstGCPercent)
	sentinel := new(gcSentinel)
	runtime.AddCleanup(sentinel, func(p int) { debug.SetGCPercent(p) }, prev)
}

// gcSentinel holds a pointer so that it is not placed in a tiny-object
// block, whose cleanups may never run.
type gcSentinel struct{ _ *byte }
