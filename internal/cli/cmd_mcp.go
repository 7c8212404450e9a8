package cli

import (
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/inspect"
	"github.com/agentstate/agentstate/internal/mcpserver"
	"github.com/urfave/cli/v2"
)

func newMcpCommand(e *env) *cli.Command {
	return &cli.Command{Name: "mcp", Usage: "serve the Model Context Protocol on stdin/stdout: the store's tools for an agent (docs/mcp.md)", ArgsUsage: " ",
		Flags:  []cli.Flag{&cli.BoolFlag{Name: "read-only", Usage: "offer the reads only"}},
		Action: e.runMcp}
}

func (e *env) runMcp(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	// MCP writes hold the write gate one at a time (internal/inspect); the
	// session may last hours and must not hold it throughout.
	e.gatesOwnWrites = true
	with := e.withRepo
	if c.Bool("read-only") {
		with = e.withRepoRead
	}
	return with(func(r *repo.Repo) error {
		return mcpserver.ServeStdio(e.ctx, inspect.New(r), mcpserver.Options{ReadOnly: c.Bool("read-only"), Agent: e.agent}, e.stdin, e.stdout)
	})
}
