package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/agentstate/agentstate/objects"
	"github.com/urfave/cli/v2"
)

func newOplogCommand(e *env) *cli.Command {
	return &cli.Command{Name: "oplog", Usage: "show the agent's operation log, newest first", ArgsUsage: " ",
		Flags: []cli.Flag{&cli.IntFlag{Name: "n", Value: -1, Usage: "show at most N entries"}, jsonFlag()}, Action: e.runOplog}
}

type oplogJSON struct {
	Seq    uint64      `json:"seq"`
	Op     string      `json:"op"`
	Old    objects.CID `json:"old"`
	New    objects.CID `json:"new"`
	Time   int64       `json:"time"`
	Task   string      `json:"task"`
	Target uint64      `json:"target,omitempty"`
	Note   string      `json:"note,omitempty"`
	Prev   string      `json:"prev"`
}

func (e *env) runOplog(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		if _, err := r.Refs.Head(e.ctx, e.agent); err != nil {
			return err
		}
		entries, err := r.Refs.Entries(e.ctx, e.agent)
		if err != nil {
			return err
		}
		out := []oplogJSON{}
		limit := c.Int("n")
		for i := len(entries) - 1; i >= 0; i-- {
			if limit >= 0 && len(entries)-1-i >= limit {
				break
			}
			en := entries[i]
			if c.Bool("json") {
				out = append(out, oplogJSON{en.Seq, string(en.Op), en.Old, en.New, en.Time, en.Task, en.Target, en.Note, en.Prev})
				continue
			}
			old := "(none)"
			if !en.Old.IsZero() {
				old = en.Old.Short()
			}
			line := fmt.Sprintf("%4d %-7s %s -> %s  %s", en.Seq, termsafe.Line(string(en.Op)), old, en.New.Short(), fmtTime(en.Time))
			if en.Task != "" {
				line += "  task=" + termsafe.Line(en.Task)
			}
			if en.Target != 0 {
				line += fmt.Sprintf("  (of operation %d)", en.Target)
			}
			if en.Note != "" {
				line += "  " + termsafe.Line(en.Note)
			}
			fmt.Fprintln(e.stdout, line)
		}
		if c.Bool("json") {
			return e.writeJSON(out)
		}
		return nil
	})
}
