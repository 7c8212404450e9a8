package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/urfave/cli/v2"
)

func newAgentsCommand(e *env) *cli.Command {
	return &cli.Command{Name: "agents", Usage: "list agents", ArgsUsage: " ", Flags: []cli.Flag{jsonFlag()}, Action: e.agentsAction}
}

type agentsOptions struct {
	readOpts
	JSON bool
}

func (e *env) agentsAction(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	o := agentsOptions{JSON: c.Bool("json")}
	return e.withRepoRead(func(r *repo.Repo) error {
		o.readOpts = e.readOpts(r)
		return runAgents(e.ctx, o, c.Args().Slice(), e.stdout)
	})
}

// runAgents renders the read model's agents (inspect.View.Agents; --json
// is its []inspect.Agent), marking the agent in effect.
func runAgents(ctx context.Context, o agentsOptions, args []string, out io.Writer) error {
	if len(args) != 0 {
		return usagef("agents: takes no arguments")
	}
	as, err := o.View.Agents(ctx)
	if err != nil {
		return err
	}
	if o.JSON {
		return o.out(ctx, out).writeJSON(as)
	}
	for _, a := range as {
		mark := " "
		if a.Name == o.Agent {
			mark = "*"
		}
		fmt.Fprintf(out, "%s %-20s %s  (%d operations)\n", mark, termsafe.Line(a.Name), a.Head.Short(), a.Seq)
	}
	return nil
}
