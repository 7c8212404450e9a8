// Package cliexec links the agentstate command line into a program that
// embeds the runtime, so that the runtime's server runs whole command lines
// in-process:
//
//	rt, err := runtime.Open(ctx, runtime.Options{..., Serve: runtime.ServeOptions{Exec: cliexec.Exec}})
//
// Every agentstate command against the runtime's store then costs what a
// hello-world program does plus the work itself. It adds the command line's
// dependencies (ENS through go-ethereum among them) to the program, which is
// why the runtime does not import it by default.
package cliexec

import (
	"context"
	"io"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/internal/cli"
)

// Exec runs one agentstate command line against r for a client (a
// remote.ExecFunc).
func Exec(ctx context.Context, r *repo.Repo, req remote.ExecRequest, stdin io.Reader, stdout, stderr io.Writer) int {
	return cli.Exec(ctx, r, req, stdin, stdout, stderr)
}
