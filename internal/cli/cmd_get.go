package cli

import (
	"context"
	"io"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newGetCommand(e *env) *cli.Command {
	return &cli.Command{Name: "get", Usage: "print one key's value", ArgsUsage: "KEY",
		Flags: []cli.Flag{atFlag(), jsonFlag()}, Action: e.getAction}
}

type getOptions struct {
	readOpts
	At   string // the revision
	JSON bool
}

func (e *env) getAction(c *cli.Context) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	o := getOptions{At: c.String("at"), JSON: c.Bool("json")}
	return e.withRepoRead(func(r *repo.Repo) error {
		o.readOpts = e.readOpts(r)
		return runGet(e.ctx, o, c.Args().Slice(), e.stdout)
	})
}

// runGet prints the value of args[0] at o.At: its content, streamed a chunk
// at a time (a chunked value's sha256 is checked at its end, before its
// last piece is written: a mismatch fails the command with its output
// short); with --json, the read model's inspect.Value, content whole.
func runGet(ctx context.Context, o getOptions, args []string, out io.Writer) error {
	if len(args) != 1 {
		return usagef("get: takes 1 argument, KEY")
	}
	if o.JSON {
		v, err := o.View.Get(ctx, o.Agent, o.At, args[0], -1)
		if err != nil {
			return err
		}
		return o.out(ctx, out).writeJSON(v)
	}
	_, rd, err := o.View.Open(ctx, o.Agent, o.At, args[0])
	if err != nil {
		return err
	}
	_, err = objects.CopyValue(out, rd)
	return err
}
