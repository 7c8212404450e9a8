package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/urfave/cli/v2"
)

func newLsCommand(e *env) *cli.Command {
	return &cli.Command{Name: "ls", Usage: "list keys", ArgsUsage: "[PREFIX]",
		Flags: []cli.Flag{atFlag(), bytesFlag(),
			&cli.BoolFlag{Name: "long", Aliases: []string{"l"}, Usage: "show value CID and size"}, jsonFlag()},
		Action: e.lsAction}
}

type lsOptions struct {
	readOpts
	At         string // the revision
	Long, JSON bool
}

func (e *env) lsAction(c *cli.Context) error {
	if err := nargs(c, 0, 1); err != nil {
		return err
	}
	o := lsOptions{At: c.String("at"), Long: c.Bool("long"), JSON: c.Bool("json")}
	return e.withRepoRead(func(r *repo.Repo) error {
		o.readOpts = e.readOpts(r)
		return runLs(e.ctx, o, c.Args().Slice(), e.stdout)
	})
}

// runLs renders the read model's listing (inspect.View.ListWith; --json is
// its []inspect.Entry) of the keys under args[0] (default all). Without -l
// or --json no value is read, not even a small one for its size.
func runLs(ctx context.Context, o lsOptions, args []string, out io.Writer) error {
	if len(args) > 1 {
		return usagef("ls: takes at most 1 argument, PREFIX")
	}
	prefix := ""
	if len(args) == 1 {
		prefix = args[0]
	}
	es, _, err := o.View.ListWith(ctx, o.Agent, inspect.ListOptions{Rev: o.At, Prefix: prefix, NoSizes: !o.Long && !o.JSON})
	if err != nil {
		return err
	}
	if o.JSON {
		return o.out(ctx, out).writeJSON(es)
	}
	for _, en := range es {
		if o.Long {
			size := o.out(ctx, out).size(int64(en.Size))
			if en.Redacted != nil {
				size = "redacted"
			}
			fmt.Fprintf(out, "%s %9s %s\n", en.CID.Short(), size, termsafe.Line(en.Key))
		} else {
			fmt.Fprintln(out, termsafe.Line(en.Key))
		}
	}
	return nil
}
