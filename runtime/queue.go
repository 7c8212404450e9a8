package runtime

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/agentstate/agentstate/objects"
)

// Snapshotter ships one commit of an agent off the machine (for example
// export → encrypt → blob store → pointer). It must return once ctx is done.
type Snapshotter interface {
	Push(ctx context.Context, agent string, commit objects.CID) (SnapshotResult, error)
}

// SnapshotResult describes a shipped snapshot.
type SnapshotResult struct {
	BlobID     string
	BundleHash string
	Size       int64
	// Pointer names where the blob id was published ("" when not published).
	Pointer          string
	EndEpoch         int64
	AlreadyCertified bool
	// HistoryPacks is the number of packs of the agent's published history
	// after this push (Options.History), 0 without it.
	HistoryPacks int
}

// SnapshotEvent is one outcome of the snapshot queue.
type SnapshotEvent struct {
	Agent  string
	Commit objects.CID
	// Attempt counts pushes of this agent since its last success, this one
	// included (1 for a first try).
	Attempt int
	Result  SnapshotResult // on success
	Err     error          // nil on success
	// Final is true when the queue will not retry this outcome: a success, a
	// failure after MaxAttempts, a full queue, or a shutdown (ErrClosed).
	Final bool
	// Coalesced counts the queued commits this push superseded.
	Coalesced int
	Time      time.Time
}

// QueueOptions tune the snapshot queue. Zero values mean the defaults.
type QueueOptions struct {
	// MaxAgents bounds how many agents can wait for a snapshot at once
	// (default 1024). Each agent holds at most one queued commit, its
	// newest; an agent arriving at a full queue is reported with
	// ErrQueueFull and picked up again by its next landing.
	MaxAgents int
	// Workers is how many pushes run at once (default 2). Pushes of one
	// agent never overlap, so its pointer only moves forward.
	Workers int
	// MaxAttempts bounds tries per snapshot (default 6).
	MaxAttempts int
	// Backoff is the delay before the first retry (default 1s); it doubles
	// per failure up to MaxBackoff (default 1m), with ±20% jitter.
	Backoff, MaxBackoff time.Duration
	// PushTimeout bounds one push (default 10m).
	PushTimeout time.Duration
	// DrainTimeout bounds how long Close waits for queued snapshots
	// (default 30s).
	DrainTimeout time.Duration
}

func (o QueueOptions) withDefaults() QueueOptions {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.MaxAgents, 1024)
	def(&o.Workers, 2)
	def(&o.MaxAttempts, 6)
	defd(&o.Backoff, time.Second)
	defd(&o.MaxBackoff, time.Minute)
	defd(&o.PushTimeout, 10*time.Minute)
	defd(&o.DrainTimeout, 30*time.Second)
	return o
}

type job struct {
	agent     string
	commit    objects.CID
	attempt   int // failures so far
	notBefore time.Time
	coalesced int
}

// queue is the background snapshot queue.
type queue struct {
	snap   Snapshotter
	opts   QueueOptions
	notify func(SnapshotEvent)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	pending  map[string]*job // agent → newest commit waiting
	order    []string        // agents with a pending job, oldest first
	inflight map[string]bool
	last     map[string]SnapshotEvent
	changed  chan struct{} // closed and replaced on every change
	closing  bool
	events   sync.WaitGroup // notifications sent from outside the workers
}

func newQueue(snap Snapshotter, opts QueueOptions, notify func(SnapshotEvent)) *queue {
	q := &queue{snap: snap, opts: opts.withDefaults(), notify: notify,
		pending: map[string]*job{}, inflight: map[string]bool{}, last: map[string]SnapshotEvent{}, changed: make(chan struct{})}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	if snap != nil {
		for range q.opts.Workers {
			q.wg.Add(1)
			go q.worker()
		}
	}
	return q
}

func (q *queue) broadcastLocked() {
	close(q.changed)
	q.changed = make(chan struct{})
}

func (q *queue) emit(ev SnapshotEvent) {
	ev.Time = time.Now()
	q.mu.Lock()
	q.last[ev.Agent] = ev
	q.mu.Unlock()
	if q.notify != nil {
		q.notify(ev)
	}
}

// enqueue asks for a snapshot of agent at commit. It never blocks on the
// snapshotter.
func (q *queue) enqueue(agent string, commit objects.CID) {
	if q.snap == nil {
		return
	}
	q.mu.Lock()
	if q.closing {
		q.mu.Unlock()
		return
	}
	if j, ok := q.pending[agent]; ok {
		j.commit = commit
		j.coalesced++
		q.broadcastLocked()
		q.mu.Unlock()
		return
	}
	if len(q.pending) >= q.opts.MaxAgents {
		q.mu.Unlock()
		// Report without blocking the landing task.
		q.events.Add(1)
		go func() {
			defer q.events.Done()
			q.emit(SnapshotEvent{Agent: agent, Commit: commit, Err: fmt.Errorf("%w: %d agents already waiting", ErrQueueFull, q.opts.MaxAgents), Final: true})
		}()
		return
	}
	q.pending[agent] = &job{agent: agent, commit: commit}
	q.order = append(q.order, agent)
	q.broadcastLocked()
	q.mu.Unlock()
}

// take returns the next runnable job, or the time to wait for one.
func (q *queue) takeLocked(now time.Time) (*job, time.Duration) {
	wait := time.Duration(-1)
	for i, a := range q.order {
		if q.inflight[a] {
			continue
		}
		j := q.pending[a]
		if d := j.notBefore.Sub(now); d > 0 {
			if wait < 0 || d < wait {
				wait = d
			}
			continue
		}
		q.order = append(q.order[:i:i], q.order[i+1:]...)
		delete(q.pending, a)
		q.inflight[a] = true
		return j, 0
	}
	return nil, wait
}

func (q *queue) worker() {
	defer q.wg.Done()
	for {
		if q.ctx.Err() != nil {
			return
		}
		q.mu.Lock()
		j, wait := q.takeLocked(time.Now())
		ch := q.changed
		q.mu.Unlock()
		if j == nil {
			var t *time.Timer
			var timer <-chan time.Time
			if wait >= 0 {
				t = time.NewTimer(wait)
				timer = t.C
			}
			select {
			case <-q.ctx.Done():
			case <-ch:
			case <-timer:
			}
			if t != nil {
				t.Stop()
			}
			if q.ctx.Err() != nil {
				return
			}
			continue
		}
		q.run(j)
	}
}

func (q *queue) run(j *job) {
	ctx, cancel := context.WithTimeout(q.ctx, q.opts.PushTimeout)
	res, err := q.snap.Push(ctx, j.agent, j.commit)
	cancel()
	ev := SnapshotEvent{Agent: j.agent, Commit: j.commit, Attempt: j.attempt + 1, Coalesced: j.coalesced, Result: res}
	q.mu.Lock()
	if err != nil {
		ev.Err = err
		j.attempt++
		switch {
		case q.ctx.Err() != nil:
			ev.Err, ev.Final = fmt.Errorf("%w: snapshot of %s cancelled: %w", ErrClosed, short(j.commit), err), true
		case j.attempt >= q.opts.MaxAttempts:
			ev.Err, ev.Final = fmt.Errorf("runtime: snapshot of agent %q at %s failed %d times, giving up until its next change: %w", j.agent, short(j.commit), j.attempt, err), true
		default:
			// Retry later; a newer queued commit of the agent takes its place
			// but inherits the backoff so a failing store is not hammered.
			next := j
			if p, ok := q.pending[j.agent]; ok {
				p.attempt = j.attempt
				next = p
			} else {
				j.coalesced = 0
				q.pending[j.agent] = j
				q.order = append(q.order, j.agent)
			}
			next.notBefore = time.Now().Add(q.backoff(j.attempt))
		}
	} else {
		ev.Final = true
	}
	q.mu.Unlock()
	// The agent stays in flight until its event is out, so an agent's events
	// arrive in the order its pushes ran.
	q.emit(ev)
	q.mu.Lock()
	delete(q.inflight, j.agent)
	q.broadcastLocked()
	q.mu.Unlock()
}

func (q *queue) backoff(failures int) time.Duration {
	d := q.opts.Backoff
	for i := 1; i < failures && d < q.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, q.opts.MaxBackoff)
	jitter := 0.8 + 0.4*rand.Float64()
	return time.Duration(float64(d) * jitter)
}

// idle waits until nothing is queued or in flight, or ctx is done.
func (q *queue) idle(ctx context.Context) error {
	for {
		q.mu.Lock()
		empty := len(q.pending) == 0 && len(q.inflight) == 0
		ch := q.changed
		q.mu.Unlock()
		if empty {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-q.ctx.Done():
			return ErrClosed
		case <-ch:
		}
	}
}

// close drains (bounded by ctx and DrainTimeout), then cancels the rest and
// waits for the workers.
func (q *queue) close(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, q.opts.DrainTimeout)
	defer cancel()
	q.mu.Lock()
	q.closing = true
	q.mu.Unlock()
	if q.snap != nil {
		_ = q.idle(ctx)
	}
	q.cancel()
	q.wg.Wait()
	q.mu.Lock()
	left := make([]*job, 0, len(q.order))
	for _, a := range q.order {
		left = append(left, q.pending[a])
	}
	q.pending, q.order = map[string]*job{}, nil
	q.mu.Unlock()
	for _, j := range left {
		q.emit(SnapshotEvent{Agent: j.agent, Commit: j.commit, Attempt: j.attempt, Coalesced: j.coalesced,
			Err: fmt.Errorf("%w: snapshot of agent %q at %s was still queued", ErrClosed, j.agent, short(j.commit)), Final: true})
	}
	q.events.Wait()
}

// SnapshotStatus is the snapshot queue's view of one agent.
type SnapshotStatus struct {
	Queued   bool        // a commit waits to be pushed
	Commit   objects.CID // the queued commit, if any
	InFlight bool        // a push is running
	// Last is the agent's most recent outcome, if any.
	Last *SnapshotEvent
}

// SnapshotStatus reports the snapshot queue's state for agent.
func (rt *Runtime) SnapshotStatus(agent string) SnapshotStatus {
	q := rt.queue
	q.mu.Lock()
	defer q.mu.Unlock()
	var s SnapshotStatus
	if j, ok := q.pending[agent]; ok {
		s.Queued, s.Commit = true, j.commit
	}
	s.InFlight = q.inflight[agent]
	if ev, ok := q.last[agent]; ok {
		s.Last = &ev
	}
	return s
}

// WaitSnapshots waits until the snapshot queue is empty and no push is
// running (successes and final failures both count as done), or until ctx
// is done. It returns ErrSnapshotsOff when no snapshotter is configured.
func (rt *Runtime) WaitSnapshots(ctx context.Context) error {
	if rt.snap == nil {
		return ErrSnapshotsOff
	}
	return rt.queue.idle(ctx)
}

// Snapshot queues a snapshot of agent's HEAD now, whether or not its bundle
// hash moved (for example after a restore, or to refresh an expiring blob).
func (rt *Runtime) Snapshot(ctx context.Context, agent string) error {
	if rt.snap == nil {
		return ErrSnapshotsOff
	}
	if err := rt.enter(); err != nil {
		return err
	}
	defer rt.leave()
	h, err := rt.Head(ctx, agent)
	if err != nil {
		return err
	}
	if h.IsZero() {
		return fmt.Errorf("%w: %q", ErrUnknownAgent, agent)
	}
	rt.queue.enqueue(agent, h)
	return nil
}
