package httpstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentstate/agentstate/walrus"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// Get streams the blob named id from the aggregator. A manifest blob is
// recognised by its magic and its parts are streamed in order; their sizes
// are checked as they arrive and the sha256 of the whole at the end, where a
// mismatch is returned (as a *walrus.CorruptError) instead of io.EOF.
// Dropped connections and truncated bodies are resumed with Range requests.
func (c *Client) Get(ctx context.Context, id walrus.BlobID) (io.ReadCloser, error) {
	if _, err := walrus.ParseBlobID(string(id)); err != nil {
		return nil, fmt.Errorf("walrus/httpstore: read: %w", err)
	}
	return c.open(ctx, "/v1/blobs/"+string(id), string(id), id)
}

// GetByObjectID streams the blob whose Sui Blob object is objectID ("0x"
// and hex digits), like Get.
func (c *Client) GetByObjectID(ctx context.Context, objectID string) (io.ReadCloser, error) {
	if !walrus.IsSuiAddress(objectID) {
		return nil, fmt.Errorf("walrus/httpstore: read: %q is not a Sui object id", clean(objectID, 80))
	}
	return c.open(ctx, "/v1/blobs/by-object-id/"+objectID, "object "+objectID, "")
}

// ReadManifest returns the manifest stored under id, or ok=false if the blob
// is an ordinary blob rather than a manifest. Callers use it to list the
// parts of a split blob (to check or renew their lifetimes).
func (c *Client) ReadManifest(ctx context.Context, id walrus.BlobID) (m *Manifest, ok bool, err error) {
	if _, err := walrus.ParseBlobID(string(id)); err != nil {
		return nil, false, fmt.Errorf("walrus/httpstore: read: %w", err)
	}
	head, r, err := c.openHead(ctx, "/v1/blobs/"+string(id), string(id))
	if err != nil {
		return nil, false, err
	}
	defer r.Close()
	if !IsManifest(head) {
		return nil, false, nil
	}
	m, err = c.readManifest(head, r, id, string(id))
	return m, err == nil, err
}

func (c *Client) openHead(ctx context.Context, path, name string) ([]byte, *blobReader, error) {
	if c.aggregator == "" {
		return nil, nil, ErrNoAggregator
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("walrus/httpstore: read %s: %w", name, err)
	}
	r := c.newBlobReader(ctx, c.aggregator+path, name)
	head := make([]byte, len(ManifestMagic))
	n, err := io.ReadFull(r, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		r.Close()
		return nil, nil, err
	}
	return head[:n], r, nil
}

func (c *Client) open(ctx context.Context, path, name string, id walrus.BlobID) (io.ReadCloser, error) {
	head, r, err := c.openHead(ctx, path, name)
	if err != nil {
		return nil, err
	}
	if !IsManifest(head) {
		return &prefixReader{head: head, r: r}, nil
	}
	m, err := c.readManifest(head, r, id, name)
	r.Close()
	if err != nil {
		return nil, err
	}
	return &manifestReader{c: c, ctx: ctx, id: id, name: name, m: m, h: sha256.New()}, nil
}

func (c *Client) readManifest(head []byte, r *blobReader, id walrus.BlobID, name string) (*Manifest, error) {
	if r.total > MaxManifestSize {
		// Refused from its size, before reading gigabytes of it.
		return nil, &walrus.CorruptError{ID: id, What: name + ": manifest size", Want: fmt.Sprintf("at most %d bytes (%d parts)", MaxManifestSize, MaxParts), Got: fmt.Sprintf("%d bytes", r.total)}
	}
	rest, err := io.ReadAll(io.LimitReader(r, MaxManifestSize-int64(len(head))+1))
	if err != nil {
		return nil, err
	}
	m, err := DecodeManifest(append(head, rest...))
	if err != nil {
		return nil, &walrus.CorruptError{ID: id, What: name + ": manifest", Want: "a valid manifest", Got: err.Error()}
	}
	return m, nil
}

// prefixReader returns the bytes read to look for the magic, then the rest.
type prefixReader struct {
	head []byte
	r    *blobReader
}

func (p *prefixReader) Read(b []byte) (int, error) {
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	return p.r.Read(b)
}

func (p *prefixReader) Close() error { return p.r.Close() }

// blobReader streams one blob, resuming with a Range request when the
// connection drops, the body comes up short or stalls.
//
// An attempt is one GET and its body. The attempts are bounded: r.fails
// counts consecutive failed attempts that made no progress, where an
// attempt that delivered new bytes counts as the first failure of a new
// run, and an attempt answered 200 to a ranged request (the aggregator
// ignored Range and resent from byte 0) never counts as progress, so that a
// body cut again and again is re-sent at most attempts times. On top of
// that, the throughput floor (Timeouts.RateWindow, MinBytes) bounds the
// time a read may take per byte delivered, whatever the attempts do.
type blobReader struct {
	c    *Client
	ctx  context.Context
	url  string
	name string // for errors: the blob id, or "object 0x..."

	// The current attempt; body == nil between attempts.
	body      io.ReadCloser
	actx      context.Context
	cancel    context.CancelCauseFunc
	wd        *watchdog
	skip      int64 // bytes to discard: the aggregator ignored Range
	restarted bool  // this attempt was answered 200 to a ranged request
	advanced  bool  // this attempt delivered new bytes

	off        int64 // bytes delivered so far
	total      int64 // full size, -1 while unknown
	fails      int   // consecutive failed attempts without progress
	retryAfter time.Duration
	meter      rateMeter
	moved      int64         // bytes read from the network, skipped ones included
	active     time.Duration // time blocked reading bodies or backing off
	scratch    []byte
	err        error // sticky
}

func (c *Client) newBlobReader(ctx context.Context, url, name string) *blobReader {
	return &blobReader{c: c, ctx: ctx, url: url, name: name, total: -1,
		meter: rateMeter{op: "read", window: c.to.RateWindow, min: c.to.MinBytes}}
}

// request issues the GET for the bytes from r.off on.
func (r *blobReader) request() error {
	r.actx, r.cancel = context.WithCancelCause(r.ctx)
	r.wd = newWatchdog(r.cancel, "read")
	r.restarted, r.advanced, r.skip = false, false, 0
	req, err := http.NewRequestWithContext(r.actx, http.MethodGet, r.url, nil)
	if err != nil {
		r.endAttempt()
		return err
	}
	req.Header.Set("User-Agent", r.c.userAgent)
	if r.off > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(r.off, 10)+"-")
	}
	// The answer must begin within ReadHeader; an error answer must also
	// end within it.
	r.wd.arm(StallNoAnswer, r.c.to.ReadHeader)
	resp, err := r.c.hc.Do(req)
	if err != nil {
		err = stallOr(r.actx, &transportError{fmt.Errorf("GET: %w", err)})
		r.endAttempt()
		return err
	}
	r.body = resp.Body
	switch resp.StatusCode {
	case http.StatusOK:
		if resp.ContentLength >= 0 {
			if err := r.setTotal(resp.ContentLength); err != nil {
				r.endAttempt()
				return err
			}
		}
		if r.off > 0 {
			// The aggregator ignored Range: skip what was delivered.
			r.skip, r.restarted = r.off, true
		}
	case http.StatusPartialContent:
		start, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != r.off {
			r.endAttempt()
			return fmt.Errorf("asked for bytes from %d, got Content-Range %q", r.off, clean(resp.Header.Get("Content-Range"), 80))
		}
		if total >= 0 {
			if err := r.setTotal(total); err != nil {
				r.endAttempt()
				return err
			}
		}
	default:
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		err := stallOr(r.actx, decodeAPIError("read", resp.StatusCode, resp.Header, raw))
		r.endAttempt()
		return err
	}
	r.wd.disarm()
	return nil
}

// endAttempt closes the current attempt's body and releases its context.
func (r *blobReader) endAttempt() {
	if r.body != nil {
		r.body.Close()
		r.body = nil
	}
	if r.wd != nil {
		r.wd.disarm()
	}
	if r.cancel != nil {
		r.cancel(nil)
	}
}

// failed counts a failed attempt. It returns the final error once the
// attempts are used up, else nil after waiting the backoff.
func (r *blobReader) failed(cause error, after time.Duration) error {
	if r.advanced && !r.restarted {
		r.fails = 1
	} else {
		r.fails++
	}
	if r.fails >= r.c.attempts {
		return &walrus.RetryError{Op: "read", Attempts: r.fails, Err: cause}
	}
	d := r.c.backoff(r.fails, after)
	if after == 0 {
		// The client's own waits count towards the throughput floor (so a
		// server that drops every connection after a byte or two is given
		// up on); waits a server asked for do not.
		r.active += d
	}
	if err := r.c.sleep(r.ctx, d); err != nil {
		return fmt.Errorf("waiting to retry: %w", err)
	}
	return nil
}

// connect makes attempts until one gets an answer, or fails for good.
func (r *blobReader) connect() error {
	for {
		err := r.request()
		if err == nil {
			return nil
		}
		if ctxErr := r.ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		again, after := retryable(err)
		if !again {
			return err
		}
		if err := r.failed(err, after); err != nil {
			return err
		}
	}
}

func (r *blobReader) setTotal(total int64) error {
	if r.total >= 0 && r.total != total {
		return &walrus.CorruptError{ID: walrus.BlobID(""), What: r.name + ": size changed between requests", Want: strconv.FormatInt(r.total, 10), Got: strconv.FormatInt(total, 10)}
	}
	r.total = total
	return nil
}

// parseContentRange reads "bytes a-b/total" (total may be "*", given as -1).
func parseContentRange(v string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	a, b, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || start < 0 || end < start {
		return 0, 0, false
	}
	if tot == "*" {
		return start, -1, true
	}
	total, err := strconv.ParseInt(tot, 10, 64)
	if err != nil || total <= end {
		return 0, 0, false
	}
	return start, total, true
}

// Read delivers the blob's bytes. The throughput floor measures the time
// spent in it blocked on a body or in the client's own backoff; waiting for
// an answer's headers is bounded by ReadHeader instead, and time between
// calls is the caller's.
func (r *blobReader) Read(p []byte) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	active, moved := r.active, r.moved
	n, err := r.read(p)
	if err == nil {
		if slow := r.meter.add(r.active-active, r.moved-moved); slow != nil {
			r.fail(slow)
		}
	}
	return n, err
}

// bodyRead reads from the current body, within the idle bound.
func (r *blobReader) bodyRead(p []byte) (int, error) {
	start := time.Now()
	r.wd.arm(StallIdle, r.c.to.Idle)
	n, err := r.body.Read(p)
	r.wd.disarm()
	r.active += time.Since(start)
	r.moved += int64(n)
	return n, err
}

func (r *blobReader) read(p []byte) (int, error) {
	for {
		if r.err != nil {
			return 0, r.err
		}
		if err := r.ctx.Err(); err != nil {
			r.fail(err)
			continue
		}
		if r.body == nil {
			if r.total >= 0 && r.off >= r.total {
				r.err = io.EOF
				continue
			}
			if err := r.connect(); err != nil {
				r.fail(err)
				continue
			}
		}
		var n int
		var err error
		if r.skip > 0 {
			if r.scratch == nil {
				r.scratch = make([]byte, 32<<10)
			}
			var k int
			k, err = r.bodyRead(r.scratch[:min(int64(len(r.scratch)), r.skip)])
			r.skip -= int64(k)
			if err == io.EOF && r.skip > 0 {
				err = io.ErrUnexpectedEOF
			}
		} else if len(p) > 0 {
			n, err = r.bodyRead(p)
			r.off += int64(n)
			if n > 0 {
				r.advanced = true
			}
		}
		if err == io.EOF && (r.total < 0 || r.off == r.total) {
			r.endAttempt()
			r.err = io.EOF
			return n, io.EOF
		}
		if err == nil && r.total >= 0 && r.off > r.total {
			r.fail(&walrus.CorruptError{What: r.name + ": body longer than its Content-Length", Want: strconv.FormatInt(r.total, 10), Got: strconv.FormatInt(r.off, 10)})
			return n, nil
		}
		if err != nil {
			// Dropped, short or stalled: resume from r.off after a backoff.
			cause := r.bodyError(err)
			r.endAttempt()
			if ctxErr := r.ctx.Err(); ctxErr != nil {
				r.fail(ctxErr)
			} else if se, ok := cause.(*StallError); ok {
				r.fail(se) // below the floor: not retried
			} else if ferr := r.failed(cause, 0); ferr != nil {
				r.fail(ferr)
			}
		}
		if n > 0 || len(p) == 0 && r.skip == 0 {
			return n, nil
		}
	}
}

// bodyError describes a failed body read.
func (r *blobReader) bodyError(err error) error {
	if se := stallCause(r.actx); se != nil {
		if se.Kind == StallSlow {
			return se
		}
		return &transportError{se}
	}
	if r.restarted {
		return &transportError{fmt.Errorf("the aggregator ignores Range (asked for bytes from %d, it answered 200 with the whole blob) and the body was cut at byte %d: %w", r.off, r.off-r.skip, err)}
	}
	return &transportError{fmt.Errorf("body cut off at byte %d: %w", r.off, err)}
}

// fail makes err the reader's final error, naming the blob and the offset.
func (r *blobReader) fail(err error) {
	r.endAttempt()
	if err == io.EOF {
		r.err = err
		return
	}
	r.err = &ReadError{Blob: r.name, Offset: r.off, Size: r.total, Err: err}
}

func (r *blobReader) Close() error {
	r.endAttempt()
	if r.err == nil {
		r.err = errors.New("walrus/httpstore: read from a closed blob")
	}
	return nil
}

// manifestReader streams the parts a manifest lists and verifies them.
type manifestReader struct {
	c    *Client
	ctx  context.Context
	id   walrus.BlobID
	name string
	m    *Manifest
	i    int         // current part
	cur  *blobReader // nil between parts
	left int64       // bytes of the current part still to come
	h    hash.Hash
	n    int64
	err  error
}

func (mr *manifestReader) corrupt(what string, want, got any) error {
	return &walrus.CorruptError{ID: mr.id, What: mr.name + ": " + what, Want: fmt.Sprint(want), Got: fmt.Sprint(got)}
}

func (mr *manifestReader) Read(p []byte) (int, error) {
	for mr.err == nil {
		if mr.cur == nil {
			if mr.i == len(mr.m.Parts) {
				var got [32]byte
				mr.h.Sum(got[:0])
				switch {
				case mr.n != mr.m.Size:
					mr.err = mr.corrupt("total size", mr.m.Size, mr.n)
				case got != mr.m.SHA256:
					mr.err = mr.corrupt("sha256 of the whole", hex.EncodeToString(mr.m.SHA256[:]), hex.EncodeToString(got[:]))
				default:
					mr.err = io.EOF
				}
				break
			}
			part := mr.m.Parts[mr.i]
			mr.cur = mr.c.newBlobReader(mr.ctx, mr.c.aggregator+"/v1/blobs/"+string(part.ID), fmt.Sprintf("%s part %d (%s)", mr.name, mr.i+1, part.ID))
			mr.left = part.Size
		}
		if mr.left == 0 {
			// The part must end here.
			var one [1]byte
			n, err := mr.cur.Read(one[:])
			if n > 0 {
				mr.err = mr.corrupt(fmt.Sprintf("part %d size", mr.i+1), mr.m.Parts[mr.i].Size, "more")
				break
			}
			if err != io.EOF {
				mr.err = err
				break
			}
			mr.cur.Close()
			mr.cur = nil
			mr.i++
			continue
		}
		if len(p) == 0 {
			return 0, nil
		}
		q := p
		if int64(len(q)) > mr.left {
			q = q[:mr.left]
		}
		n, err := mr.cur.Read(q)
		mr.h.Write(q[:n])
		mr.n += int64(n)
		mr.left -= int64(n)
		if err == io.EOF && mr.left > 0 {
			mr.err = mr.corrupt(fmt.Sprintf("part %d size", mr.i+1), mr.m.Parts[mr.i].Size, mr.m.Parts[mr.i].Size-mr.left)
		} else if err != nil && err != io.EOF {
			mr.err = err
		}
		if n > 0 {
			return n, nil
		}
	}
	return 0, mr.err
}

func (mr *manifestReader) Close() error {
	if mr.cur != nil {
		mr.cur.Close()
		mr.cur = nil
	}
	if mr.err == nil {
		mr.err = errors.New("walrus/httpstore: read from a closed blob")
	}
	return nil
}
