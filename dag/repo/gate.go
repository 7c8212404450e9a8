package repo

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// A served store has writers in flight while gc runs: a runtime task or a
// command that has stored blocks but not yet moved HEAD to a commit reaching
// them. gc must not take those blocks for garbage. Writers in this process
// hold the gate (HoldWrites) from their first block to their HEAD move, and
// gc waits for them while holding new ones back; a remote client's blocks
// (put over several calls) are protected by time instead: gc refuses to run
// within RemoteWriteGrace of a remote block write.
type gate struct {
	mu         sync.RWMutex
	lastRemote atomic.Int64 // Unix nanoseconds of the last remote block write
}

// RemoteWriteGrace is how long after a remote client's last block write gc
// refuses to run: the time a client has to move HEAD to what it wrote.
const RemoteWriteGrace = time.Minute

// GCWait bounds how long gc waits for the writers in flight.
const GCWait = 30 * time.Second

// HoldWrites keeps gc from running until release is called: a writer holds
// it from its first stored block until its HEAD move (or failure). Holds
// run concurrently and gc waits for all of them; a holder must not take a
// second hold (a pending gc would wait for the first while the second waits
// for gc).
func (r *Repo) HoldWrites() (release func()) {
	r.gate.mu.RLock()
	return sync.OnceFunc(r.gate.mu.RUnlock)
}

// NoteRemoteWrite records that a remote client stored blocks now.
func (r *Repo) NoteRemoteWrite() { r.gate.lastRemote.Store(time.Now().UnixNano()) }

// exclusive waits (GCWait at most) until no writer holds the gate, and keeps
// new ones out until the returned function is called.
func (g *gate) exclusive(ctx context.Context) (func(), error) {
	got := make(chan struct{})
	go func() {
		g.mu.Lock()
		close(got)
	}()
	t := time.NewTimer(GCWait)
	defer t.Stop()
	select {
	case <-got:
	case <-t.C:
		go func() { <-got; g.mu.Unlock() }()
		return nil, fmt.Errorf("gc: writers still in flight after %s (nothing was deleted); try again", GCWait)
	case <-ctx.Done():
		go func() { <-got; g.mu.Unlock() }()
		return nil, ctx.Err()
	}
	if last := g.lastRemote.Load(); last != 0 {
		if since := time.Since(time.Unix(0, last)); since < RemoteWriteGrace {
			g.mu.Unlock()
			return nil, fmt.Errorf("gc: a remote client stored blocks %s ago and may not have moved HEAD to them yet (nothing was deleted); try again in %s",
				since.Round(time.Second), (RemoteWriteGrace - since).Round(time.Second))
		}
	}
	return g.mu.Unlock, nil
}

// agentLocks make the operations that read an agent's HEAD and then move it
// (Edit, Reset, Undo, Redo, Land) take turns within this process, so that
// a runtime landing a task every few milliseconds and a command undoing
// beside it never race each other into retries. Writers in other processes
// (a served store's remote clients) are met by compare-and-swap as before.
type agentLocks struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func (l *agentLocks) lock(agent string) (unlock func()) {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*sync.Mutex{}
	}
	m, ok := l.locks[agent]
	if !ok {
		m = &sync.Mutex{}
		l.locks[agent] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}
