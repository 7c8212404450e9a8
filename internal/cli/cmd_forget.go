package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/urfave/cli/v2"
)

// policyFlags are the --keep-* flags of forget (and serve).
func policyFlags() []cli.Flag {
	keep := func(name, what string) cli.Flag {
		return &cli.IntFlag{Name: "keep-" + name, Usage: what + " (-1: all)"}
	}
	return []cli.Flag{
		keep("last", "keep the newest `N` states"),
		keep("hourly", "keep the newest state of each of the last `N` hours that have one"),
		keep("daily", "... of each of the last `N` days"),
		keep("weekly", "... of each of the last `N` ISO weeks"),
		keep("monthly", "... of each of the last `N` months"),
		keep("yearly", "... of each of the last `N` years"),
		&cli.StringFlag{Name: "keep-within", Usage: "keep every state within `DURATION` of the newest (e.g. 36h, 7d, 2w3d)"},
	}
}

// policyOf reads the --keep-* flags (a zero Policy when none is set).
func policyOf(c *cli.Context) (repo.Policy, error) {
	p := repo.Policy{Last: c.Int("keep-last"), Hourly: c.Int("keep-hourly"), Daily: c.Int("keep-daily"),
		Weekly: c.Int("keep-weekly"), Monthly: c.Int("keep-monthly"), Yearly: c.Int("keep-yearly")}
	if s := c.String("keep-within"); s != "" {
		d, err := parseWithin(s)
		if err != nil {
			return p, usagef("--keep-within %q: %v", s, err)
		}
		p.Within = d
	}
	for _, n := range []int{p.Last, p.Hourly, p.Daily, p.Weekly, p.Monthly, p.Yearly} {
		if n < -1 {
			return p, usagef("a --keep-* count must be -1 (all) or more")
		}
	}
	return p, nil
}

func newForgetCommand(e *env) *cli.Command {
	return &cli.Command{Name: "forget", Usage: "keep the states a retention policy selects, cut the rest of the history, and free its space", ArgsUsage: " ",
		Flags: append(policyFlags(),
			&cli.BoolFlag{Name: "all", Usage: "every agent"},
			&cli.BoolFlag{Name: "dry-run", Aliases: []string{"n"}, Usage: "say what would be cut and freed; change nothing"},
			jsonFlag(),
		),
		Action: e.runForget}
}

func (e *env) runForget(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	p, err := policyOf(c)
	if err != nil {
		return err
	}
	if p.IsZero() {
		return usagef("forget needs a policy: at least one --keep-* flag (HEAD and tagged commits are always kept; --keep-last 1 keeps only them)")
	}
	dry := c.Bool("dry-run")
	e.gatesOwnWrites = true // forget waits for writers as gc does
	return e.withRepo(func(r *repo.Repo) error {
		if !c.Bool("all") {
			rep, err := r.Forget(e.ctx, e.agent, p, dry)
			if err != nil {
				return fmt.Errorf("forget %s: %w", e.agent, err)
			}
			if c.Bool("json") {
				return e.writeJSON([]repo.ForgetReport{rep})
			}
			e.printForget(rep)
			e.printCollected(rep.GC, dry)
			return nil
		}
		// Every agent, then one collection: it walks the whole store.
		heads, err := r.Refs.Agents(e.ctx)
		if err != nil {
			return err
		}
		var agents []string
		for _, h := range heads {
			agents = append(agents, h.Agent)
		}
		reps, gc, err := r.ForgetAgents(e.ctx, agents, p, dry)
		if c.Bool("json") {
			if reps == nil {
				reps = []repo.ForgetReport{}
			}
			if jerr := e.writeJSON(struct {
				Reports []repo.ForgetReport `json:"reports"`
				GC      repo.GCReport       `json:"gc"`
			}{reps, gc}); jerr != nil {
				return jerr
			}
			return err // it names the agents that failed
		}
		for _, rep := range reps {
			e.printForget(rep)
		}
		if len(reps) > 0 {
			e.printCollected(gc, dry)
		}
		return err // it names the agents that failed
	})
}

func (e *env) printForget(rep repo.ForgetReport) {
	would := func(s, w string) string {
		if rep.DryRun {
			return w
		}
		return s
	}
	fmt.Fprintf(e.stdout, "%s: %s: keep %d of %d states", rep.Agent, rep.Policy, rep.KeptStates, rep.States)
	if rep.Islands > 0 {
		fmt.Fprintf(e.stdout, " (%d older than the horizon %s)", rep.Islands, rep.Horizon.Short())
	} else if !rep.Horizon.IsZero() {
		fmt.Fprintf(e.stdout, " (horizon %s)", rep.Horizon.Short())
	}
	fmt.Fprintln(e.stdout)
	if rep.Unchanged {
		fmt.Fprintf(e.stdout, "%s: nothing to cut\n", rep.Agent)
	} else {
		fmt.Fprintf(e.stdout, "%s: %s %d operations and %d commits\n", rep.Agent, would("cut", "would cut"), rep.CutOps, rep.CutCommits)
	}
	const show = 10
	for i, s := range rep.Forgotten {
		if i == show {
			fmt.Fprintf(e.stdout, "  ... and %d more (--json lists every one)\n", len(rep.Forgotten)-show)
			break
		}
		fmt.Fprintf(e.stdout, "  %s operation %d  %s  %s\n", would("forgot", "forget"), s.Seq, s.Commit.Short(), fmtTime(s.Time))
	}
}

// printCollected reports the collection after a forget.
func (e *env) printCollected(gc repo.GCReport, dryRun bool) {
	verb := "freed"
	if dryRun {
		verb = "would free"
	}
	fmt.Fprintf(e.stdout, "%s %d unreachable blocks (%d bytes); kept %d\n", verb, gc.Deleted, gc.BytesFreed, gc.Kept)
}

// parseWithin reads a duration: Go's (36h, 90m) or restic's with days and
// weeks (7d, 2w3d12h).
func parseWithin(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return 0, errors.New("must be positive")
		}
		return d, nil
	}
	var total time.Duration
	rest := s
	for rest != "" {
		i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
		if i <= 0 {
			return 0, errors.New("want NUMBER and a unit (w, d, h, m), e.g. 7d or 2w3d12h")
		}
		n, err := strconv.Atoi(rest[:i])
		if err != nil {
			return 0, err
		}
		unit := map[byte]time.Duration{'w': 7 * 24 * time.Hour, 'd': 24 * time.Hour, 'h': time.Hour, 'm': time.Minute}[rest[i]]
		if unit == 0 {
			return 0, fmt.Errorf("unknown unit %q (w, d, h, m)", rest[i])
		}
		total += time.Duration(n) * unit
		rest = rest[i+1:]
	}
	if total <= 0 {
		return 0, errors.New("must be positive")
	}
	return total, nil
}
