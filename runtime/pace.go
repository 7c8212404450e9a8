package runtime

import (
	"context"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// DefaultBusyCommandRate is how many served command lines per second the
// runtime admits while tasks are landing (ServeOptions.BusyCommandRate).
const DefaultBusyCommandRate = 40

// busyFor is how long after its last task the runtime still counts as busy:
// an agent landing a task every few milliseconds is busy between them.
const busyFor = 100 * time.Millisecond

// pacer admits served commands (remote.Options.Admit: command lines, and
// connections to the repository API at their first call). While the
// runtime is idle every command runs at once; while tasks land (one in
// flight, or one ended within busyFor) commands are admitted at most
// BusyCommandRate per second (a burst of 8 at once), so that inspection
// loops, each command a process start plus its work here, cannot take the
// agent's CPU: the readers wait, the tasks do not.
type pacer struct {
	inFlight atomic.Int64
	lastEnd  atomic.Int64 // unix nanoseconds
	limit    *rate.Limiter
}

func newPacer(perSecond float64) *pacer {
	if perSecond == 0 {
		perSecond = DefaultBusyCommandRate
	}
	p := &pacer{}
	if perSecond > 0 {
		p.limit = rate.NewLimiter(rate.Limit(perSecond), 8)
	}
	return p
}

func (p *pacer) taskStart() { p.inFlight.Add(1) }

func (p *pacer) taskEnd() {
	p.lastEnd.Store(time.Now().UnixNano())
	p.inFlight.Add(-1)
}

func (p *pacer) busy() bool {
	return p.inFlight.Load() > 0 || time.Since(time.Unix(0, p.lastEnd.Load())) < busyFor
}

// admit implements remote.Options.Admit.
func (p *pacer) admit(ctx context.Context) error {
	if p.limit == nil || !p.busy() || p.limit.Allow() {
		return nil
	}
	return p.limit.Wait(ctx)
}
