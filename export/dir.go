package export

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentstate/agentstate/internal/atomicfile"
	"github.com/agentstate/agentstate/objects"
)

// StoreDirName is the store directory 'agentstate init' creates; keys may
// not start with it (objects.ValidateKey).
const StoreDirName = objects.StoreDirName

var (
	ErrNotDir   = errors.New("export: not a directory")
	ErrEscapes  = errors.New("export: path escapes the target directory")
	ErrBadEntry = errors.New("export: unsupported file in brain directory")
	// ErrInStore: a scan or checkout would read from or write into an
	// agentstate store directory.
	ErrInStore = errors.New("export: agentstate store in the way")
)

// IsStoreDir reports whether dir is an agentstate store directory, by the
// store's own marker (dag/repo/storage/badger). A store is never part of a brain,
// whatever its name and wherever it sits: scans skip it and say so, and
// checkouts neither write into it, nor remove it, nor run inside one.
func IsStoreDir(dir string) bool { return badger.IsStoreDir(dir) }

// enclosingStore returns the store directory that dir is, or sits inside
// (symlinks resolved), if any. dir need not exist.
func enclosingStore(dir string) (string, bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	// Resolve the deepest part of the path that exists; what does not exist
	// yet cannot be a store.
	p := abs
	for {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
			break
		}
		parent := filepath.Dir(p)
		if parent == p {
			break
		}
		p = parent
	}
	for {
		if IsStoreDir(p) {
			return p, true
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", false
		}
		p = parent
	}
}

// storeUnder returns a store directory at or below dir, if there is one.
func storeUnder(dir string) (string, bool) {
	var found string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && IsStoreDir(p) {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	return found, found != ""
}

// Skipped is a path left out of a scan.
type Skipped struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// ScannedFile is one regular file of a brain directory.
type ScannedFile struct {
	Key  string
	Path string // on disk
	Size int64
	stat fileStat
}

// Scan lists the regular files under dir as keys in bytewise order. Symlinks,
// devices, sockets and FIFOs are skipped and reported (never followed), and
// so are agentstate stores (IsStoreDir), a directory named .agentstate at any
// depth, anything named .agentstate at the top (a reserved key) and anything
// named .git at any depth (a repository's data or a worktree's pointer, as
// git leaves it out; Checkout never writes one either); a file
// whose name is not a valid key is an error naming it. dir itself must not
// be or sit inside a store. Directories are read in parallel.
func Scan(ctx context.Context, dir string) ([]ScannedFile, []Skipped, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("export: brain directory: %w", err)
	}
	if !fi.IsDir() {
		return nil, nil, fmt.Errorf("%w: %s", ErrNotDir, dir)
	}
	if st, ok := enclosingStore(dir); ok {
		return nil, nil, fmt.Errorf("%w: refusing to read %s as a brain directory: it is inside the agentstate store %s", ErrInStore, dir, st)
	}
	var (
		mu      sync.Mutex
		batches [][]ScannedFile // each directory's files, in key order
		skipped []Skipped
	)
	root := filepath.Clean(dir)
	shareKey := filepath.Separator == '/' && root != "/"
	// scanOne reads one directory (key is its key prefix, "" at the top) and
	// returns its subdirectories.
	scanOne := func(p, key string) ([][2]string, error) {
		// Names sorted before anything is stat'd (readDirSorted: the files
		// come out in key order, so only names are sorted, not the scan's
		// records), and each file stat'd relative to the open directory
		// (lstatIn).
		dirf, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("export: reading %s: %w", p, err)
		}
		defer dirf.Close()
		ents, err := readDirSorted(dirf, p)
		if err != nil {
			return nil, fmt.Errorf("export: reading %s: %w", p, err)
		}
		var subs [][2]string
		fs_ := make([]ScannedFile, 0, len(ents))
		var sk []Skipped
		for _, d := range ents {
			cp, ck := p+string(filepath.Separator)+d.name, ""
			if shareKey {
				ck = cp[len(root)+1:] // the key is the path's tail: one string, not two, per file
			} else {
				ck = key + d.name
			}
			name := d.name
			t := d.typ
			switch {
			case key == "" && strings.EqualFold(name, StoreDirName):
				if t.IsDir() {
					ck += "/"
				}
				sk = append(sk, Skipped{ck, "agentstate store directory (the name is reserved: keys may not start with it)"})
				continue
			case isGit(name):
				if t.IsDir() {
					ck += "/"
				}
				sk = append(sk, Skipped{ck, "git repository data (never stored: a checkout never writes a .git)"})
				continue
			case t.IsDir():
				if IsStoreDir(cp) {
					sk = append(sk, Skipped{ck + "/", "agentstate store (not brain content)"})
					continue
				}
				subs = append(subs, [2]string{cp, ck + "/"})
				continue
			case t&fs.ModeSymlink != 0:
				sk = append(sk, Skipped{ck, "symbolic link (not followed)"})
				continue
			case !t.IsRegular():
				sk = append(sk, Skipped{ck, "not a regular file (" + t.String() + ")"})
				continue
			}
			if objects.IsDerived(ck) {
				sk = append(sk, Skipped{ck, "derived file (regenerated on export, not stored)"})
				continue
			}
			if err := objects.ValidateKey(ck); err != nil {
				return nil, fmt.Errorf("export: %s: %w", cp, err)
			}
			st, regular, err := lstatIn(dirf, cp, name)
			if err != nil {
				return nil, fmt.Errorf("export: %s: %w", cp, err)
			}
			if !regular { // replaced since the directory was read
				what := "changed since the directory was read"
				if info, err := os.Lstat(cp); err == nil {
					what = info.Mode().Type().String()
				}
				sk = append(sk, Skipped{ck, "not a regular file (" + what + ")"})
				continue
			}
			fs_ = append(fs_, ScannedFile{Key: ck, Path: cp, Size: st.size, stat: st})
		}
		mu.Lock()
		if len(fs_) > 0 {
			batches = append(batches, fs_)
		}
		skipped = append(skipped, sk...)
		mu.Unlock()
		return subs, nil
	}
	if err := walkParallel(ctx, [2]string{root, ""}, scanOne); err != nil {
		return nil, nil, err
	}
	// The directories' sorted lists, in the order of their first keys, are
	// already the whole order unless a directory's files and a
	// subdirectory's interleave ("a/b.md" < "a/b/c" < "a/b0.md"): one
	// sorted concatenation, checked, and sorted whole only then.
	slices.SortFunc(batches, func(a, b []ScannedFile) int { return strings.Compare(a[0].Key, b[0].Key) })
	n := 0
	for _, b := range batches {
		n += len(b)
	}
	files := make([]ScannedFile, 0, n)
	for i, b := range batches {
		files = append(files, b...)
		batches[i] = nil // a million files' lists are not held twice
	}
	byKey := func(a, b ScannedFile) int { return strings.Compare(a.Key, b.Key) }
	if !slices.IsSortedFunc(files, byKey) {
		slices.SortFunc(files, byKey)
	}
	slices.SortFunc(skipped, func(a, b Skipped) int { return strings.Compare(a.Path, b.Path) })
	return files, skipped, nil
}

// walkParallel calls visit on root and on every directory visit returns,
// on a few goroutines, and returns the first error.
func walkParallel(ctx context.Context, root [2]string, visit func(p, key string) ([][2]string, error)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		cond     = sync.NewCond(&mu)
		queue    = [][2]string{root}
		pending  = 1 // queued or being visited
		firstErr error
	)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0)*2, 8) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				for len(queue) == 0 && pending > 0 && firstErr == nil {
					cond.Wait()
				}
				if pending == 0 || firstErr != nil {
					mu.Unlock()
					return
				}
				d := queue[len(queue)-1]
				queue = queue[:len(queue)-1]
				mu.Unlock()
				var subs [][2]string
				err := ctx.Err()
				if err == nil {
					subs, err = visit(d[0], d[1])
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				queue = append(queue, subs...)
				pending += len(subs) - 1
				cond.Broadcast()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// openRegular opens p to read without following a symlink, and refuses
// anything but a regular file (one that changed since the scan).
func openRegular(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil, fmt.Errorf("export: reading %s: %w", p, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("export: reading %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: %s changed into %s while being read", ErrBadEntry, p, fi.Mode().Type())
	}
	return f, nil
}

// CheckoutReport says what a checkout changed.
type CheckoutReport struct {
	Written, Unchanged, Removed int
	// Skipped lists the keys CheckoutOptions.Skip left out.
	Skipped []string
}

var (
	// ErrNotOwned: a checkout would overwrite or remove files the store did
	// not write there (a *ForeignFilesError names them).
	ErrNotOwned = errors.New("export: files the store did not write are in the way")
	// ErrGitDir: a checkout would write into, replace or remove a .git.
	ErrGitDir = errors.New("export: a .git is in the way")
)

// maxForeignNamed bounds the files a *ForeignFilesError names.
const maxForeignNamed = 10

// ForeignFilesError is a checkout's refusal to overwrite or remove files it
// does not own. Nothing was changed.
type ForeignFilesError struct {
	Dir   string
	Count int      // files in the way
	Paths []string // the first few of them (slash paths under Dir), in order
}

func (e *ForeignFilesError) Error() string {
	var b strings.Builder
	for i, p := range e.Paths {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(p))
	}
	if e.Count > len(e.Paths) {
		fmt.Fprintf(&b, " and %d more", e.Count-len(e.Paths))
	}
	what := "files"
	if e.Count == 1 {
		what = "file"
	}
	return fmt.Sprintf("%v: refusing to check out into %s: %d %s there that this store did not write (and that differ from the checkout) would be overwritten or removed: %s; nothing was changed",
		ErrNotOwned, e.Dir, e.Count, what, b.String())
}

func (e *ForeignFilesError) Unwrap() error { return ErrNotOwned }

// isGit reports whether a file name is .git (in any letter case: some file
// systems ignore it).
func isGit(name string) bool { return strings.EqualFold(name, ".git") }

// hasGitSegment reports whether a key names something at or under a .git.
func hasGitSegment(key string) bool {
	for seg := range strings.SplitSeq(key, "/") {
		if isGit(seg) {
			return true
		}
	}
	return false
}

// Checkout makes dir hold exactly the files of tree: it creates dir if
// needed, writes missing or different files (atomically, mode 0644), removes
// files and directories the tree lacks, and never writes through a symlink:
// a symlink where the tree needs a directory or file is removed first.
//
// A checkout owns only what it wrote. Before anything changes it looks at
// every file in dir that it would overwrite or remove; each must hold what
// the tree wants there already, or be a file the store wrote or read there
// and unchanged since (the directory's stat cache, CheckoutOptions.Cache,
// records those). Anything else — a user's file, a symlink, a file changed
// since the store wrote it — is refused with a *ForeignFilesError
// (ErrNotOwned) naming them, and nothing is changed, unless
// CheckoutOptions.Force. Checkout has no stat cache: into a directory that
// is not empty it replaces only files identical to the tree's.
//
// Whatever the options, a .git (a directory or file of that name at any
// depth) is never written into, replaced or removed: a tree file at or under
// one must already be there, identical, or the checkout is refused with
// ErrGitDir before anything is written. Agentstate stores are left alone
// too: a store anywhere inside dir (IsStoreDir) and anything named
// .agentstate at its top are neither removed nor emptied, nor are the
// directories that lead to them; a tree whose files would land in a store,
// or replace a directory holding one, is refused with ErrInStore before
// anything is written, and so is a dir that is or sits inside a store.
// Empty directories the tree lacks that were empty before are left alone.
func Checkout(ctx context.Context, bs objects.BlockStore, tree objects.CID, dir string) (CheckoutReport, error) {
	return CheckoutWith(ctx, bs, tree, dir, CheckoutOptions{})
}

// CheckoutOptions tune CheckoutWith.
type CheckoutOptions struct {
	// Cache, when set, is the directory's stat cache (the one ImportDir
	// keeps, see statcache.go). A file whose stat the cache trusts, with the
	// value the tree wants, is unchanged without being read; a file the
	// cache records, unchanged since, is the store's to replace or remove;
	// after a successful checkout the cache records every file of the tree
	// (stat and value) and the tree, so the next ImportDir does not read
	// them again once their mtimes are older than the racy window, and the
	// next checkout may replace them. Checkout assumes nothing else writes
	// in dir while it runs.
	Cache MetaStore
	// Force lets the checkout overwrite and remove files the store did not
	// write (never a .git or a store, nor anything outside dir).
	Force bool
	// RacyWindow replaces the package's RacyWindow when positive (tests).
	RacyWindow time.Duration
	// Skip, when set, is asked about every key of the tree before anything
	// is written: true leaves the key out, as if the tree did not have it
	// (a redacted value, whose content is not in the store: a file the
	// store wrote there is removed like any other the tree does not have);
	// an error stops the checkout with nothing written.
	Skip func(key string, v objects.CID) (bool, error)
}

// checkoutJob is one file of the tree and what is at its place on disk.
type checkoutJob struct {
	key, dst string
	v        objects.CID
	same     bool // dst is a regular file holding v already
	exists   bool // something that is not a directory is at dst
	dirInWay bool // a directory is at dst
}

// diskEntry is something on disk the tree does not want.
type diskEntry struct {
	key, path string
	regular   bool
}

// CheckoutWith is Checkout with options.
func CheckoutWith(ctx context.Context, bs objects.BlockStore, tree objects.CID, dir string, opts CheckoutOptions) (CheckoutReport, error) {
	var rep CheckoutReport
	window := opts.RacyWindow
	if window <= 0 {
		window = RacyWindow
	}
	t, err := objects.LoadTree(ctx, bs, tree)
	if err != nil {
		return rep, err
	}
	if fi, err := os.Lstat(dir); err == nil && !fi.IsDir() {
		return rep, fmt.Errorf("%w: %s exists and is not a directory", ErrNotDir, dir)
	}
	if st, ok := enclosingStore(dir); ok {
		return rep, fmt.Errorf("%w: refusing to check out into %s: it is inside the agentstate store %s; nothing was written", ErrInStore, dir, st)
	}
	root, err := filepath.Abs(dir)
	if err != nil {
		return rep, err
	}
	for p := root; ; p = filepath.Dir(p) {
		if isGit(filepath.Base(p)) {
			return rep, fmt.Errorf("%w: refusing to check out into %s: it is inside the git directory %s; nothing was written", ErrGitDir, dir, p)
		}
		if filepath.Dir(p) == p {
			break
		}
	}
	want := map[string]bool{}
	wantDirs := map[string]bool{}
	var jobs []checkoutJob
	for e, err := range t.Entries(ctx, "") {
		if err != nil {
			return rep, err
		}
		if err := objects.ValidateKey(e.Key); err != nil {
			return rep, err
		}
		if opts.Skip != nil {
			skip, err := opts.Skip(e.Key, e.Value)
			if err != nil {
				return rep, err
			}
			if skip {
				rep.Skipped = append(rep.Skipped, e.Key)
				continue
			}
		}
		want[e.Key] = true
		for d := path.Dir(e.Key); d != "." && !wantDirs[d]; d = path.Dir(d) {
			wantDirs[d] = true
		}
		dst := filepath.Join(root, filepath.FromSlash(e.Key))
		if !strings.HasPrefix(dst, root+string(filepath.Separator)) {
			return rep, fmt.Errorf("%w: key %q", ErrEscapes, e.Key)
		}
		jobs = append(jobs, checkoutJob{key: e.Key, dst: dst, v: e.Value})
	}
	// Nothing is written until no file or directory of the tree is found to
	// lead into a store on disk.
	dirs := slices.Sorted(maps.Keys(wantDirs))
	err = parallel(ctx, len(dirs)+len(jobs), func(i int) error {
		if i < len(dirs) {
			p := filepath.Join(root, filepath.FromSlash(dirs[i]))
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() && IsStoreDir(p) {
				return fmt.Errorf("%w: refusing to check out into %s: the tree has files under %q, which is an agentstate store on disk; nothing was written", ErrInStore, dir, dirs[i]+"/")
			}
			return nil
		}
		j := jobs[i-len(dirs)]
		if fi, err := os.Lstat(j.dst); err == nil && fi.IsDir() {
			if st, ok := storeUnder(j.dst); ok {
				return fmt.Errorf("%w: refusing to check out into %s: the file %q would replace a directory holding the agentstate store %s; nothing was written", ErrInStore, dir, j.key, st)
			}
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	old := loadStatCache(opts.Cache, root)
	var cached atomic.Int64
	remove, emptied, err := planCheckout(ctx, bs, root, dir, jobs, want, wantDirs, old, window, opts.Force, &cached)
	if err != nil {
		return rep, err
	}

	// The plan holds: change the directory.
	_, statErr := os.Lstat(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rep, fmt.Errorf("export: creating %s: %w", dir, err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		if err := chmodNew(dir); err != nil {
			return rep, err
		}
	}
	for _, e := range remove {
		if err := os.Remove(e.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return rep, fmt.Errorf("export: removing %s: %w", e.path, err)
		}
		rep.Removed++
	}
	// Directories the removals emptied, deepest first; one still holding
	// something kept (a store, a .git, an empty directory) stays.
	for _, p := range emptied {
		if os.Remove(p) == nil {
			rep.Removed++
		}
	}
	for i := range jobs {
		if j := &jobs[i]; j.dirInWay {
			// Everything in it was planned for removal; what is left, if
			// anything, is empty directories.
			if _, err := os.Lstat(j.dst); err != nil {
				continue
			}
			if err := os.RemoveAll(j.dst); err != nil {
				return rep, fmt.Errorf("export: replacing directory %s with a file: %w", j.dst, err)
			}
			rep.Removed++
		}
	}
	for _, d := range dirs {
		if err := ensureDirs(root, d); err != nil {
			return rep, err
		}
	}
	// Write files in parallel: each job touches its own path.
	var written atomic.Int64
	err = parallel(ctx, len(jobs), func(i int) error {
		j := jobs[i]
		if j.same {
			return nil
		}
		// The value streams into the file a chunk at a time; one that
		// fails its checks leaves no file (or the old one) behind.
		rd, _, err := objects.OpenValue(ctx, bs, j.v)
		if err != nil {
			return fmt.Errorf("export: value of %q: %w", j.key, err)
		}
		content := valueReader{rd, j.key}
		if j.exists {
			err = writeAtomic(j.dst, content)
		} else {
			err = writeNew(j.dst, content)
		}
		if err != nil {
			return err
		}
		written.Add(1)
		return nil
	})
	rep.Written = int(written.Load())
	for _, j := range jobs {
		if j.same {
			rep.Unchanged++
		}
	}
	if err != nil {
		return rep, err
	}
	if opts.Cache != nil && !(old != nil && old.tree == tree && len(old.entries) == len(jobs) && int(cached.Load()) == len(jobs)) {
		// Every file was just written or compared; record their stats, each
		// taken after the recording time (the racy rule's reference).
		next := &statCache{tree: tree, start: time.Now().UnixNano(), entries: make([]statEntry, len(jobs))}
		err := parallel(ctx, len(jobs), func(i int) error {
			fi, err := os.Lstat(jobs[i].dst)
			if err != nil {
				return err
			}
			if !fi.Mode().IsRegular() {
				return fmt.Errorf("%w: %s", ErrBadEntry, jobs[i].dst)
			}
			next.entries[i] = statEntry{key: jobs[i].key, stat: fileStatOf(fi), value: jobs[i].v}
			return nil
		})
		// The entries must be every file of the tree: if one cannot be
		// recorded, the previous record (still right entry by entry) stays.
		if err == nil {
			slices.SortFunc(next.entries, func(a, b statEntry) int { return strings.Compare(a.key, b.key) })
			saveStatCache(opts.Cache, root, next)
		}
	}
	return rep, nil
}

// planCheckout looks at what is on disk under root, changing nothing: it
// marks each job same, exists or dirInWay, and returns the entries the tree
// lacks that are to be removed and the directories their removal may empty
// (deepest first). It refuses, before anything changes, a tree file that
// would go into, replace or remove a .git, and (unless force) any file that
// would be overwritten or removed but is neither identical to the tree's
// nor the store's own (recorded by old and unchanged since).
func planCheckout(ctx context.Context, bs objects.BlockStore, root, dir string, jobs []checkoutJob, want, wantDirs map[string]bool,
	old *statCache, window time.Duration, force bool, cached *atomic.Int64) (remove []diskEntry, emptied []string, err error) {
	var (
		extras    []diskEntry
		extraDirs = map[string]bool{} // keys of directories the tree lacks
		realDirs  = map[string]bool{} // keys of real directories on disk
		gits      []string            // keys of every .git on disk
	)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipAll
			}
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		key := filepath.ToSlash(rel)
		if reserved := filepath.Dir(p) == root && strings.EqualFold(d.Name(), StoreDirName); reserved || d.IsDir() && IsStoreDir(p) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		underGit := hasGitSegment(key)
		if isGit(d.Name()) {
			gits = append(gits, key)
		}
		if d.IsDir() {
			// A .git's directories are walked only so that a tree file
			// identical to one of its files is found; nothing in it is
			// ever planned for removal.
			realDirs[key] = true
			if !wantDirs[key] && !underGit {
				extraDirs[key] = true
			}
			return nil
		}
		if underGit || want[key] || objects.IsDerived(key) {
			return nil
		}
		extras = append(extras, diskEntry{key: key, path: p, regular: d.Type().IsRegular()})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("export: scanning %s: %w", dir, err)
	}
	// parentsReal: every directory above key is a real directory on disk
	// (not a symlink or a file, which the checkout replaces), so what Lstat
	// finds at key is inside dir.
	parentsReal := func(key string) bool {
		for d := path.Dir(key); d != "."; d = path.Dir(d) {
			if !realDirs[d] {
				return false
			}
		}
		return true
	}
	// owned: the stat cache records key, and the file is what it recorded
	// (by its stat, or else by its content).
	owned := func(key, p string, st fileStat, sum *[32]byte) bool {
		if old == nil {
			return false
		}
		e, ok := old.lookup(key)
		if !ok {
			return false
		}
		if _, ok := old.trusted(key, st, window); ok {
			return true
		}
		if sum == nil {
			s, err := FileSHA256(p)
			if err != nil {
				return false
			}
			sum = &s
		}
		rec, err := objects.ContentSHA256(ctx, bs, e.value)
		return err == nil && rec == *sum
	}
	var (
		mu      sync.Mutex
		foreign []string
	)
	addForeign := func(key string) {
		mu.Lock()
		foreign = append(foreign, key)
		mu.Unlock()
	}
	gitErr := func(key, what string) error {
		return fmt.Errorf("%w: refusing to check out into %s: the tree's file %q %s; a checkout never writes into, replaces or removes a .git; nothing was changed", ErrGitDir, dir, key, what)
	}
	err = parallel(ctx, len(jobs)+len(extras), func(i int) error {
		if i >= len(jobs) {
			x := extras[i-len(jobs)]
			if !x.regular {
				addForeign(x.key)
				return nil
			}
			fi, err := os.Lstat(x.path)
			if err != nil {
				return fmt.Errorf("export: %s: %w", x.path, err)
			}
			if !fi.Mode().IsRegular() || !owned(x.key, x.path, fileStatOf(fi), nil) {
				addForeign(x.key)
			}
			return nil
		}
		j := &jobs[i]
		git := hasGitSegment(j.key)
		if !parentsReal(j.key) {
			if git {
				return gitErr(j.key, "would create a .git or write into one")
			}
			return nil // nothing there yet
		}
		fi, err := os.Lstat(j.dst)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if git {
				return gitErr(j.key, "would be written into a .git")
			}
			return nil
		case err != nil:
			return fmt.Errorf("export: %s: %w", j.dst, err)
		case fi.IsDir():
			if git {
				return gitErr(j.key, "would replace a directory in a .git")
			}
			for _, g := range gits {
				if strings.HasPrefix(g, j.key+"/") {
					return gitErr(j.key, fmt.Sprintf("would replace a directory holding the .git %q", g))
				}
			}
			j.dirInWay = true
			return nil
		case !fi.Mode().IsRegular():
			if git {
				return gitErr(j.key, "would replace something in a .git")
			}
			j.exists = true
			addForeign(j.key)
			return nil
		}
		j.exists = true
		st := fileStatOf(fi)
		if v, ok := old.trusted(j.key, st, window); ok && v == j.v {
			cached.Add(1)
			j.same = true
			return nil
		}
		wantSum, err := objects.ContentSHA256(ctx, bs, j.v)
		if err != nil {
			return err
		}
		got, err := FileSHA256(j.dst)
		if err != nil {
			return err
		}
		if got == wantSum {
			j.same = true
			return nil
		}
		if git {
			return gitErr(j.key, "differs from the file in the .git on disk")
		}
		if !owned(j.key, j.dst, st, &got) {
			addForeign(j.key)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	if len(foreign) > 0 && !force {
		slices.Sort(foreign)
		return nil, nil, &ForeignFilesError{Dir: dir, Count: len(foreign), Paths: foreign[:min(len(foreign), maxForeignNamed)]}
	}
	// Every extra is the store's, or force: remove them all, then the
	// directories the tree lacks that held them, deepest first.
	slices.SortFunc(extras, func(a, b diskEntry) int { return strings.Compare(a.key, b.key) })
	parents := map[string]bool{}
	for _, x := range extras {
		for d := path.Dir(x.key); d != "." && extraDirs[d] && !parents[d]; d = path.Dir(d) {
			parents[d] = true
		}
	}
	for _, d := range slices.Sorted(maps.Keys(parents)) {
		emptied = append(emptied, filepath.Join(root, filepath.FromSlash(d)))
	}
	slices.Reverse(emptied) // a directory sorts before what it holds
	return extras, emptied, nil
}

// ensureDirs makes every directory of rel under root a real directory,
// replacing a symlink or file in the way.
func ensureDirs(root, rel string) error {
	if rel == "." {
		return nil
	}
	cur := root
	for _, seg := range strings.Split(filepath.ToSlash(rel), "/") {
		cur = filepath.Join(cur, seg)
		fi, err := os.Lstat(cur)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			if err := os.Remove(cur); err != nil {
				return fmt.Errorf("export: replacing %s with a directory: %w", cur, err)
			}
		case !errors.Is(err, fs.ErrNotExist):
			return err
		}
		if err := os.Mkdir(cur, 0o755); err != nil {
			return fmt.Errorf("export: creating %s: %w", cur, err)
		}
		if err := chmodNew(cur); err != nil {
			return err
		}
	}
	return nil
}

// chmodNew gives a directory export made mode 0755 whatever the umask, as
// its files get 0644: a process that holds a store open runs with umask 077
// (dag/repo/storage/badger), and a checkout made there is the same as one made
// anywhere else.
func chmodNew(dir string) error {
	if fi, err := os.Lstat(dir); err == nil && fi.IsDir() && fi.Mode().Perm() != 0o755 {
		if err := os.Chmod(dir, 0o755); err != nil {
			return fmt.Errorf("export: setting the mode of %s: %w", dir, err)
		}
	}
	return nil
}

// writeNew creates dst, which did not exist a moment ago. O_EXCL with
// O_NOFOLLOW refuses anything that appeared there since, symlinks included.
func writeNew(dst string, content valueReader) error {
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return writeAtomic(dst, content)
	}
	if err != nil {
		return fmt.Errorf("export: writing %s: %w", dst, err)
	}
	_, err = objects.CopyValue(f, content)
	if err == nil {
		err = f.Chmod(0o644) // whatever the umask
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
		return fmt.Errorf("export: writing %s: %w", dst, err)
	}
	return nil
}

// parallel calls fn(0..n-1) on a few goroutines and returns the first error.
func parallel(ctx context.Context, n int, fn func(i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var next atomic.Int64
	var once sync.Once
	var firstErr error
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0)*4, 32, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { firstErr = err; cancel() })
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// writeAtomic replaces dst with data, mode 0644, through a temporary file
// and a rename, which replaces a symlink at dst itself, never its target.
// It does not fsync (atomicfile.CreateNoSync): a checkout can be redone, and
// the next one compares and rewrites what a crash left.
func writeAtomic(dst string, content valueReader) error {
	f, err := atomicfile.CreateNoSync(filepath.Dir(dst), ".agentstate-tmp-*", 0o644)
	if err != nil {
		return fmt.Errorf("export: writing %s: %w", dst, err)
	}
	defer f.Abort()
	if _, err := objects.CopyValue(f, content); err != nil {
		return fmt.Errorf("export: writing %s: %w", dst, err)
	}
	if err := f.Commit(dst); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// valueReader is a value's content (objects.OpenValue) named by its key in
// read errors.
type valueReader struct {
	r   io.Reader
	key string
}

func (v valueReader) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("value of %q: %w", v.key, err)
	}
	return n, err
}

// FileSHA256 streams a regular file (not following symlinks) through sha256.
func FileSHA256(p string) ([32]byte, error) {
	var sum [32]byte
	f, err := os.OpenFile(p, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return sum, fmt.Errorf("export: reading %s: %w", p, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, fmt.Errorf("export: reading %s: %w", p, err)
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}
