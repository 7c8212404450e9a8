//go:build !lean

package cli

import "github.com/urfave/cli/v2"

// Lean reports whether this build is the lean engine (build tag lean),
// which leaves out the commands that link go-ethereum (push and restore,
// through ENS), the MCP SDK (mcp) and the page (serve): their packages'
// initialisers cost every command's start about 2 ms (docs/performance.md,
// "Where a person waits, a fourth time"). The front end starts the lean
// engine, which hands those commands to the full one (NeedsFullEngine).
const Lean = false

// fullOnly builds the commands only the full engine has.
var fullOnly = map[string]func(*env) *cli.Command{
	"mcp":     newMcpCommand,
	"push":    newPushCommand,
	"restore": newRestoreCommand,
	"serve":   newServeCommand,
}
