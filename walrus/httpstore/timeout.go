package httpstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"
)

// Timeouts bounds how long the client waits on a publisher or an aggregator,
// so that a server that stops answering, or answers a byte at a time, ends
// in an error instead of holding the caller for ever. A zero field takes
// its default; a negative one turns that bound off. The caller's context
// bounds everything as well: pass a deadline for an overall limit.
//
// There is deliberately no fixed limit on a whole transfer: a large blob on
// a slow but working link takes as long as it takes, as long as it keeps
// moving at least MinBytes per RateWindow.
type Timeouts struct {
	// Dial bounds opening a TCP connection (default 30s). It applies to the
	// client's own HTTP transport only, not to one given with WithHTTPClient
	// (whose connections are still bounded by ReadHeader and Idle).
	Dial time.Duration
	// TLSHandshake bounds the TLS handshake (default 10s); like Dial, own
	// transport only.
	TLSHandshake time.Duration
	// ReadHeader bounds a read request from its start (connection included)
	// to the end of the response headers, and of the body of an error
	// answer (default 60s). The aggregator reconstructs the blob from
	// storage nodes before it answers; that takes seconds, not minutes.
	ReadHeader time.Duration
	// StoreAnswer bounds the wait for a publisher's answer after the last
	// byte of the body was sent (default 5m). The publisher encodes the
	// blob, registers it on Sui, sends it to the storage nodes and certifies
	// it before it answers; that takes tens of seconds for a 10 MiB part on
	// a good day.
	StoreAnswer time.Duration
	// Idle aborts an attempt when no byte of a body (a request body being
	// sent or a response body being read) has moved for this long (default
	// 30s). On a read, only time spent waiting on the server counts, not
	// time the caller spends between Read calls. The attempt counts as
	// failed and is retried (resuming a read from where it stopped).
	Idle time.Duration
	// RateWindow and MinBytes are the throughput floor (defaults 60s and
	// 64 KiB, about 1 KiB/s): a transfer that moves fewer than MinBytes in
	// a window of RateWindow is given up for good, with no retry. A read
	// counts the time its caller waits in Read (reconnections and retry
	// waits included); a store counts the time sending the body and reading
	// the answer, not the time the publisher takes to answer.
	RateWindow time.Duration
	MinBytes   int64
}

// Default timeouts (see Timeouts for the reasoning).
const (
	DefaultDialTimeout         = 30 * time.Second
	DefaultTLSHandshakeTimeout = 10 * time.Second
	DefaultReadHeaderTimeout   = 60 * time.Second
	DefaultStoreAnswerTimeout  = 5 * time.Minute
	DefaultIdleTimeout         = 30 * time.Second
	DefaultRateWindow          = 60 * time.Second
	DefaultMinBytes            = 64 << 10
)

// WithTimeouts sets the client's timeouts; zero fields keep their defaults.
func WithTimeouts(t Timeouts) Option { return func(c *Client) { c.timeouts = t } }

// resolve fills in defaults and turns negative fields into 0, meaning off.
func (t Timeouts) resolve() Timeouts {
	d := func(v *time.Duration, def time.Duration) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			*v = 0
		}
	}
	d(&t.Dial, DefaultDialTimeout)
	d(&t.TLSHandshake, DefaultTLSHandshakeTimeout)
	d(&t.ReadHeader, DefaultReadHeaderTimeout)
	d(&t.StoreAnswer, DefaultStoreAnswerTimeout)
	d(&t.Idle, DefaultIdleTimeout)
	d(&t.RateWindow, DefaultRateWindow)
	switch {
	case t.MinBytes == 0:
		t.MinBytes = DefaultMinBytes
	case t.MinBytes < 0:
		t.MinBytes = 0
	}
	return t
}

// newTransport is the client's own HTTP transport: the usual proxy and
// connection pooling, with bounded dials and TLS handshakes.
func newTransport(t Timeouts) *http.Transport {
	d := &net.Dialer{Timeout: t.Dial, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   t.TLSHandshake,
		MaxIdleConns:          16,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// StallKind says which bound a stalled transfer ran into.
type StallKind int

const (
	// StallNoAnswer: no response (headers, or a whole error answer) within
	// ReadHeader of a read request, or within StoreAnswer of sending a
	// store's body. Retried.
	StallNoAnswer StallKind = iota + 1
	// StallIdle: no byte moved for Idle. Retried.
	StallIdle
	// StallSlow: fewer than MinBytes moved in a RateWindow. Not retried.
	StallSlow
)

// StallError reports a transfer the client aborted because the server
// stopped answering or answered too slowly. It matches ErrStalled. NoAnswer
// and Idle stalls are retried, so once the attempts run out they reach the
// caller inside a *walrus.RetryError (matching walrus.ErrUnavailable).
type StallError struct {
	// Op is what was being done: "store" or "read".
	Op string
	// Kind is the bound that ran out.
	Kind StallKind
	// Limit is that bound: ReadHeader or StoreAnswer, Idle, or RateWindow.
	Limit time.Duration
	// Bytes is, for StallSlow, how many bytes moved in the window.
	Bytes int64
	// MinBytes is, for StallSlow, the floor per window.
	MinBytes int64
}

// Error describes the stall.
func (e *StallError) Error() string {
	switch e.Kind {
	case StallNoAnswer:
		if e.Op == "store" {
			return fmt.Sprintf("walrus/httpstore: %s: no answer within %v of sending the body", e.Op, e.Limit)
		}
		return fmt.Sprintf("walrus/httpstore: %s: no answer within %v", e.Op, e.Limit)
	case StallIdle:
		return fmt.Sprintf("walrus/httpstore: %s: transfer stalled: no byte for %v", e.Op, e.Limit)
	case StallSlow:
		return fmt.Sprintf("walrus/httpstore: %s: transfer too slow: %d bytes in %v, the floor is %d", e.Op, e.Bytes, e.Limit, e.MinBytes)
	}
	return fmt.Sprintf("walrus/httpstore: %s: transfer stalled", e.Op)
}

// Is reports that a StallError is ErrStalled.
func (e *StallError) Is(target error) bool { return target == ErrStalled }

// ReadError reports a read of a blob that failed: which blob, how far it
// got and why. Get, and Read on the reader it returns, report their
// failures as a *ReadError (except io.EOF and the verification of a split
// blob as a whole, a *walrus.CorruptError).
type ReadError struct {
	// Blob is the blob id ("object 0x…" for a read by object id; for a part
	// of a split blob, "<id> part N (<part id>)").
	Blob string
	// Offset is how many bytes of that blob were delivered before the
	// failure.
	Offset int64
	// Size is the blob's size as the aggregator gave it, -1 if unknown.
	Size int64
	// Err is the cause: a *walrus.RetryError when the attempts ran out, a
	// *StallError, a *walrus.APIError, a context error, ...
	Err error
}

// Error describes the failure.
func (e *ReadError) Error() string {
	if e.Size >= 0 {
		return fmt.Sprintf("walrus/httpstore: read %s: failed at byte %d of %d: %v", e.Blob, e.Offset, e.Size, e.Err)
	}
	return fmt.Sprintf("walrus/httpstore: read %s: failed at byte %d: %v", e.Blob, e.Offset, e.Err)
}

// Unwrap returns the cause.
func (e *ReadError) Unwrap() error { return e.Err }

// watchdog aborts one attempt (a request and its response) that runs into a
// bound, by cancelling the attempt's context with a *StallError as cause.
// One timer serves every bound; arm sets which one runs.
type watchdog struct {
	cancel context.CancelCauseFunc
	op     string
	timer  *time.Timer
	mu     sync.Mutex
	armed  *StallError
}

func newWatchdog(cancel context.CancelCauseFunc, op string) *watchdog {
	w := &watchdog{cancel: cancel, op: op}
	w.timer = time.AfterFunc(time.Hour, w.fire)
	w.timer.Stop()
	return w
}

func (w *watchdog) fire() {
	w.mu.Lock()
	cause := w.armed
	w.mu.Unlock()
	if cause != nil {
		w.cancel(cause)
	}
}

// arm (re)starts the timer for the bound kind of length d; d == 0 means no
// bound.
func (w *watchdog) arm(kind StallKind, d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer.Stop()
	if d <= 0 {
		w.armed = nil
		return
	}
	w.armed = &StallError{Op: w.op, Kind: kind, Limit: d}
	w.timer.Reset(d)
}

// disarm stops the timer.
func (w *watchdog) disarm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.timer.Stop()
	w.armed = nil
}

// abort cancels the attempt now with cause.
func (w *watchdog) abort(cause *StallError) {
	w.disarm()
	w.cancel(cause)
}

// stallCause returns the *StallError an attempt's context was cancelled
// with, if any.
func stallCause(ctx context.Context) *StallError {
	var se *StallError
	if errors.As(context.Cause(ctx), &se) {
		return se
	}
	return nil
}

// rateMeter enforces the throughput floor: bytes moved per window of
// active time.
type rateMeter struct {
	op     string
	window time.Duration
	min    int64
	active time.Duration
	bytes  int64
}

// add records n bytes moved in d and returns a *StallError when a window
// has passed with fewer than the floor.
func (m *rateMeter) add(d time.Duration, n int64) *StallError {
	if m.window <= 0 || m.min <= 0 {
		return nil
	}
	m.active += d
	m.bytes += n
	if m.active < m.window {
		return nil
	}
	active, moved := m.active, m.bytes
	m.active, m.bytes = 0, 0
	// The window may have overrun (one long wait): scale the floor.
	if float64(moved) < float64(m.min)*float64(active)/float64(m.window) {
		return &StallError{Op: m.op, Kind: StallSlow, Limit: active.Round(time.Millisecond), Bytes: moved, MinBytes: m.min}
	}
	return nil
}

// reset starts a new window.
func (m *rateMeter) reset() { m.active, m.bytes = 0, 0 }
