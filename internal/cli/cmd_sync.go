package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/refs"
	"github.com/urfave/cli/v2"
)

// Lineage between stores: clone, pull and send (dag/repo/sync.go). The other
// store is a directory (a store, or a directory holding .agentstate; reached
// through its server when one holds it) or HOST:PORT, a served store's TCP
// address (token in AGENTSTATE_TOKEN, CA in AGENTSTATE_REMOTE_CA).

func newCloneCommand(e *env) *cli.Command {
	return &cli.Command{Name: "clone", Usage: "copy agents with their whole history (and receipts) from another store into this one (created if missing)", ArgsUsage: "SRC [AGENT]...",
		Flags: []cli.Flag{jsonFlag()}, Action: e.runClone}
}

func newPullCommand(e *env) *cli.Command {
	return &cli.Command{Name: "pull", Usage: "bring the agent's new commits from another store: fast-forward, or merge as tasks merge", ArgsUsage: "SRC",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "ff-only", Usage: "refuse to merge: only a fast-forward"},
			&cli.StringFlag{Name: "from", Usage: "the other store's `AGENT` (default: the same name)"},
			jsonFlag(),
		}, Action: e.runPull}
}

func newSendCommand(e *env) *cli.Command {
	return &cli.Command{Name: "send", Usage: "send the agent's history to another store (the other way from pull): fast-forward or merge there", ArgsUsage: "DST",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "ff-only", Usage: "refuse to merge: only a fast-forward"},
			&cli.StringFlag{Name: "to", Usage: "the other store's `AGENT` (default: the same name)"},
			jsonFlag(),
		}, Action: e.runSend}
}

// syncReport is one agent's outcome (--json).
type syncReport struct {
	Agent    string           `json:"agent"`
	Stats    repo.SyncStats   `json:"transfer"`
	HEAD     repo.Integration `json:"head"`
	Receipts int              `json:"receipts"`
	// Redactions: the other store's redaction records taken here.
	Redactions repo.AddedRedactions `json:"redactions"`
}

// withOther runs fn against another store: spec is HOST:PORT or a directory.
func (e *env) withOther(spec string, write bool, fn func(r *repo.Repo) error) error {
	if spec == "" {
		return usagef("name the other store: a directory or HOST:PORT")
	}
	p := e.path(spec)
	if _, err := os.Stat(p); err != nil && strings.Contains(spec, ":") && !strings.Contains(spec, "/") {
		return e.withServer(spec, "", write, fn)
	}
	dir := p
	if badger.IsStoreDir(filepath.Join(p, repo.DirName)) {
		dir = filepath.Join(p, repo.DirName)
	}
	if !badger.IsStoreDir(dir) {
		return fmt.Errorf("%s is not an agentstate store (nor a directory holding %s), nor HOST:PORT", spec, repo.DirName)
	}
	if mine, err := e.storeDir(); err == nil && sameDir(mine, dir) {
		return fmt.Errorf("%s is this store", spec)
	}
	if err := e.withServer(remote.SocketPath(dir), dir, write, fn); !errors.Is(err, remote.ErrNoServer) {
		return err
	}
	lt, err := e.lockTimeout()
	if err != nil {
		return err
	}
	e.closed()
	r, err := repo.Open(dir, repo.Options{ReadOnly: !write, LockTimeout: lt})
	if err != nil && !write && !errors.Is(err, badger.ErrInUse) {
		r, err = repo.Open(dir, repo.Options{LockTimeout: lt}) // a read-only open refused: recover as a writer
	}
	if err != nil {
		return fmt.Errorf("opening %s: %w", spec, err)
	}
	err = fn(r)
	if cerr := r.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// transfer brings src's agent `from` into dst's agent `to`
// (repo.Transfer: nothing changes before the whole transfer is checked).
func (e *env) transfer(dst, src *repo.Repo, from, to string, ffOnly bool, op refs.Op, note string) (syncReport, error) {
	t, err := dst.Transfer(e.ctx, src, from, to, ffOnly, op, note)
	return syncReport{Agent: to, Stats: t.Stats, HEAD: t.HEAD, Receipts: t.Receipts, Redactions: t.Redactions}, err
}

func (e *env) printSync(rep syncReport) {
	h := rep.HEAD
	switch h.Outcome {
	case "up to date":
		fmt.Fprintf(e.stdout, "%s: up to date at %s\n", rep.Agent, h.To.Short())
	case "created":
		fmt.Fprintf(e.stdout, "%s: created at %s\n", rep.Agent, h.To.Short())
	default:
		fmt.Fprintf(e.stdout, "%s: %s %s -> %s\n", rep.Agent, h.Outcome, h.From.Short(), h.To.Short())
	}
	fmt.Fprintf(e.stdout, "%s: moved %d commits, %d blocks (%d bytes); %d receipts\n", rep.Agent, rep.Stats.Commits, rep.Stats.Blocks, rep.Stats.Bytes, rep.Receipts)
	if r := rep.Redactions; r.Added > 0 {
		fmt.Fprintf(e.stdout, "%s: %d redaction record(s) taken; %d block(s) of this store's removed", rep.Agent, r.Added, r.Removed)
		if r.Pending {
			fmt.Fprint(e.stdout, " (the rest at the next gc)")
		}
		fmt.Fprintln(e.stdout)
	}
}

func (e *env) runClone(c *cli.Context) error {
	if c.NArg() < 1 {
		return usagef("clone SRC [AGENT]...")
	}
	src, agents := c.Args().First(), c.Args().Tail()
	for _, a := range agents {
		if err := refs.ValidateAgent(a); err != nil {
			return err
		}
	}
	if d, err := e.storeDir(); errors.Is(err, repo.ErrNoStore) || (err == nil && !badger.IsWhole(d)) {
		dir := e.storeFlag
		if dir == "" {
			dir = repo.DirName
		}
		r, err := repo.Init(e.path(dir), repo.Options{})
		if err != nil {
			return err
		}
		if err := r.Close(); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "agentstate: created a store in %s\n", e.path(dir))
	}
	return e.withRepo(func(dst *repo.Repo) error {
		return e.withOther(src, false, func(s *repo.Repo) error {
			if len(agents) == 0 {
				heads, err := s.Refs.Agents(e.ctx)
				if err != nil {
					return err
				}
				for _, h := range heads {
					agents = append(agents, h.Agent)
				}
			}
			var reps []syncReport
			for _, a := range agents {
				if ok, err := dst.Refs.Exists(e.ctx, a); err != nil {
					return err
				} else if ok {
					return fmt.Errorf("agent %s already exists here: pull it instead (--agent %s pull %s)", a, a, src)
				}
				rep, err := e.transfer(dst, s, a, a, true, refs.OpClone, "clone from "+src)
				if err != nil {
					return fmt.Errorf("clone %s: %w", a, err)
				}
				reps = append(reps, rep)
				if !c.Bool("json") {
					e.printSync(rep)
				}
			}
			if c.Bool("json") {
				return e.writeJSON(reps)
			}
			return nil
		})
	})
}

func (e *env) runPull(c *cli.Context) error { return e.runPullSend(c, false) }

func (e *env) runSend(c *cli.Context) error { return e.runPullSend(c, true) }

// runPullSend is pull (the other store's agent --from into ours) and send
// (ours into the other store's agent --to).
func (e *env) runPullSend(c *cli.Context, send bool) error {
	if err := nargs(c, 1, 1); err != nil {
		return err
	}
	flag, note, mode := "from", "pull from "+c.Args().First(), e.withRepo
	if send {
		flag, note, mode = "to", "sent", e.withRepoRead
	}
	other := c.String(flag)
	if other == "" {
		other = e.agent
	}
	if err := refs.ValidateAgent(other); err != nil {
		return err
	}
	return mode(func(mine *repo.Repo) error {
		return e.withOther(c.Args().First(), send, func(o *repo.Repo) error {
			dst, src, from, to := mine, o, other, e.agent
			if send {
				dst, src, from, to = o, mine, e.agent, other
			}
			rep, err := e.transfer(dst, src, from, to, c.Bool("ff-only"), refs.OpPull, note)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return e.writeJSON(rep)
			}
			e.printSync(rep)
			return nil
		})
	})
}
