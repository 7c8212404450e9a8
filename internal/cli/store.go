package cli

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
)

func (e *env) storeDir() (string, error) {
	if e.served != nil && e.storeFlag == "" {
		return e.served.Dir, nil
	}
	dir, err := repo.Find(e.path(e.storeFlag), e.dir)
	if err != nil {
		return "", err
	}
	if e.served != nil && !e.served.IsDir(dir) {
		return "", fmt.Errorf("this server serves %s, not %s (run the command with --store %s)", e.served.Dir, dir, dir)
	}
	return dir, nil
}

func sameDir(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

// open opens the store for a command.
func (e *env) open() (*repo.Repo, error) {
	e.closed()
	dir, err := e.storeDir()
	if err != nil {
		return nil, err
	}
	lt, err := e.lockTimeout()
	if err != nil {
		return nil, err
	}
	return repo.Open(dir, repo.Options{Sync: e.getenv("AGENTSTATE_SYNC") == "1", LockTimeout: lt, Locked: e.locked})
}

// lockTimeout reads AGENTSTATE_LOCK_TIMEOUT (see parseLockTimeout).
func (e *env) lockTimeout() (time.Duration, error) {
	return parseLockTimeout(e.getenv("AGENTSTATE_LOCK_TIMEOUT"))
}

// parseLockTimeout parses AGENTSTATE_LOCK_TIMEOUT: how long a command waits
// for another process to release the store, as a Go duration ("10s",
// "500ms") or a number of seconds; "0" fails at once. The result is a
// repo.Options.LockTimeout: 0 (unset) means badger.DefaultLockTimeout, a
// negative value fails at once.
func parseLockTimeout(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		s, serr := strconv.ParseFloat(v, 64)
		if serr != nil || math.IsNaN(s) {
			return 0, usagef("AGENTSTATE_LOCK_TIMEOUT=%q: want a duration such as 10s or 500ms, or a number of seconds", v)
		}
		if s > float64(math.MaxInt64/int64(time.Second)) {
			return 0, usagef("AGENTSTATE_LOCK_TIMEOUT=%q: too long", v)
		}
		d = time.Duration(s * float64(time.Second))
		if s < 0 {
			d = -1
		}
	}
	if d < 0 {
		return 0, usagef("AGENTSTATE_LOCK_TIMEOUT=%q: must not be negative", v)
	}
	if d == 0 {
		d = -1 // badger.Options: negative fails at once, zero is the default
	}
	return d, nil
}

// withRepo opens the store, runs fn and closes the store.
func (e *env) withRepo(fn func(r *repo.Repo) error) error {
	return e.withRepoMode(false, fn)
}

// withRepoRead is withRepo for commands that only read: the store is opened
// read-only (faster to open), falling back to a normal open when Badger
// refuses read-only (for example after an unclean shutdown, which a writer
// must replay first).
func (e *env) withRepoRead(fn func(r *repo.Repo) error) error {
	return e.withRepoMode(true, fn)
}

func (e *env) withRepoMode(readOnly bool, fn0 func(r *repo.Repo) error) error {
	// A name not found gets the names close to it while the store is open.
	fn := func(r *repo.Repo) error {
		if err := e.agentFromStore(r); err != nil {
			return err
		}
		err := e.unnamed(fn0(r))
		if err != nil {
			if near := inspect.New(r).Near(e.ctx, e.agent, err); len(near) > 0 {
				err = &nearError{err, near}
			}
		}
		return err
	}
	if e.served != nil {
		// The server runs this command: its repository, not opened or
		// closed here, with the client's clock.
		if _, err := e.storeDir(); err != nil {
			return err
		}
		if !readOnly && !e.gatesOwnWrites {
			// Writers in flight keep a gc that runs beside them off their blocks.
			defer e.served.HoldWrites()()
		}
		return fn(e.served.WithClock(func() int64 { return repo.NowFrom(e.getenv) }))
	}
	if e.remoteFlag != "" {
		return e.withServer(e.remoteFlag, "", !readOnly, fn)
	}
	e.closed() // a read-only open this command closed before
	var r *repo.Repo
	openedRead := false
	dir, err := e.storeDir()
	if err != nil {
		return err
	}
	// A server holds the store: everything goes through it.
	if err := e.withServer(remote.SocketPath(dir), dir, !readOnly, fn); !errors.Is(err, remote.ErrNoServer) {
		return err
	}
	if readOnly {
		lt, lerr := e.lockTimeout()
		if lerr != nil {
			return lerr
		}
		// A read-only open writes nothing. When Badger refuses it (an unclean
		// shutdown left logs a writer must replay), the writable open below
		// does the recovery, within the same free-space check as any write.
		r, err = repo.Open(dir, repo.Options{ReadOnly: true, LockTimeout: lt})
		openedRead = err == nil
		if err != nil && !errors.Is(err, badger.ErrInUse) && !errors.Is(err, badger.ErrNotStore) && !errors.Is(err, badger.ErrDiskFull) {
			r, err = e.open()
		}
	} else {
		r, err = e.open()
	}
	if errors.Is(err, badger.ErrInUse) {
		// A server may have started between the dial and the open.
		if serr := e.withServer(remote.SocketPath(dir), dir, !readOnly, fn); !errors.Is(serr, remote.ErrNoServer) {
			return serr
		}
	}
	if err != nil {
		return err
	}
	err = fn(r)
	if openedRead {
		e.closeRead(r)
		return err
	}
	if cerr := r.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing store: %w", cerr)
	}
	return err
}

// closeRead closes a store the command opened read-only. In a process that
// ends with the command (mainIn's exits), the close runs beside the rest of
// the command and the exit cuts it short: a read-only open wrote nothing,
// and the exit releases its mappings, files and lock. Closing Badger takes
// 1.5–4 ms of an unserved read (docs/performance.md, "Where a person waits,
// a third time"). The next open in this process waits for it (closed), so
// no open of the store meets a close of it still running.
func (e *env) closeRead(r *repo.Repo) {
	if !e.exits {
		r.Close() // read-only: nothing to lose, nothing to report
		return
	}
	e.closed()
	done := make(chan struct{})
	e.closing = done
	go func() {
		defer close(done)
		r.Close()
	}()
}

// closed waits for a read-only close closeRead started, if any.
func (e *env) closed() {
	if e.closing != nil {
		<-e.closing
		e.closing = nil
	}
}

// withServer runs fn against a served store through its API. It returns
// remote.ErrNoServer, having done nothing, when nothing listens at addr (a
// socket file a killed server left included). A command that writes (write)
// first asks the server what its token may do, and stops before fn when the
// token may only read: nothing is uploaded, published or written.
func (e *env) withServer(addr, dir string, write bool, fn func(r *repo.Repo) error) error {
	opts := remote.DialOptions{Token: e.getenv("AGENTSTATE_TOKEN")}
	if ca := e.getenv("AGENTSTATE_REMOTE_CA"); ca != "" && dir == "" {
		tc, err := e.clientTLS(ca)
		if err != nil {
			return err
		}
		opts.TLS = tc
	}
	c, err := remote.Dial(e.ctx, addr, opts)
	if err != nil {
		if dir == "" && errors.Is(err, remote.ErrNoServer) {
			return fmt.Errorf("--remote %s: %v", addr, err)
		}
		return err
	}
	defer c.Close()
	if write && dir == "" { // the Unix socket is the owner's: it may do everything
		a, err := c.Access(e.ctx)
		if err != nil {
			return err
		}
		if a < remote.AccessWrite {
			return fmt.Errorf("%w: this command writes, and the token in AGENTSTATE_TOKEN may not (nothing was done)", remote.ErrReadOnly)
		}
	}
	r := repo.New(c)
	r.Dir = dir
	r.Now = func() int64 { return repo.NowFrom(e.getenv) }
	return fn(r)
}

// clientTLS trusts the PEM certificates in caFile for --remote.
func (e *env) clientTLS(caFile string) (*tls.Config, error) {
	pem, _, err := e.readInput(caFile, maxSecretFile)
	if err != nil {
		return nil, fmt.Errorf("AGENTSTATE_REMOTE_CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("AGENTSTATE_REMOTE_CA: %s holds no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13}, nil
}
