package runtime

import (
	"crypto/tls"
	"net/http"

	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	reposerver "github.com/agentstate/agentstate/dag/repo/remote"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/export/history"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/tape"
	"github.com/agentstate/agentstate/walrus"
)

// Options configure a Runtime.
type Options struct {
	// Store is the store directory. It is created and initialised when it
	// does not exist or is empty.
	Store string
	// InMemory makes the store ephemeral (tests, benchmarks): a private
	// directory under /dev/shm (else the temporary directory) that Close
	// removes; Store is ignored.
	InMemory bool
	// Sync makes every landing durable (fsync) before RunTask returns, and
	// every write from outside a task before it returns. A task's own
	// commits and its receipt are held in memory and written with its
	// landing (or the next durable write): one synced store write per task.
	// A process killed before a task lands loses only that task's commits;
	// a receipt it did not write is re-created when the agent is next loaded.
	Sync bool
	// Signer is the operator key that signs receipts. Required. Its public
	// half is recorded in the store at Open as a trusted operator key, which
	// is what 'agentstate receipts --verify' checks against by default.
	Signer ed25519.PrivateKey

	// Snapshots through the built-in pipeline (export/snapshot): the
	// deterministic tar of the commit with receipts.ndjson, encrypted with
	// Cipher, stored in Blobs, published through Pointer. Setting Cipher and
	// Blobs enables both background snapshots and cold restore. Pointer
	// defaults to a pointer file per agent in <Store>/pointers (required
	// with InMemory).
	Cipher      envelope.Cipher
	Blobs       walrus.Store
	Pointer     snapshot.Pointer
	BlobOptions walrus.StoreOptions

	// History also ships each agent's whole history with its snapshots
	// (export/history: a pack of what is new, receipts included, and a
	// manifest signed with Signer), and makes a cold start rebuild the
	// whole log from it (every commit, every receipt against its real
	// commit) when one is published, before falling back to the snapshot.
	// HistoryPointer names the manifest; by default a file
	// <pointer dir>/<agent>.history beside a pointer file (required when
	// Pointer is not a snapshot.FilePointer: ens.HistoryPointer for the
	// agent-history record).
	History        bool
	HistoryPointer history.Pointer

	// Snapshotter and Restorer replace the built-in pipeline for pushing and
	// for cold restore respectively (a custom transport, or tests).
	Snapshotter Snapshotter
	Restorer    Restorer

	// SeedDir holds seed brains: an agent with no state and no snapshot
	// starts from SeedDir/<agent>/ when that directory exists.
	SeedDir string

	// Queue tunes the background snapshot queue.
	Queue QueueOptions
	// OnSnapshot, if set, is called with every snapshot outcome, from a
	// queue worker goroutine. It must not block for long.
	OnSnapshot func(SnapshotEvent)

	// NoServe turns off serving. By default the runtime serves the store it
	// holds on the Unix socket in the store directory, so that the
	// agentstate command and Go programs (dag/repo/remote) inspect, time
	// travel and fork the live brain; Serve tunes it.
	NoServe bool
	Serve   ServeOptions

	// Retention, if set, makes the runtime apply a retention policy to every
	// agent of the store on its own, every Retention.Every, beside its tasks
	// (each forget waits for the tasks in flight and holds new ones back
	// while it cuts and prunes; docs/runtime.md §12).
	Retention *Retention
}

// Retention is a retention policy the runtime applies on its own.
type Retention struct {
	Policy repo.Policy
	// Every is how often (default an hour).
	Every time.Duration
	// OnForget, if set, is called with each agent's report, then once with
	// agent "": the collection that follows them all in rep.GC, and the
	// round's error (it names each agent that failed; the others were cut).
	OnForget func(agent string, rep repo.ForgetReport, err error)
}

// ServeOptions tune the runtime's server (dag/repo/remote).
type ServeOptions struct {
	// Listen also serves the repository API on TCP (HOST:PORT); Tokens
	// (read-write) and ReadTokens (read-only) are the bearer tokens a TCP
	// client must present; TLS, if set, encrypts it.
	Listen     string
	Tokens     []string
	ReadTokens []string
	TLS        *tls.Config
	// Exec lets the agentstate command run whole command lines in this
	// process (fast: no engine start, the runtime's caches warm). Set it to
	// runtime/cliexec.Exec, which links the command line into the program.
	// Without it, commands go through the repository API.
	Exec reposerver.ExecFunc
	// HTTP, given the runtime's repository, returns what HTTP requests to
	// the Listen address are served (once their token is checked): set it
	// to runtime/web.Handler for the MCP endpoint at /mcp, and with
	// web.Options.UI the time-travel page.
	HTTP func(*repo.Repo) http.Handler
	// BusyCommandRate bounds the commands per second the server admits
	// while tasks are landing (a task in flight or one ended in the last
	// 100 ms): command lines (Exec), and connections to the repository API
	// at their first call. The rest wait their turn, so loops of inspection
	// commands do not slow the agent. Idle, commands run at once. 0 means
	// DefaultBusyCommandRate; negative, no bound.
	BusyCommandRate float64
}

// Runtime runs agents' tasks over one store. It is safe for concurrent use.
type Runtime struct {
	repo   *repo.Repo
	tape   *tape.Tape
	signer ed25519.PrivateKey
	pub    ed25519.PublicKey
	opts   Options

	snap     Snapshotter
	restorer Restorer
	queue    *queue
	server   *reposerver.Server
	stopKeep func() // stops the retention loop

	agents sync.Map // agent name → *agentState
	dirs   sync.Map // absolute working directory → *dirState

	mu      sync.Mutex // guards closing with tasks.Add
	closed  atomic.Bool
	tasks   sync.WaitGroup
	pace    *pacer
	closeMu sync.Mutex
	closeEr error
	isShut  bool
}

// agentState is the per-agent coordination: landings of one agent are
// serialized (so the receipt tape is in HEAD order); nothing else is.
type agentState struct {
	land   sync.Mutex
	cold   sync.Mutex
	exists atomic.Bool
}

func (rt *Runtime) agent(name string) *agentState {
	if s, ok := rt.agents.Load(name); ok {
		return s.(*agentState)
	}
	s, _ := rt.agents.LoadOrStore(name, &agentState{})
	return s.(*agentState)
}

// OperatorKeyPrefix is the store metadata prefix under which Open records
// the public keys of the operators that signed receipts in this store
// ("runtime/operator/" + 64 hex digits): keys trusted for every agent
// (repo.OperatorKeyPrefix; dag/repo/trust.go).
const OperatorKeyPrefix = repo.OperatorKeyPrefix

// Open opens (creating it if needed) the store and starts the snapshot
// queue.
func Open(ctx context.Context, opts Options) (*Runtime, error) {
	if len(opts.Signer) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("%w: Options.Signer must be an ed25519 private key (%d bytes), got %d bytes", ErrNoSigner, ed25519.PrivateKeySize, len(opts.Signer))
	}
	if !opts.InMemory && opts.Store == "" {
		return nil, fmt.Errorf("runtime: Options.Store is empty: name a store directory (or set InMemory)")
	}
	r, err := openRepo(opts)
	if err != nil {
		return nil, err
	}
	rt := &Runtime{repo: r, tape: r.Tape, signer: opts.Signer, pub: opts.Signer.Public().(ed25519.PublicKey), opts: opts, pace: newPacer(opts.Serve.BusyCommandRate)}
	fail := func(err error) (*Runtime, error) {
		r.Close()
		return nil, err
	}
	if _, err := r.EmptyTree(ctx); err != nil {
		return fail(fmt.Errorf("runtime: storing the empty tree: %w", err))
	}
	if err := r.Storage.SetMeta(ctx, OperatorKeyPrefix+hex.EncodeToString(rt.pub), []byte(time.Now().UTC().Format(time.RFC3339))); err != nil {
		return fail(fmt.Errorf("runtime: recording the operator key: %w", err))
	}
	rt.snap, rt.restorer = opts.Snapshotter, opts.Restorer
	if opts.Cipher != nil && opts.Blobs != nil {
		ptr := opts.Pointer
		if ptr == nil {
			if opts.InMemory {
				return fail(fmt.Errorf("runtime: an in-memory store needs Options.Pointer for snapshots"))
			}
			ptr = snapshot.FilePointer{Dir: filepath.Join(opts.Store, "pointers")}
		}
		p := &snapshot.Pipeline{Repo: r, Cipher: opts.Cipher, Blobs: opts.Blobs, Pointer: ptr, Options: opts.BlobOptions}
		var hist *history.Shipper
		if opts.History {
			hp := opts.HistoryPointer
			if fp, ok := ptr.(snapshot.FilePointer); ok && hp == nil {
				hp = history.FilePointer{Dir: fp.Dir}
			}
			if hp == nil {
				return fail(fmt.Errorf("runtime: Options.History with a %T snapshot pointer needs Options.HistoryPointer", ptr))
			}
			hist = &history.Shipper{Repo: r, Cipher: opts.Cipher, Blobs: opts.Blobs, Pointer: hp, Options: opts.BlobOptions, RecordKeys: true}
		}
		if rt.snap == nil {
			rt.snap = pipelineSnapshotter{p: p, hist: hist, key: opts.Signer}
		}
		if rt.restorer == nil {
			rt.restorer = pipelineRestorer{p: p, hist: hist}
		}
	} else if opts.Cipher != nil || opts.Blobs != nil {
		return fail(fmt.Errorf("runtime: snapshots need both Options.Cipher and Options.Blobs"))
	}
	rt.queue = newQueue(rt.snap, opts.Queue, opts.OnSnapshot)
	if !opts.NoServe && !opts.InMemory {
		srv, err := reposerver.Start(r, reposerver.Options{Holder: "runtime", Exec: opts.Serve.Exec, Admit: rt.pace.admit, Listen: opts.Serve.Listen,
			Tokens: opts.Serve.Tokens, ReadTokens: opts.Serve.ReadTokens, TLS: opts.Serve.TLS, HTTP: httpHandler(r, opts.Serve.HTTP)})
		if err != nil {
			rt.queue.close(ctx)
			return fail(fmt.Errorf("runtime: serving the store: %w", err))
		}
		rt.server = srv
	}
	if opts.Retention != nil {
		if opts.Retention.Policy.IsZero() {
			rt.Close()
			return nil, fmt.Errorf("runtime: Options.Retention needs a policy (a Policy with at least one keep rule)")
		}
		rt.startRetention(*opts.Retention)
	}
	return rt, nil
}

// startRetention runs the retention loop until Shutdown.
func (rt *Runtime) startRetention(o Retention) {
	if o.Every <= 0 {
		o.Every = time.Hour
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	rt.stopKeep = func() { cancel(); <-done }
	go func() {
		defer close(done)
		t := time.NewTicker(o.Every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rt.applyRetention(ctx, o)
		}
	}()
}

func (rt *Runtime) applyRetention(ctx context.Context, o Retention) {
	heads, err := rt.repo.Refs.Agents(ctx)
	if err != nil {
		if o.OnForget != nil {
			o.OnForget("", repo.ForgetReport{}, err)
		}
		return
	}
	agents := make([]string, len(heads))
	for i, h := range heads {
		agents[i] = h.Agent
	}
	// One collection after every agent's cut: it walks the whole store.
	reps, gc, err := rt.repo.ForgetAgents(ctx, agents, o.Policy, false)
	if ctx.Err() != nil || o.OnForget == nil {
		return
	}
	for _, rep := range reps {
		o.OnForget(rep.Agent, rep, nil)
	}
	o.OnForget("", repo.ForgetReport{GC: gc}, err)
}

func openRepo(opts Options) (*repo.Repo, error) {
	ropts := repo.Options{Sync: opts.Sync, InMemory: opts.InMemory}
	if opts.InMemory {
		return repo.Init("", ropts)
	}
	ents, err := os.ReadDir(opts.Store)
	switch {
	case errors.Is(err, os.ErrNotExist) || (err == nil && len(ents) == 0):
		r, err := repo.Init(opts.Store, ropts)
		if err != nil {
			return nil, fmt.Errorf("runtime: creating store %s: %w", opts.Store, err)
		}
		return r, nil
	case err != nil:
		return nil, fmt.Errorf("runtime: store %s: %w", opts.Store, err)
	}
	r, err := repo.Open(opts.Store, ropts)
	if err != nil {
		return nil, fmt.Errorf("runtime: opening store %s: %w", opts.Store, err)
	}
	return r, nil
}

// PublicKey returns the operator's public key.
func (rt *Runtime) PublicKey() ed25519.PublicKey { return rt.pub }

// Close stops accepting tasks, waits for running tasks to return, drains
// the snapshot queue for at most Options.Queue.DrainTimeout (then cancels
// what is still queued or in flight, reporting each with ErrClosed) and
// closes the store. Calling it again returns the first result.
func (rt *Runtime) Close() error {
	return rt.Shutdown(context.Background())
}

// Shutdown is Close with a caller-chosen bound on draining: it drains until
// ctx is done or DrainTimeout passes, whichever comes first.
func (rt *Runtime) Shutdown(ctx context.Context) error {
	rt.closeMu.Lock()
	defer rt.closeMu.Unlock()
	if rt.isShut {
		return rt.closeEr
	}
	rt.isShut = true
	if rt.stopKeep != nil {
		rt.stopKeep()
	}
	rt.mu.Lock()
	rt.closed.Store(true)
	rt.mu.Unlock()
	rt.tasks.Wait()
	rt.queue.close(ctx)
	if rt.server != nil {
		rt.server.Close() // before the store: served calls end first
	}
	if err := rt.repo.Close(); err != nil {
		rt.closeEr = fmt.Errorf("runtime: closing store: %w", err)
	}
	return rt.closeEr
}

// enter registers a running operation; it fails once Close has begun.
func (rt *Runtime) enter() error {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.closed.Load() {
		return ErrClosed
	}
	rt.tasks.Add(1)
	rt.pace.taskStart()
	return nil
}

func (rt *Runtime) leave() {
	rt.pace.taskEnd()
	rt.tasks.Done()
}

// Head returns an agent's HEAD commit, or the zero CID for an agent with no
// state. It does not trigger a cold start.
func (rt *Runtime) Head(ctx context.Context, agent string) (objects.CID, error) {
	if err := refs.ValidateAgent(agent); err != nil {
		return objects.CID{}, err
	}
	h, err := rt.repo.Refs.Head(ctx, agent)
	if errors.Is(err, refs.ErrNoAgent) {
		return objects.CID{}, nil
	}
	return h.Commit, err
}

// Origin says where an agent's state came from when it was loaded.
type Origin string

const (
	OriginExisting Origin = "existing" // the store had it
	OriginRestored Origin = "restored" // restored from its snapshot pointer
	OriginSeeded   Origin = "seeded"   // committed from SeedDir/<agent>/
	OriginNew      Origin = "new"      // nothing anywhere: starts empty
)

// AgentInfo describes a loaded agent.
type AgentInfo struct {
	Name   string
	Head   objects.CID // zero for a new agent until its first task lands
	Origin Origin
	// Restore is set when the agent was restored from a snapshot.
	Restore *RestoreResult
}

// Agent loads an agent, cold-starting it when the store has no state for
// it: from its snapshot pointer if it has one (a snapshot whose content does
// not hash to the lineage it claims is refused, and nothing moves), else
// from SeedDir/<agent>/ if that exists, else it stays empty. RunTask does
// the same on an agent's first task.
func (rt *Runtime) Agent(ctx context.Context, name string) (AgentInfo, error) {
	if err := refs.ValidateAgent(name); err != nil {
		return AgentInfo{}, err
	}
	if err := rt.enter(); err != nil {
		return AgentInfo{}, err
	}
	defer rt.leave()
	return rt.load(ctx, name)
}

func (rt *Runtime) load(ctx context.Context, name string) (AgentInfo, error) {
	info := AgentInfo{Name: name, Origin: OriginExisting}
	st := rt.agent(name)
	if st.exists.Load() {
		h, err := rt.Head(ctx, name)
		info.Head = h
		return info, err
	}
	st.cold.Lock()
	defer st.cold.Unlock()
	h, err := rt.Head(ctx, name)
	if err != nil {
		return info, err
	}
	if !h.IsZero() {
		st.land.Lock() // no landing of this agent is between its move and its receipt
		_, err := rt.repairReceipts(ctx, name)
		st.land.Unlock()
		if err != nil {
			return info, err
		}
		st.exists.Store(true)
		info.Head = h
		return info, nil
	}
	if rt.restorer != nil {
		res, err := rt.restorer.Restore(ctx, name)
		switch {
		case err == nil:
			st.exists.Store(true)
			info.Head, info.Origin, info.Restore = res.Commit, OriginRestored, &res
			return info, nil
		case !errors.Is(err, ErrNoSnapshot):
			return info, fmt.Errorf("runtime: cold start of agent %q: restoring its snapshot: %w (nothing was changed; the seed is not used while a snapshot exists)", name, err)
		}
	}
	if rt.opts.SeedDir != "" {
		dir := filepath.Join(rt.opts.SeedDir, name)
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			c, err := rt.seed(ctx, name, dir)
			if err != nil {
				return info, fmt.Errorf("runtime: cold start of agent %q from seed %s: %w", name, dir, err)
			}
			st.exists.Store(true)
			info.Head, info.Origin = c, OriginSeeded
			return info, nil
		}
	}
	info.Origin = OriginNew
	return info, nil
}

func (rt *Runtime) seed(ctx context.Context, agent, dir string) (objects.CID, error) {
	res, err := export.ImportDir(ctx, rt.repo.Blocks, dir, export.ImportOptions{})
	if err != nil {
		return objects.CID{}, err
	}
	tree := res.Tree
	c, _, err := rt.repo.CommitTree(ctx, repo.CommitRequest{Agent: agent, Tree: tree, Fresh: true, AllowEmpty: true,
		Op: refs.OpImport, Message: "seed from " + filepath.Base(dir), Metadata: map[string]string{"agent": agent, "seed": filepath.Base(dir)}})
	if errors.Is(err, refs.ErrConflict) {
		// Created meanwhile (by a task in this process): keep that.
		return rt.Head(ctx, agent)
	}
	return c, err
}

// Fork starts agent to as a copy of agent from's HEAD (O(1): objects are
// shared). The new agent's receipt tape starts empty; from's receipts stay
// with from.
func (rt *Runtime) Fork(ctx context.Context, from, to string) (objects.CID, error) {
	if err := refs.ValidateAgent(to); err != nil {
		return objects.CID{}, err
	}
	if err := rt.enter(); err != nil {
		return objects.CID{}, err
	}
	defer rt.leave()
	info, err := rt.Agent(ctx, from)
	if err != nil {
		return objects.CID{}, err
	}
	if info.Head.IsZero() {
		return objects.CID{}, fmt.Errorf("%w: cannot fork %q, it has no commits", ErrUnknownAgent, from)
	}
	if _, err := rt.repo.Fork(ctx, from, info.Head, to); err != nil {
		return objects.CID{}, err
	}
	rt.agent(to).exists.Store(true)
	return info.Head, nil
}

// Receipts returns an agent's receipt tape, oldest first, parsed. A line
// that does not parse is an error naming its position.
func (rt *Runtime) Receipts(ctx context.Context, agent string) ([]*Receipt, error) {
	if err := refs.ValidateAgent(agent); err != nil {
		return nil, err
	}
	var out []*Receipt
	i := 0
	for line, err := range rt.tape.Lines(ctx, agent) {
		i++
		if err != nil {
			return nil, fmt.Errorf("runtime: reading the receipt tape of %q: %w", agent, err)
		}
		r, err := ParseReceipt(line)
		if err != nil {
			return nil, fmt.Errorf("runtime: receipt %d of %q: %w", i, agent, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func httpHandler(r *repo.Repo, mk func(*repo.Repo) http.Handler) http.Handler {
	if mk == nil {
		return nil
	}
	return mk(r)
}
