package httpstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentstate/agentstate/walrus"
)

var (
	// ErrNoPublisher reports a Put on a client made without a publisher URL.
	ErrNoPublisher = errors.New("walrus/httpstore: no publisher URL configured; storing needs one")
	// ErrNoAggregator reports a Get on a client made without an aggregator URL.
	ErrNoAggregator = errors.New("walrus/httpstore: no aggregator URL configured; reading needs one")
	// ErrBadManifest reports bytes that begin with ManifestMagic but are not a
	// valid manifest.
	ErrBadManifest = errors.New("walrus/httpstore: malformed manifest")
	// ErrBadResponse reports a 2xx answer from a publisher that is not one of
	// the documented store results.
	ErrBadResponse = errors.New("walrus/httpstore: unrecognised store response")
	// ErrStalled reports a transfer aborted because the server stopped
	// answering or answered too slowly (see Timeouts and StallError).
	ErrStalled = errors.New("walrus/httpstore: transfer stalled")
)

// Defaults.
const (
	// DefaultPartSize is the largest blob stored in one request: 10 MiB (the
	// limit of public publishers) less 64 KiB of headroom.
	DefaultPartSize = 10<<20 - 64<<10
	// DefaultAttempts is how many times a request is tried.
	DefaultAttempts = 6
	// DefaultBaseBackoff is the first retry delay; it doubles on each retry.
	DefaultBaseBackoff = 500 * time.Millisecond
	// DefaultMaxBackoff caps a retry delay, including one asked for by a
	// Retry-After header.
	DefaultMaxBackoff = 30 * time.Second
	// DefaultMemorySpool is the largest body of unknown length or without
	// random access that Put buffers in memory; larger ones spool to a
	// temporary file.
	DefaultMemorySpool = 1 << 20
	// minPartSize keeps parts (and so the manifest count) sane.
	minPartSize = 1 << 10
)

// maxResponse bounds how much of a publisher's answer to a PUT is read. The
// documented answers are about 1 KiB.
const maxResponse = 64 << 10

// Client stores blobs through a Walrus publisher and reads them through an
// aggregator. It is safe for concurrent use.
type Client struct {
	publisher   string // base URL without trailing slash, "" if none
	aggregator  string
	hc          *http.Client
	attempts    int
	baseBackoff time.Duration
	maxBackoff  time.Duration
	partSize    int64
	memSpool    int64
	spoolDir    string
	userAgent   string
	timeouts    Timeouts // as given; zero fields mean the defaults
	to          Timeouts // resolved: 0 means off
	hcSet       bool
	// sleep waits for d or until ctx is done; tests replace it.
	sleep func(ctx context.Context, d time.Duration) error
}

var _ walrus.Store = (*Client)(nil)

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sets the HTTP client. The default is a client with no
// overall timeout, since uploads of large blobs take long, and a transport
// with the Dial and TLSHandshake timeouts; the other Timeouts are enforced
// per request by this package, whichever client is used.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) { c.hc, c.hcSet = hc, true }
}

// WithRetry sets how many times a request is tried (at least 1) and the
// backoff: the n-th retry waits a random duration in [d/2, d] with
// d = min(max, base*2^(n-1)), or what a Retry-After header asks, capped at max.
func WithRetry(attempts int, base, max time.Duration) Option {
	return func(c *Client) { c.attempts, c.baseBackoff, c.maxBackoff = attempts, base, max }
}

// WithPartSize sets the largest blob stored in one request; larger blobs
// are split into parts of this size under a manifest blob.
func WithPartSize(n int64) Option { return func(c *Client) { c.partSize = n } }

// WithSpool sets where Put spools bodies it cannot re-read (dir "" means the
// system temporary directory) and how large a body it keeps in memory
// instead.
func WithSpool(dir string, memory int64) Option {
	return func(c *Client) { c.spoolDir, c.memSpool = dir, memory }
}

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client for the given publisher and aggregator base URLs
// (such as "https://publisher.example"; the client appends "/v1/blobs").
// Either may be empty: Put then fails with ErrNoPublisher, or Get with
// ErrNoAggregator.
func New(publisherURL, aggregatorURL string, opts ...Option) (*Client, error) {
	c := &Client{
		attempts:    DefaultAttempts,
		baseBackoff: DefaultBaseBackoff,
		maxBackoff:  DefaultMaxBackoff,
		partSize:    DefaultPartSize,
		memSpool:    DefaultMemorySpool,
		userAgent:   "agentstate-walrus/1",
		sleep:       sleepCtx,
	}
	var err error
	if c.publisher, err = baseURL("publisher", publisherURL); err != nil {
		return nil, err
	}
	if c.aggregator, err = baseURL("aggregator", aggregatorURL); err != nil {
		return nil, err
	}
	for _, o := range opts {
		o(c)
	}
	c.to = c.timeouts.resolve()
	if !c.hcSet {
		c.hc = &http.Client{Transport: newTransport(c.to)}
	}
	switch {
	case c.hc == nil:
		return nil, errors.New("walrus/httpstore: nil HTTP client")
	case c.attempts < 1:
		return nil, fmt.Errorf("walrus/httpstore: attempts %d, want at least 1", c.attempts)
	case c.baseBackoff < 0 || c.maxBackoff < c.baseBackoff:
		return nil, fmt.Errorf("walrus/httpstore: backoff base %v max %v, want 0 <= base <= max", c.baseBackoff, c.maxBackoff)
	case c.partSize < minPartSize:
		return nil, fmt.Errorf("walrus/httpstore: part size %d, want at least %d", c.partSize, minPartSize)
	case c.memSpool < 0:
		return nil, fmt.Errorf("walrus/httpstore: negative memory spool %d", c.memSpool)
	}
	return c, nil
}

func baseURL(role, s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("walrus/httpstore: %s URL: %w", role, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("walrus/httpstore: %s URL %q: want http:// or https:// and a host", role, s)
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("walrus/httpstore: %s URL %q: must not carry a query, fragment or credentials", role, s)
	}
	return strings.TrimRight(u.String(), "/"), nil
}

// PartSize returns the largest blob the client stores in one request.
func (c *Client) PartSize() int64 { return c.partSize }

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// backoff returns the wait before retry number n (1-based), honouring a
// server's Retry-After when it asks for longer.
func (c *Client) backoff(n int, retryAfter time.Duration) time.Duration {
	d := c.baseBackoff
	for i := 1; i < n && d < c.maxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.maxBackoff)
	if d > 1 {
		d = d/2 + rand.N(d/2+1)
	}
	if retryAfter > d {
		d = min(retryAfter, c.maxBackoff)
	}
	return d
}

// transportError marks a failure to get an answer (connection refused,
// reset or dropped, truncated response): worth retrying.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// retryable reports whether err is worth another attempt, and any delay the
// server asked for.
func retryable(err error) (bool, time.Duration) {
	var ae *walrus.APIError
	if errors.As(err, &ae) {
		return ae.Temporary(), ae.RetryAfter
	}
	var te *transportError
	return errors.As(err, &te), 0
}

// retry runs op until it succeeds, fails for good, runs out of attempts or
// ctx is done.
func (c *Client) retry(ctx context.Context, what string, op func() error) error {
	for attempt := 1; ; attempt++ {
		err := op()
		if err == nil {
			return nil
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("walrus/httpstore: %s: %w", what, ctxErr)
		}
		again, after := retryable(err)
		if !again {
			return err
		}
		if attempt >= c.attempts {
			return &walrus.RetryError{Op: what, Attempts: attempt, Err: err}
		}
		if err := c.sleep(ctx, c.backoff(attempt, after)); err != nil {
			return fmt.Errorf("walrus/httpstore: %s: waiting to retry: %w", what, err)
		}
	}
}

// Put stores the blob. Bodies up to the part size go in one request; larger
// ones (and ones that begin with ManifestMagic) are stored as parts under a
// manifest blob, whose id is returned.
//
// Requests are retried, so the body must be re-readable: a reader that is
// both an io.ReaderAt and an io.Seeker (such as *os.File or *bytes.Reader)
// with a known size is read in place from its current offset (and must not
// change during Put; it is left positioned after the blob); anything else is
// spooled to memory (up to the memory spool size) or to a temporary file
// that is removed when Put returns. Either way memory use stays bounded.
func (c *Client) Put(ctx context.Context, r io.Reader, size int64, opts walrus.StoreOptions) (walrus.Stored, error) {
	if err := opts.Validate(); err != nil {
		return walrus.Stored{}, fmt.Errorf("walrus/httpstore: store: %w", err)
	}
	if size < -1 {
		return walrus.Stored{}, fmt.Errorf("walrus/httpstore: store: %w: negative size %d", walrus.ErrSizeMismatch, size)
	}
	if c.publisher == "" {
		return walrus.Stored{}, ErrNoPublisher
	}
	if err := ctx.Err(); err != nil {
		return walrus.Stored{}, fmt.Errorf("walrus/httpstore: store: %w", err)
	}
	src, err := c.openSource(ctx, r, size)
	if err != nil {
		return walrus.Stored{}, err
	}
	defer src.close()

	prog := &progress{fn: opts.Progress, total: src.size}
	q := url.Values{}
	epochs := opts.Epochs
	if epochs == 0 {
		epochs = 1
	}
	q.Set("epochs", strconv.Itoa(epochs))
	if opts.Permanent {
		q.Set("permanent", "true")
	}
	if opts.SendObjectTo != "" {
		q.Set("send_object_to", opts.SendObjectTo)
	}
	endpoint := c.publisher + "/v1/blobs?" + q.Encode()

	if src.size <= c.partSize && !src.magic {
		res, err := c.storeOne(ctx, endpoint, io.NewSectionReader(src.ra, 0, src.size), prog, 0)
		if err != nil {
			return walrus.Stored{}, err
		}
		prog.report(src.size)
		return walrus.Stored{BlobID: res.BlobID, ObjectID: res.ObjectID, EndEpoch: res.EndEpoch, Size: src.size, AlreadyCertified: res.AlreadyCertified}, nil
	}

	n := (src.size + c.partSize - 1) / c.partSize
	if n > MaxParts || manifestHeaderLen+n*manifestEntryLen > c.partSize {
		return walrus.Stored{}, fmt.Errorf("walrus/httpstore: store: %w: %d bytes need %d parts of %d bytes, more than one manifest can list", walrus.ErrTooLarge, src.size, n, c.partSize)
	}
	m := &Manifest{Size: src.size, SHA256: src.sum, Parts: make([]Part, 0, n)}
	out := walrus.Stored{Size: src.size, AlreadyCertified: true, Parts: int(n)}
	for off := int64(0); off < src.size; off += c.partSize {
		partLen := min(c.partSize, src.size-off)
		res, err := c.storeOne(ctx, endpoint, io.NewSectionReader(src.ra, off, partLen), prog, off)
		if err != nil {
			return walrus.Stored{}, fmt.Errorf("walrus/httpstore: store part %d of %d: %w", len(m.Parts)+1, n, err)
		}
		prog.report(off + partLen)
		m.Parts = append(m.Parts, Part{ID: res.BlobID, Size: partLen})
		out.AlreadyCertified = out.AlreadyCertified && res.AlreadyCertified
		if out.EndEpoch == 0 || res.EndEpoch < out.EndEpoch {
			out.EndEpoch = res.EndEpoch
		}
	}
	mb, err := m.MarshalBinary()
	if err != nil {
		return walrus.Stored{}, fmt.Errorf("walrus/httpstore: store: encode manifest: %w", err)
	}
	res, err := c.storeOne(ctx, endpoint, io.NewSectionReader(bytesReaderAt(mb), 0, int64(len(mb))), nil, 0)
	if err != nil {
		return walrus.Stored{}, fmt.Errorf("walrus/httpstore: store manifest: %w", err)
	}
	out.BlobID, out.ObjectID = res.BlobID, res.ObjectID
	out.AlreadyCertified = out.AlreadyCertified && res.AlreadyCertified
	out.EndEpoch = min(out.EndEpoch, res.EndEpoch)
	return out, nil
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// progress reports bytes sent, never going backwards.
type progress struct {
	fn       func(done, total int64)
	total    int64
	reported int64
	called   bool
}

func (p *progress) report(done int64) {
	if p == nil || p.fn == nil || done < p.reported || done == p.reported && p.called {
		return
	}
	p.reported, p.called = done, true
	p.fn(done, p.total)
}

// storeOne stores one blob (a whole small blob, a part or a manifest) with
// retries.
func (c *Client) storeOne(ctx context.Context, endpoint string, body *io.SectionReader, prog *progress, progBase int64) (storeResult, error) {
	var res storeResult
	err := c.retry(ctx, "store", func() error {
		var err error
		res, err = c.putOnce(ctx, endpoint, body, prog, progBase)
		return err
	})
	return res, err
}

// bodyReader feeds a request body, reporting progress and remembering its
// own read errors (which are not worth retrying, unlike network errors).
type bodyReader struct {
	r        io.Reader
	sent     int64
	prog     *progress
	progBase int64
	err      error
	w        *putWatch
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.sent += int64(n)
	if n > 0 {
		b.prog.report(b.progBase + b.sent)
	}
	if err != nil && err != io.EOF {
		b.err = err
	}
	if b.w != nil {
		b.w.moved(n)
		if err == io.EOF {
			b.w.sent()
		}
	}
	return n, err
}

// putWatch watches one store attempt: Idle and the throughput floor while
// the body is sent, StoreAnswer until the answer begins, then Idle and the
// floor again while the answer is read. It is called from the transport's
// goroutine as well as the caller's.
type putWatch struct {
	wd    *watchdog
	to    Timeouts
	mu    sync.Mutex
	meter rateMeter
	last  time.Time
	on    bool // the meter runs (sending the body, reading the answer)
}

func newPutWatch(cancel context.CancelCauseFunc, to Timeouts) *putWatch {
	return &putWatch{wd: newWatchdog(cancel, "store"), to: to, meter: rateMeter{op: "store", window: to.RateWindow, min: to.MinBytes}}
}

// transfer starts a phase where bytes move: the body, or the answer.
func (w *putWatch) transfer() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on, w.last = true, time.Now()
	w.meter.reset()
	w.wd.arm(StallIdle, w.to.Idle)
}

// sent starts the wait for the answer.
func (w *putWatch) sent() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on = false
	w.wd.arm(StallNoAnswer, w.to.StoreAnswer)
}

// moved records n bytes moved.
func (w *putWatch) moved(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.on || n == 0 {
		return
	}
	now := time.Now()
	slow := w.meter.add(now.Sub(w.last), int64(n))
	w.last = now
	if slow != nil {
		w.on = false
		w.wd.abort(slow)
		return
	}
	w.wd.arm(StallIdle, w.to.Idle)
}

func (w *putWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on = false
	w.wd.disarm()
}

// watchedBody counts the bytes of an answer for a putWatch.
type watchedBody struct {
	r io.Reader
	w *putWatch
}

func (b watchedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.w.moved(n)
	return n, err
}

// stallOr returns the stall that aborted an attempt, as a retryable
// transport failure (or, for a transfer below the floor, as final), else
// err.
func stallOr(actx context.Context, err error) error {
	se := stallCause(actx)
	switch {
	case se == nil:
		return err
	case se.Kind == StallSlow:
		return se
	}
	return &transportError{se}
}

func (b *bodyReader) Close() error { return nil }

func (c *Client) putOnce(ctx context.Context, endpoint string, body *io.SectionReader, prog *progress, progBase int64) (storeResult, error) {
	size := body.Size()
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := newPutWatch(cancel, c.to)
	defer w.stop()
	br := &bodyReader{r: io.NewSectionReader(body, 0, size), prog: prog, progBase: progBase, w: w}
	req, err := http.NewRequestWithContext(actx, http.MethodPut, endpoint, br)
	if err != nil {
		return storeResult{}, fmt.Errorf("walrus/httpstore: store: %w", err)
	}
	req.ContentLength = size
	if size == 0 {
		req.Body = http.NoBody
	}
	req.GetBody = func() (io.ReadCloser, error) {
		w.transfer()
		return &bodyReader{r: io.NewSectionReader(body, 0, size), w: w}, nil
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("User-Agent", c.userAgent)
	if size == 0 {
		w.sent()
	} else {
		w.transfer()
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		if br.err != nil {
			return storeResult{}, fmt.Errorf("walrus/httpstore: store: reading the blob: %w", br.err)
		}
		return storeResult{}, stallOr(actx, &transportError{fmt.Errorf("walrus/httpstore: store: %w", err)})
	}
	defer resp.Body.Close()
	w.transfer()
	limit := int64(maxResponse)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		limit = maxErrorBody
	}
	raw, err := io.ReadAll(io.LimitReader(watchedBody{resp.Body, w}, limit+1))
	w.stop()
	if se := stallCause(actx); se != nil && se.Kind == StallSlow {
		return storeResult{}, se
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return storeResult{}, decodeAPIError("store", resp.StatusCode, resp.Header, raw)
	}
	if err != nil {
		return storeResult{}, stallOr(actx, &transportError{fmt.Errorf("walrus/httpstore: store: reading the answer: %w", err)})
	}
	if len(raw) > maxResponse {
		return storeResult{}, fmt.Errorf("walrus/httpstore: store: %w: answer larger than %d bytes (a store answer is about 1 KiB)", ErrBadResponse, maxResponse)
	}
	res, err := decodeStoreResponse(raw)
	if err != nil {
		return storeResult{}, fmt.Errorf("walrus/httpstore: store: %w", err)
	}
	if res.Size >= 0 && res.Size != size {
		return storeResult{}, fmt.Errorf("walrus/httpstore: store: %w: publisher says blob %s has %d bytes, %d were sent", ErrBadResponse, res.BlobID, res.Size, size)
	}
	return res, nil
}
