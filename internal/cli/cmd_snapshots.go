package cli

import (
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/internal/termsafe"
	"github.com/urfave/cli/v2"
)

func newSnapshotsCommand(e *env) *cli.Command {
	return &cli.Command{Name: "snapshots", Usage: "list pushes and restores: blob id, commit, bundle hash, end epoch", ArgsUsage: " ",
		Flags:  []cli.Flag{&cli.BoolFlag{Name: "all", Usage: "every agent"}, &cli.Int64Flag{Name: "epoch", Usage: "the current Walrus `EPOCH`, to warn before blobs expire"}, jsonFlag()},
		Action: e.runSnapshots}
}

func (e *env) runSnapshots(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	return e.withRepoRead(func(r *repo.Repo) error {
		agent := e.agent
		if c.Bool("all") {
			agent = ""
		}
		recs, err := snapshot.Records(e.ctx, r, agent)
		if err != nil {
			return err
		}
		if c.Bool("json") {
			if recs == nil {
				recs = []snapshot.Record{}
			}
			return e.writeJSON(recs)
		}
		epoch := c.Int64("epoch")
		for i := len(recs) - 1; i >= 0; i-- {
			rec := recs[i]
			if rec.Error != "" {
				fmt.Fprintf(e.stdout, "%s %-7s %-8s FAILED %s: %s\n", fmtTime(rec.Time), termsafe.Line(rec.Op), termsafe.Line(rec.Agent), rec.Commit.Short(), termsafe.Line(oneLine(rec.Error)))
				continue
			}
			line := fmt.Sprintf("%s %-7s %-8s %s %s %s", fmtTime(rec.Time), termsafe.Line(rec.Op), termsafe.Line(rec.Agent), termsafe.Line(string(rec.BlobID)), rec.Commit.Short(), termsafe.Line(rec.BundleHash))
			if rec.EndEpoch > 0 {
				line += fmt.Sprintf(" until epoch %d", rec.EndEpoch)
				if epoch > 0 && rec.EndEpoch-epoch <= 1 {
					line += " (EXPIRES SOON: push again)"
				}
				if epoch > 0 && rec.EndEpoch <= epoch {
					line += " (EXPIRED)"
				}
			}
			fmt.Fprintln(e.stdout, line)
		}
		return nil
	})
}
