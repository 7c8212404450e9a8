package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

// racyWindow: a file whose mtime is this close to (or after) the moment the
// runtime recorded its stat may be modified again without its mtime
// changing (file system timestamps are coarse), so it is re-read rather
// than trusted.
var racyWindow = time.Second

// statEntry is what the runtime remembers of one file it read or wrote.
type statEntry struct {
	size     int64
	mtime    int64 // ns
	ino      uint64
	value    objects.CID
	recorded int64 // ns, when the stat was taken
}

func (e statEntry) matches(fi os.FileInfo) bool {
	if e.size != fi.Size() || e.mtime != fi.ModTime().UnixNano() || e.ino != inode(fi) {
		return false
	}
	return e.mtime < e.recorded-racyWindow.Nanoseconds()
}

// dirState is a working directory's cache: the tree the directory held
// when the runtime last left it (zero: unknown) and the stat of each file.
type dirState struct {
	sem   chan struct{} // one task per directory at a time
	tree  objects.CID
	files map[string]statEntry
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
// receipts.ndjson excepted). After fn returns nil, the directory is scanned
// and committed as one commit of the task (message "task ID: directory"),
// which then lands exactly as a RunTask task does (merge, conflict, receipt,
// snapshot). A scan re-reads only the files whose size, mtime or inode
// differ from what the runtime recorded when it last wrote or read them (or
// whose mtime is too recent to trust); the cache lives in memory, per
// directory. Symlinks, devices and other non-regular files are skipped and
// listed in the returned stats.
//
// One directory serves one task at a time: a second RunDirTask on the same
// directory waits for the first (or for ctx). The directory belongs to the
// runtime between tasks: edits made outside a task are undone by the next
// task's checkout. A failed task leaves its edits on disk until then.
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
	if err := rt.prepareDir(ctx, ds, abs, tx.start, tx.startTree); err != nil {
		return nil, stats, err
	}
	if err := runFn(ctx, task, func() error { return fn(ctx, abs) }); err != nil {
		tx.finish()
		ds.tree = objects.CID{} // contents unknown until the next checkout
		return nil, stats, err
	}
	root, st, err := rt.scanDir(ctx, ds, abs, tx.startTree)
	stats = st
	if err != nil {
		tx.finish()
		ds.tree = objects.CID{}
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
			ds.tree = objects.CID{}
			return nil, stats, err
		}
	}
	tx.finish()
	ds.tree = tx.lastTree
	rec, err := rt.land(ctx, tx)
	if err != nil && rec == nil {
		// Not landed: the directory holds the task's edits, not HEAD.
		ds.tree = objects.CID{}
	}
	return rec, stats, err
}

// prepareDir makes abs hold the tree of commit.
func (rt *Runtime) prepareDir(ctx context.Context, ds *dirState, abs string, commit, tree objects.CID) error {
	if ds.files != nil && ds.tree == tree {
		// The directory should already hold it; a cheap scan confirms.
		root, _, err := rt.scanDir(ctx, ds, abs, tree)
		if err == nil && root == tree {
			return nil
		}
	}
	if _, err := export.Checkout(ctx, rt.repo.Blocks, tree, abs); err != nil {
		return fmt.Errorf("runtime: materialising %s into %s: %w", short(commit), abs, err)
	}
	t, err := objects.LoadTree(ctx, rt.repo.Blocks, tree)
	if err != nil {
		return err
	}
	files := map[string]statEntry{}
	now := time.Now().UnixNano()
	for e, err := range t.Entries(ctx, "") {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(filepath.Join(abs, filepath.FromSlash(e.Key)))
		if err != nil {
			return fmt.Errorf("runtime: after checkout: %w", err)
		}
		files[e.Key] = statEntry{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ino: inode(fi), value: e.Value, recorded: now}
	}
	ds.files, ds.tree = files, tree
	return nil
}

// scanDir builds the tree abs holds, starting from base (the tree the
// cache describes) and applying only what differs. It stores new values and
// tree nodes and refreshes the cache.
func (rt *Runtime) scanDir(ctx context.Context, ds *dirState, abs string, base objects.CID) (objects.CID, DirStats, error) {
	var stats DirStats
	files, skipped, err := export.Scan(ctx, abs)
	if err != nil {
		return objects.CID{}, stats, err
	}
	stats.Files, stats.Skipped = len(files), skipped
	t, err := objects.LoadTree(ctx, rt.repo.Blocks, base)
	if err != nil {
		return objects.CID{}, stats, err
	}
	now := time.Now().UnixNano()
	next := make(map[string]statEntry, len(files))
	var toRead []export.ScannedFile
	var readInfo []os.FileInfo
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		seen[f.Key] = true
		fi, err := os.Lstat(f.Path)
		if err != nil {
			return objects.CID{}, stats, fmt.Errorf("runtime: scanning %s: %w", f.Path, err)
		}
		if e, ok := ds.files[f.Key]; ok && e.matches(fi) {
			next[f.Key] = e
			if _, err := t.Put(ctx, f.Key, e.value); err != nil {
				return objects.CID{}, stats, err
			}
			continue
		}
		toRead = append(toRead, f)
		readInfo = append(readInfo, fi)
	}
	if len(toRead) > 0 {
		err := export.StoreFiles(ctx, rt.repo.Blocks, toRead, func(i int, v objects.CID) error {
			f, fi := toRead[i], readInfo[i]
			if _, err := t.Put(ctx, f.Key, v); err != nil {
				return err
			}
			next[f.Key] = statEntry{size: fi.Size(), mtime: fi.ModTime().UnixNano(), ino: inode(fi), value: v, recorded: now}
			return nil
		})
		if err != nil {
			return objects.CID{}, stats, fmt.Errorf("runtime: storing file contents: %w", err)
		}
	}
	stats.Read = len(toRead)
	// Keys of the base tree that are gone from the directory.
	var gone []string
	bt, err := objects.LoadTree(ctx, rt.repo.Blocks, base)
	if err != nil {
		return objects.CID{}, stats, err
	}
	for e, err := range bt.Entries(ctx, "") {
		if err != nil {
			return objects.CID{}, stats, err
		}
		if !seen[e.Key] {
			gone = append(gone, e.Key)
		}
	}
	for _, k := range gone {
		if _, err := t.Delete(ctx, k); err != nil {
			return objects.CID{}, stats, err
		}
	}
	root, err := t.Commit(ctx)
	if err != nil {
		return objects.CID{}, stats, err
	}
	ds.files, ds.tree = next, root
	return root, stats, nil
}
