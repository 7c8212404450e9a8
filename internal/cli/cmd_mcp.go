//go:build !lean

package cli

import (
	"context"
	"sync"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/mcpserver"
	"github.com/agentstate/agentstate/runtime"
	"github.com/urfave/cli/v2"
)

func newMcpCommand(e *env) *cli.Command {
	return &cli.Command{Name: "mcp", Usage: "serve the Model Context Protocol on stdin/stdout: the store's tools for an agent (docs/mcp.md)", ArgsUsage: " ",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "read-only", Usage: "offer the reads only"},
			&cli.BoolFlag{Name: "allow-redact", Usage: "offer the redact tool (off by default; never with --read-only), its records signed with --sign-key"},
			&cli.StringFlag{Name: "sign-key", Usage: "with --allow-redact: the operator ed25519 key `FILE` that signs redaction records (created, with FILE.pub, when missing)", EnvVars: []string{"AGENTSTATE_SIGN_KEY"}}},
		Action: e.runMcp}
}

func (e *env) runMcp(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	readOnly := c.Bool("read-only")
	// MCP writes hold the write gate one at a time (dag/inspect); the
	// session may last hours and must not hold it throughout.
	e.gatesOwnWrites = true
	o := mcpserver.Options{ReadOnly: readOnly, Agent: e.agent}
	if c.Bool("allow-redact") {
		if readOnly || c.String("sign-key") == "" {
			return usagef("mcp --allow-redact needs --sign-key FILE, and no --read-only")
		}
		key, err := runtime.LoadOrCreateKey(e.ctx, e.path(c.String("sign-key")))
		if err != nil {
			return err
		}
		o.RedactSigner = key
	}
	if e.served != nil {
		// The server that holds the store runs this session: its open
		// repository serves every call.
		with := e.withRepo
		if readOnly {
			with = e.withRepoRead
		}
		return with(func(r *repo.Repo) error {
			return mcpserver.ServeStdio(e.ctx, inspect.New(r), o, e.stdin, e.stdout)
		})
	}
	// Otherwise each call reaches the store as a command does, for that
	// call only: through the server that holds it, or by opening it (and
	// closing it after, so a free store stays free between calls; other
	// sessions and commands wait for the store's lock at most one call's
	// time). A server that starts or stops between calls is simply found
	// or missed by the next call.
	if e.remoteFlag == "" {
		if _, err := e.storeDir(); err != nil {
			return err
		}
	}
	var mu sync.Mutex // the calls of one session reach the store one at a time
	o.Open = func(ctx context.Context, write bool, fn func(*inspect.View) error) error {
		mu.Lock()
		defer mu.Unlock()
		return e.withRepoMode(readOnly || !write, func(r *repo.Repo) error { return fn(inspect.New(r)) })
	}
	return mcpserver.ServeStdio(e.ctx, nil, o, e.stdin, e.stdout)
}
