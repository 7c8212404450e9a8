package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newAgentsCommand(e *env) *cli.Command {
	return &cli.Command{Name: "agents", Usage: "list agents", ArgsUsage: " ", Flags: []cli.Flag{jsonFlag()}, Action: e.runAgents}
}

type agentJSON struct {
	Agent      string      `json:"agent"`
	Head       objects.CID `json:"head"`
	Operations uint64      `json:"operations"`
}

func (e *env) runAgents(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		heads, err := r.Refs.Agents(e.ctx)
		if err != nil {
			return err
		}
		out := []agentJSON{}
		for _, h := range heads {
			if c.Bool("json") {
				out = append(out, agentJSON{h.Agent, h.Commit, h.Seq})
				continue
			}
			mark := " "
			if h.Agent == e.agent {
				mark = "*"
			}
			fmt.Fprintf(e.stdout, "%s %-20s %s  (%d operations)\n", mark, termsafe.Line(h.Agent), h.Commit.Short(), h.Seq)
		}
		if c.Bool("json") {
			return e.writeJSON(out)
		}
		return nil
	})
}
