//go:build !lean

package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/walrus"
	"github.com/urfave/cli/v2"
)

func newRestoreCommand(e *env) *cli.Command {
	return &cli.Command{Name: "restore", Usage: "restore the agent from its pointer (or --blob) into the store", ArgsUsage: " ",
		Flags: append([]cli.Flag{keyFlag(),
			&cli.StringSliceFlag{Name: "identity", Aliases: []string{"i"}, Usage: "age identity `FILE` (AGE-SECRET-KEY-1..., mode 0600) for a snapshot encrypted to age recipients; repeatable", EnvVars: []string{"AGENTSTATE_IDENTITY"}},
			&cli.StringFlag{Name: "blob", Usage: "the blob `ID` to restore instead of the pointer's"},
			&cli.StringFlag{Name: "expect", Usage: "refuse unless the bundle hash is `HASH` (0x...)"},
			&cli.BoolFlag{Name: "history", Usage: "rebuild the whole history from the history manifest (push --history) instead of the snapshot: every commit, receipt and operator key"},
			&cli.StringSliceFlag{Name: "pub", Usage: "with --history: trusted operator public `KEY` (a file or 64 hex digits) that may sign the manifest; repeatable (default: the keys the store trusts for the agent, see trust ls)"},
			&cli.Int64Flag{Name: "min-seq", Usage: "with --history: refuse a manifest numbered below `N` (a store refuses one older than it has seen by itself)"},
			&cli.BoolFlag{Name: "ff-only", Usage: "with --history: refuse to merge when the agent's HEAD is not in the restored history"},
			jsonFlag()}, walrusFlags()...),
		Action: e.runRestore}
}

func (e *env) runRestore(c *cli.Context) error {
	if err := nargs(c, 0, 0); err != nil {
		return err
	}
	opts, err := restoreOptions(c.String("blob"), c.String("expect"))
	if err != nil {
		return err
	}
	if c.Bool("history") && opts.BlobID != "" {
		return usagef("restore --history reads the history pointer; --blob names a snapshot")
	}
	if !c.Bool("history") && (len(c.StringSlice("pub")) > 0 || c.Bool("ff-only") || c.IsSet("min-seq")) {
		return usagef("--pub, --ff-only and --min-seq go with restore --history")
	}
	if c.Int64("min-seq") < 0 {
		return usagef("--min-seq %d: a manifest's seq is 0 or more", c.Int64("min-seq"))
	}
	return e.withRepoCreate(func(r *repo.Repo) error {
		p, cleanup, err := e.pipeline(c, r, false)
		if err != nil {
			return err
		}
		defer cleanup()
		if c.Bool("history") {
			return e.restoreHistory(c, r, p)
		}
		var done func()
		opts.Progress, done = e.progress("restore")
		rec, err := p.Restore(e.ctx, e.agent, opts)
		done()
		if mk := (*envelope.MissingKeyError)(nil); errors.As(err, &mk) {
			if mk.Format == envelope.CipherAgeV1 {
				return fmt.Errorf("%w: give --identity FILE (the age identity of one of its recipients)", err)
			}
			return fmt.Errorf("%w: give --key FILE or AGENTSTATE_PASSPHRASE", err)
		}
		if err != nil {
			return err
		}
		if c.Bool("json") {
			return e.writeJSON(rec)
		}
		fmt.Fprintf(e.stdout, "restored %s from blob %s: HEAD at %s, tree %s, bundle %s, %d receipts re-ingested\n",
			e.agent, rec.BlobID, rec.Commit.Short(), rec.Tree, rec.BundleHash, rec.Receipts)
		return nil
	})
}

// restoreOptions checks restore's --blob (a Walrus blob id) and --expect (a
// 0x... bundle hash); either may be empty.
func restoreOptions(blob, expect string) (snapshot.RestoreOptions, error) {
	var opts snapshot.RestoreOptions
	if blob != "" {
		id, err := walrus.ParseBlobID(blob)
		if err != nil {
			return opts, err
		}
		opts.BlobID = id
	}
	if expect != "" {
		h, err := objects.ParseBundleHash(expect)
		if err != nil {
			return opts, usagef("--expect: %v", err)
		}
		opts.Expect = &h
	}
	return opts, nil
}

// withRepoCreate opens the store, creating it first if it does not exist
// (restore onto a wiped machine). When fn fails, a store it created is
// removed again, so a failed restore leaves the disk as it found it.
func (e *env) withRepoCreate(fn func(r *repo.Repo) error) error {
	var dir string
	if d, err := e.storeDir(); errors.Is(err, repo.ErrNoStore) {
		dir, _ = filepath.Abs(e.path(repo.DirName))
	} else if err == nil && !badger.IsWhole(d) && (e.storeFlag != "" || badger.HalfMade(d)) {
		dir = d
	}
	if dir == "" {
		return e.withRepo(fn)
	}
	undo, err := undoCreate(dir)
	if err != nil {
		return err
	}
	e.closed() // a read-only open this command closed before
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		undo()
		return err
	}
	r.Close()
	if err := e.withRepo(fn); err != nil {
		undo()
		return err
	}
	fmt.Fprintf(e.stderr, "created store %s\n", dir)
	return nil
}

// undoCreate returns a function that removes what creating a store in dir
// adds: the topmost directory that does not exist yet, or, when dir exists
// (it must then be empty to become a store), its new entries.
func undoCreate(dir string) (func(), error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(abs); err == nil {
		before, err := os.ReadDir(abs)
		if err != nil {
			return nil, err
		}
		had := map[string]bool{}
		for _, e := range before {
			had[e.Name()] = true
		}
		return func() {
			ents, _ := os.ReadDir(abs)
			for _, e := range ents {
				if !had[e.Name()] {
					os.RemoveAll(filepath.Join(abs, e.Name()))
				}
			}
		}, nil
	}
	top := abs
	for {
		parent := filepath.Dir(top)
		if parent == top {
			break
		}
		if _, err := os.Stat(parent); err == nil {
			break
		}
		top = parent
	}
	return func() { os.RemoveAll(top) }, nil
}
