package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/urfave/cli/v2"
)

func newVerifyCommand(e *env) *cli.Command {
	return &cli.Command{Name: "verify", Usage: "re-hash every reachable block and check every operation log", ArgsUsage: " ",
		Flags:  []cli.Flag{jsonFlag(), &cli.BoolFlag{Name: "repair", Usage: "first rebuild the caches derived from the objects (the commit graph, the task records, the list size records), then verify"}},
		Action: e.runVerify}
}

func (e *env) runVerify(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	with := e.withRepoRead
	if c.Bool("repair") {
		with = e.withRepo
	}
	return with(func(r *repo.Repo) error {
		if c.Bool("repair") {
			n, err := r.RebuildGraph(e.ctx)
			if err != nil {
				return fmt.Errorf("rebuilding the commit graph: %w", err)
			}
			if !c.Bool("json") {
				fmt.Fprintf(e.stdout, "rebuilt the commit graph: %d commits\n", n)
			}
			t, err := r.RebuildTaskRecords(e.ctx)
			if err != nil {
				return fmt.Errorf("rebuilding the task records: %w", err)
			}
			if !c.Bool("json") {
				fmt.Fprintf(e.stdout, "rebuilt the task records: %d tape lines\n", t)
			}
			if n, err := r.RepairPacks(e.ctx); err != nil {
				return fmt.Errorf("repairing packs: %w", err)
			} else if n > 0 && !c.Bool("json") {
				fmt.Fprintf(e.stdout, "dropped %d pointer(s) into missing or damaged packs: those blocks now read as missing; committing the same content again, or a fetch from a copy, stores them\n", n)
			}
			l, err := r.RebuildListSizes(e.ctx)
			if err != nil {
				return fmt.Errorf("rebuilding the list size records: %w", err)
			}
			if !c.Bool("json") {
				fmt.Fprintf(e.stdout, "rebuilt the list size records: %d chunk list nodes\n", l)
			}
		}
		rep, err := r.Verify(e.ctx)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			if rep.Problems == nil {
				rep.Problems = []string{}
			}
			if err := e.writeJSON(struct {
				OK       bool     `json:"ok"`
				Agents   int      `json:"agents"`
				Commits  int      `json:"commits"`
				Blocks   int      `json:"blocks"`
				Problems []string `json:"problems"`
			}{len(rep.Problems) == 0, rep.Agents, rep.Commits, rep.Blocks, rep.Problems}); err != nil {
				return err
			}
		} else {
			for _, p := range rep.Problems {
				fmt.Fprintf(e.stdout, "problem: %s\n", termsafe.Line(fmt.Sprint(p)))
			}
		}
		if len(rep.Problems) > 0 && rep.GraphProblems == len(rep.Problems) && !c.Bool("repair") {
			return fmt.Errorf("verify found %d problem(s), all in the commit graph, a cache of the commits: agentstate verify --repair rebuilds it", len(rep.Problems))
		}
		if len(rep.Problems) > 0 && rep.GraphProblems+rep.TaskRecordProblems+rep.ListSizeProblems == len(rep.Problems) && !c.Bool("repair") {
			return fmt.Errorf("verify found %d problem(s), all in caches (the commit graph, the task records, the list size records) derived from the objects and receipts: agentstate verify --repair rebuilds them", len(rep.Problems))
		}
		if len(rep.Problems) > 0 {
			return fmt.Errorf("verify found %d problem(s)", len(rep.Problems))
		}
		if !c.Bool("json") {
			fmt.Fprintf(e.stdout, "ok: %d agents, %d commits, %d blocks verified\n", rep.Agents, rep.Commits, rep.Blocks)
		}
		return nil
	})
}
