// Package repo ties a store's parts together for the CLI and the runtime: the
// block store, the refs, revision resolution, commits that move HEAD, the
// bundle-hash cache, verify and gc.
package repo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/tape"
)

// DirName is the store directory 'agentstate init' creates.
const DirName = ".agentstate"

// ErrNoStore: Find found no store directory.
var ErrNoStore = errors.New("no agentstate store found")

// Repo is an open repository: the one writer of commits and HEAD moves
// (owner.go) over a Storage.
type Repo struct {
	// Dir is the store directory ("" for storage that is not on disk).
	Dir     string
	Storage Storage
	Refs    *refs.Refs
	Blocks  objects.BlockStore
	Tape    *tape.Tape
	// Now returns the commit time; it honours SOURCE_DATE_EPOCH.
	Now func() int64

	leafCache *leafCache
	statMem   *export.MemMeta  // StatCache of storage not on disk
	gate      *gate            // gc against writers in flight (gate.go)
	moves     *agentLocks      // in-process HEAD moves of one agent take turns (gate.go)
	dirInfo   os.FileInfo      // Dir as opened (see IsDir)
	graph     *graphState      // the commit graph's writer (graph.go)
	reds      *redCache        // honoured redaction records (redact.go)
	prepared  *preparedRecords // task records made before their append (taskrecord.go)
}

// commitCacheSize bounds the decoded commits a Repo keeps (a few hundred
// bytes each): a served store's logs walk them without the store.
const commitCacheSize = 1 << 16

// readOnlyCommitCache bounds it in a read-only open: a command that reads
// and exits (a log of 100,000 commits kept 65,536 of them, about 30 MB it
// never read again, and inserting them was a tenth of its time). What a
// command reads again soon after (log --tasks reads a task's commits just
// before its walk reaches them) stays.
const readOnlyCommitCache = 1 << 12

// WithClock returns a view of r whose commits take their time from now: the
// same storage, refs and caches. A server running a client's command uses
// it to honour the client's SOURCE_DATE_EPOCH.
func (r *Repo) WithClock(now func() int64) *Repo {
	v := *r
	v.Now = now
	return &v
}

// Options tune how Init and Open open a store on disk.
type Options struct {
	// Sync makes every write durable (fsync) before it returns, except the
	// writes made with a context from Deferred, which the next durable
	// write carries. Without it a killed process loses nothing that
	// returned (the OS holds it), but a power failure may lose the latest
	// writes; it never tears a write.
	Sync bool
	// InMemory makes Init build an ephemeral store in a private directory
	// (under /dev/shm when it has 1 GiB free, else the temporary directory)
	// that Close removes: tests, benchmarks, short-lived runtimes. dir is
	// then ignored. Open refuses it.
	InMemory bool
	// ReadOnly opens without taking the write lock and writes nothing to the
	// store directory. It cannot be combined with a writer in another
	// process.
	ReadOnly bool
	// LockTimeout is how long an open waits, retrying, while another process
	// holds the store, before it fails with ErrInUse: zero means
	// DefaultLockTimeout, a negative value fails at once.
	LockTimeout time.Duration
	// Locked, when set, is called once the open holds the store's lock,
	// before the store is opened (badger.Options.Locked).
	Locked func()
}

// DefaultLockTimeout is how long an open waits for another process to
// release the store when Options.LockTimeout is zero.
const DefaultLockTimeout = badger.DefaultLockTimeout

// Deferred marks ctx so that blocks and receipt lines written with it to a
// store opened with Options.Sync are held in memory (reads see them) and
// made durable by the store's next write that is not deferred, in the same
// transaction: group commit. A process killed before then loses them. Use
// it only for writes nothing durable refers to until a later write that is
// not deferred (a runtime task's commits before its landing, whose HEAD
// move carries them), or that are re-created when lost (receipts). Without
// Options.Sync, or on a store that is not on disk, it changes nothing.
func Deferred(ctx context.Context) context.Context { return badger.Deferred(ctx) }

func (o Options) store() badger.Options {
	return badger.Options{Sync: o.Sync, InMemory: o.InMemory, ReadOnly: o.ReadOnly, LockTimeout: o.LockTimeout, Locked: o.Locked}
}

// The errors of a store on disk, for errors.Is (the same values the
// storage returns, whichever package an embedder names them by).
var (
	// ErrInUse: another process held the store's lock for longer than
	// Options.LockTimeout.
	ErrInUse = badger.ErrInUse
	// ErrNotStore: the directory is not an agentstate store, or its
	// creation was cut short (then Init makes it anew).
	ErrNotStore = badger.ErrNotStore
	// ErrDiskFull: the file system has too little free space for an open or
	// a write; nothing was written. The error is a *DiskFullError.
	ErrDiskFull = badger.ErrDiskFull
)

// NotStoreError says which directory is not a store, and whether it is one
// whose creation was cut short (HalfMade). It matches ErrNotStore.
type NotStoreError = badger.NotStoreError

// DiskFullError reports how much space a refused open or write needed and
// how much the file system had (Dir, Need, Have in bytes). It matches
// ErrDiskFull.
type DiskFullError = badger.DiskFullError

// Init creates a store in dir.
func Init(dir string, opts Options) (*Repo, error) {
	s, err := badger.Create(dir, opts.store())
	if err != nil {
		return nil, err
	}
	return wrap(dir, s), nil
}

// Open opens the store in dir.
func Open(dir string, opts Options) (*Repo, error) {
	s, err := badger.Open(dir, opts.store())
	if err != nil {
		return nil, err
	}
	if opts.ReadOnly {
		return wrapSized(dir, s, readOnlyCommitCache), nil
	}
	return wrap(dir, s), nil
}

// New returns a repository over s (for example dag/repo/storage/memory's storage).
func New(s Storage) *Repo { return wrap("", s) }

func wrap(dir string, s Storage) *Repo { return wrapSized(dir, s, commitCacheSize) }

// wrapSized is wrap with a commit cache of up to cacheSize commits.
func wrapSized(dir string, s Storage, cacheSize int) *Repo {
	cc := dag.WithCommitCache(s, cacheSize)
	if _, ok := s.(GraphPutter); ok {
		cc.UseGraph(s)
	}
	r := &Repo{Dir: dir, Storage: s, Refs: refs.New(s), Blocks: cc, Tape: tape.New(s), Now: Now,
		leafCache: &leafCache{}, statMem: &export.MemMeta{}, gate: &gate{}, moves: &agentLocks{}, graph: &graphState{}, reds: &redCache{}, prepared: &preparedRecords{}}
	r.Refs.SetCuts(cutSource{r})
	if ts, ok := s.(TaskRecordStore); ok {
		ts.SetTaskRecorder(r.taskRecorder)
	}
	if dir != "" {
		r.dirInfo, _ = os.Stat(dir)
	}
	return r
}

// IsDir reports whether path names the repository's directory: Dir itself,
// or another path to the directory that was opened.
func (r *Repo) IsDir(path string) bool {
	if path == r.Dir {
		return true
	}
	if r.dirInfo == nil {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && os.SameFile(fi, r.dirInfo)
}

// StatCacheStore holds the stat caches of brain directories (export's
// MetaStore) and can drop them all (a redaction does, before deleting
// blocks) or those it does not want to keep (gc drops the records whose
// tree it is about to delete).
type StatCacheStore interface {
	export.MetaStore
	Clear() error
	Prune(keep func(data []byte) bool) error
}

// StatCache is where directory imports and checkouts keep their stat
// caches: plain files in the store directory, or memory for storage that is
// not on disk. They are derivable; gc drops those naming trees it deletes.
func (r *Repo) StatCache() StatCacheStore {
	if r.Dir == "" {
		return r.statMem
	}
	return export.FileMeta{Dir: filepath.Join(r.Dir, "statcache")}
}

// Close closes the store.
func (r *Repo) Close() error { return r.Storage.Close() }

// Now returns SOURCE_DATE_EPOCH if set and valid, else the current time.
func Now() int64 { return NowFrom(os.Getenv) }

// NowFrom is Now with the environment read through getenv.
func NowFrom(getenv func(string) string) int64 {
	if v := getenv("SOURCE_DATE_EPOCH"); v != "" {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			return n
		}
	}
	return time.Now().Unix()
}

// Find locates a store: explicit (flag or environment) if given, else the
// nearest DirName walking up from start.
func Find(explicit, start string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", err
	}
	for {
		cand := filepath.Join(dir, DirName)
		if fi, err := os.Stat(cand); err == nil && fi.IsDir() {
			return cand, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w in %s or any parent directory", ErrNoStore, start)
		}
		dir = parent
	}
}

// Resolver returns the revision resolver of this store.
func (r *Repo) Resolver() *dag.Resolver {
	return &dag.Resolver{
		Blocks: r.Blocks,
		Head: func(ctx context.Context, agent string) (objects.CID, error) {
			h, err := r.Refs.Head(ctx, agent)
			return h.Commit, err
		},
		WithPrefix: r.withPrefix,
		Task: func(ctx context.Context, t dag.TaskRev) (objects.CID, error) {
			l, err := r.FindTask(ctx, t)
			return l.Commit, err
		},
	}
}

func (r *Repo) withPrefix(ctx context.Context, prefix []byte) ([]objects.CID, error) {
	if f, ok := r.Storage.(PrefixFinder); ok {
		return f.CIDsWithPrefix(ctx, prefix)
	}
	return nil, nil
}

// Resolve resolves a revision for agent.
func (r *Repo) Resolve(ctx context.Context, agent, rev string) (objects.CID, error) {
	exp := r.expandTag(ctx, agent, rev)
	id, err := r.Resolver().Resolve(ctx, agent, exp)
	if err != nil && exp == rev && errors.Is(err, dag.ErrBadRev) {
		if t, ok := splitTagRev(agent, rev); ok {
			return id, &NoTagError{Agent: t.agent, Name: t.name, Err: err}
		}
	}
	return id, err
}

// expandTag replaces a revision's base with the commit a tag of that name
// names (NAME, NAME~2, AGENT@NAME^2), so tags work wherever revisions do.
func (r *Repo) expandTag(ctx context.Context, agent, rev string) string {
	t, ok := splitTagRev(agent, rev)
	if !ok {
		return rev
	}
	v, ok, err := r.Storage.GetMeta(ctx, tagName(t.agent, t.name))
	if err != nil || !ok {
		return rev
	}
	return t.prefix + string(v) + t.suffix
}

// ResolveCommit resolves a revision for agent and reads the commit it names.
func (r *Repo) ResolveCommit(ctx context.Context, agent, rev string) (objects.CID, *objects.Commit, error) {
	id, err := r.Resolve(ctx, agent, rev)
	if err != nil {
		return objects.CID{}, nil, err
	}
	c, err := r.Commit(ctx, id)
	return id, c, err
}

// Commit reads a commit.
func (r *Repo) Commit(ctx context.Context, c objects.CID) (*objects.Commit, error) {
	return dag.ReadCommit(ctx, r.Blocks, c)
}

// HeadCommit returns an agent's HEAD CID and commit, or zero values (and no
// error) for an agent that does not exist yet.
func (r *Repo) HeadCommit(ctx context.Context, agent string) (objects.CID, *objects.Commit, error) {
	h, err := r.Refs.Head(ctx, agent)
	if errors.Is(err, refs.ErrNoAgent) {
		return objects.CID{}, nil, nil
	}
	if err != nil {
		return objects.CID{}, nil, err
	}
	c, err := r.Commit(ctx, h.Commit)
	return h.Commit, c, err
}

// Tree loads the tree of a commit.
func (r *Repo) Tree(ctx context.Context, commit objects.CID) (*objects.Tree, error) {
	c, err := r.Commit(ctx, commit)
	if err != nil {
		return nil, err
	}
	return objects.LoadTree(ctx, r.Blocks, c.Tree)
}

// EmptyTree stores the empty tree node and returns its CID.
func (r *Repo) EmptyTree(ctx context.Context) (objects.CID, error) {
	return objects.NewTree(r.Blocks).Commit(ctx)
}

// BundleHash returns the bundle hash of a tree, cached per tree root.
func (r *Repo) BundleHash(ctx context.Context, tree objects.CID) (objects.BundleHash, error) {
	key := "bundle/" + string(tree.Bytes())
	if s, ok := r.patchedLeaves(ctx, tree); ok {
		// Held in memory, or a few keys from a set that is (a writer's
		// next tree): no lookup of the record, which a new tree has not.
		h := s.hash()
		if s.recorded.CompareAndSwap(false, true) {
			_ = r.Storage.SetMeta(Deferred(ctx), key, h[:]) // as below
		}
		return h, nil
	}
	if v, ok, err := r.Storage.GetMeta(ctx, key); err == nil && ok && len(v) == 32 {
		return objects.BundleHash(v), nil
	}
	ls, err := r.leaves(ctx, tree)
	if err != nil {
		return objects.BundleHash{}, err
	}
	h := ls.hash()
	ls.recorded.Store(true)
	_ = r.Storage.SetMeta(Deferred(ctx), key, h[:]) // a cache: failing to write it, or losing it, is harmless
	return h, nil
}

// CommitBundleHash returns the bundle hash of a commit's tree.
func (r *Repo) CommitBundleHash(ctx context.Context, commit objects.CID) (objects.BundleHash, error) {
	c, err := r.Commit(ctx, commit)
	if err != nil {
		return objects.BundleHash{}, err
	}
	return r.BundleHash(ctx, c.Tree)
}
