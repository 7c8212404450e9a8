package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/urfave/cli/v2"
)

func newGCCommand(e *env) *cli.Command {
	return &cli.Command{Name: "gc", Usage: "delete blocks nothing reaches", ArgsUsage: " ",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "report only"}}, Action: e.runGC}
}

func (e *env) runGC(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	e.gatesOwnWrites = true
	return e.withRepo(func(r *repo.Repo) error {
		rep, err := r.GC(e.ctx, c.Bool("dry-run"))
		if err != nil {
			return err
		}
		verb := "freed"
		if c.Bool("dry-run") {
			verb = "would free"
		}
		fmt.Fprintf(e.stdout, "%s %d unreachable blocks (%d bytes); kept %d\n", verb, rep.Deleted, rep.BytesFreed, rep.Kept)
		if rep.Packed > 0 {
			fmt.Fprintf(e.stdout, "packed %d blocks of chunked values (%d bytes stored)\n", rep.Packed, rep.PackBytes)
		}
		return nil
	})
}
