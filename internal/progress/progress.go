// Package progress carries a progress reporter in a context: a long
// operation of a library (a walk of the store, a fetch, a directory read)
// counts what it has done on the context it was given, and whoever started
// it (the command line's progress bar) shows it. Without a reporter in the
// context counting costs a nil check.
package progress

import (
	"context"
	"sync"
	"sync/atomic"
)

// Func receives a count: done so far of total (total < 0: not known).
// It is called from the goroutines that count, so it must be safe for
// concurrent use, and it should be cheap (a bar throttles its drawing).
type Func func(done, total int64)

type key struct{}

type counterKey struct{}

// With returns ctx carrying f: the operations run with it report to f.
func With(ctx context.Context, f Func) context.Context {
	return context.WithValue(ctx, key{}, f)
}

// Counter counts one operation's progress; a nil Counter (no reporter in
// the context) counts nothing.
type Counter struct {
	f     Func
	done  atomic.Int64
	total atomic.Int64
	mu    sync.Mutex // calls to f in order
}

// Begin starts one count for an operation made of several (a walk per
// agent): Start under the context it returns gives that same Counter, so
// the parts add to one count.
func Begin(ctx context.Context, total int64) (context.Context, *Counter) {
	c := Start(ctx, total)
	if c == nil {
		return ctx, nil
	}
	return context.WithValue(ctx, counterKey{}, c), c
}

// Start returns a Counter reporting to ctx's Func, of total things (< 0:
// not known yet): the one Begin started, if any; nil when ctx carries no
// Func.
func Start(ctx context.Context, total int64) *Counter {
	if c, ok := ctx.Value(counterKey{}).(*Counter); ok {
		return c
	}
	f, _ := ctx.Value(key{}).(Func)
	if f == nil {
		return nil
	}
	c := &Counter{f: f}
	c.total.Store(total)
	c.report()
	return c
}

// Add counts n more done.
func (c *Counter) Add(n int64) {
	if c == nil {
		return
	}
	c.done.Add(n)
	c.report()
}

// SetTotal sets what the count goes to, once it is known.
func (c *Counter) SetTotal(total int64) {
	if c == nil {
		return
	}
	c.total.Store(total)
	c.report()
}

func (c *Counter) report() {
	c.mu.Lock()
	c.f(c.done.Load(), c.total.Load())
	c.mu.Unlock()
}
