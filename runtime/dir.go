package runtime

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

// racyWindow, when positive, replaces export.RacyWindow for the directory
// stat cache (tests shorten it).
var racyWindow time.Duration

// dirState serialises the tasks of one working directory.
type dirState struct {
	sem chan struct{} // one task per directory at a time
	// owned: a checkout of this runtime made the directory (held under sem).
	owned bool
}

func (rt *Runtime) dir(abs string) *dirState {
	d, _ := rt.dirs.LoadOrStore(abs, &dirState{sem: make(chan struct{}, 1)})
	return d.(*dirState)
}

// DirStats reports what the last directory scan did.
type DirStats struct {
	Files   int // regular files in the directory
	Read    int // files read and hashed (new, changed, or not trusted)
	Skipped []export.Skipped
}

// RunDirTask runs a task that edits an agent's brain as files in dir, for
// harnesses that work on a directory rather than through a Tx.
//
// Before fn runs, dir is made to hold exactly the agent's HEAD (created if
// missing; files the tree lacks are removed, bundle.lock.json and
// receipts.ndjson excepted). The first task in a directory (for this
// runtime) replaces and removes only what the store wrote there (the stat
// cache below records it) or files identical to HEAD's: any other file in
// the way fails the task before anything changes (export.ErrNotOwned,
// naming the files), so a directory that is not the runtime's is never
// emptied. A .git there is never touched, and a HEAD holding one is
// refused (export.ErrGitDir). After fn returns nil, the directory is scanned
// and committed as one commit of the task (message "task ID: directory"),
// which then lands exactly as a RunTask task does (merge, conflict, receipt,
// snapshot). The checkout and the scan share the directory's stat cache,
// export's (the one 'agentstate commit DIR' uses): a file whose size,
// mtime, ctime, inode and device are what the last checkout or scan
// recorded, and whose mtime was older than that recording by more than
// export.RacyWindow, is neither compared nor read again. The cache lives in
// the store directory (repo.Repo.StatCache), or in memory for an in-memory
// runtime; gc drops it. Symlinks, devices and other non-regular files are
// skipped and listed in the returned stats.
//
// One directory serves one task at a time: a second RunDirTask on the same
// directory waits for the first (or for ctx). Once a task's checkout has
// made it, the directory belongs to the runtime between tasks: edits made
// outside a task are undone by the next task's checkout. A failed task
// leaves its edits on disk until then.
func (rt *Runtime) RunDirTask(ctx context.Context, agent string, task Task, dir string, fn func(ctx context.Context, dir string) error) (*Receipt, DirStats, error) {
	var stats DirStats
	if err := refs.ValidateAgent(agent); err != nil {
		return nil, stats, err
	}
	if err := task.validate(); err != nil {
		return nil, stats, err
	}
	if fn == nil {
		return nil, stats, fmt.Errorf("%w: nil task function", ErrBadTask)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, stats, fmt.Errorf("%w: %s: %w", ErrDirNotWorkspace, dir, err)
	}
	if err := rt.enter(); err != nil {
		return nil, stats, err
	}
	defer rt.leave()
	// A gc run through the server waits for the task's blocks to land
	// (a task must not start another task: the gate does not nest).
	defer rt.repo.HoldWrites()()
	ds := rt.dir(abs)
	select {
	case ds.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, stats, fmt.Errorf("runtime: waiting for working directory %s: %w", abs, ctx.Err())
	}
	defer func() { <-ds.sem }()

	tx, err := rt.begin(ctx, agent, task)
	if err != nil {
		return nil, stats, err
	}
	if err := rt.prepareDir(ctx, abs, tx.start, tx.startTree, ds.owned); err != nil {
		tx.finish()
		return nil, stats, err
	}
	ds.owned = true
	if err := runFn(ctx, task, func() error { return fn(ctx, abs) }); err != nil {
		tx.finish()
		return nil, stats, err
	}
	root, st, err := rt.scanDir(ctx, abs)
	stats = st
	if err != nil {
		tx.finish()
		return nil, stats, err
	}
	if root != tx.startTree {
		tx.mu.Lock()
		tx.tree, err = objects.LoadTree(ctx, rt.repo.Blocks, root)
		if err == nil {
			err = tx.commitLocked(ctx, "task "+task.ID+": directory", map[string]string{"op": "dir"})
		}
		tx.mu.Unlock()
		if err != nil {
			tx.finish()
			return nil, stats, err
		}
	}
	tx.finish()
	rec, err := rt.land(ctx, tx)
	return rec, stats, err
}

// prepareDir makes abs hold the tree of commit. Files the stat cache
// trusts are not read; the cache then records every file of the tree.
// owned: this runtime made the directory before, so what is in it is its
// own (export.CheckoutOptions.Force).
func (rt *Runtime) prepareDir(ctx context.Context, abs string, commit, tree objects.CID, owned bool) error {
	opts := export.CheckoutOptions{Cache: rt.repo.StatCache(), RacyWindow: racyWindow, Force: owned}
	if _, err := export.CheckoutWith(ctx, rt.repo.Blocks, tree, abs, opts); err != nil {
		return fmt.Errorf("runtime: materialising %s into %s: %w", short(commit), abs, err)
	}
	return nil
}

// scanDir stores the tree abs holds (export.ImportDir with the stat cache:
// only files the cache does not trust are read).
func (rt *Runtime) scanDir(ctx context.Context, abs string) (objects.CID, DirStats, error) {
	res, err := export.ImportDir(ctx, rt.repo.Blocks, abs, export.ImportOptions{Cache: rt.repo.StatCache(), RacyWindow: racyWindow})
	stats := DirStats{Files: res.Files, Read: res.Read, Skipped: res.Skipped}
	if err != nil {
		return objects.CID{}, stats, fmt.Errorf("runtime: scanning %s: %w", abs, err)
	}
	return res.Tree, stats, nil
}
