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
	r := &blobReader{c: c, ctx: ctx, url: c.aggregator + path, name: name, total: -1}
	if err := r.connect(); err != nil {
		return nil, nil, err
	}
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

func (c *Client) readManifest(head []byte, r io.Reader, id walrus.BlobID, name string) (*Manifest, error) {
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
// connection drops or the body comes up short.
type blobReader struct {
	c     *Client
	ctx   context.Context
	url   string
	name  string // for errors: the blob id, or "object 0x..."
	body  io.ReadCloser
	off   int64 // bytes delivered so far
	total int64 // full size, -1 while unknown
	fails int   // consecutive failures without progress
	err   error // sticky
}

// connect issues the GET for the bytes from r.off on, with retries.
func (r *blobReader) connect() error {
	what := "read " + r.name
	return r.c.retry(r.ctx, what, r.request)
}

func (r *blobReader) request() error {
	req, err := http.NewRequestWithContext(r.ctx, http.MethodGet, r.url, nil)
	if err != nil {
		return fmt.Errorf("walrus/httpstore: read %s: %w", r.name, err)
	}
	req.Header.Set("User-Agent", r.c.userAgent)
	if r.off > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(r.off, 10)+"-")
	}
	resp, err := r.c.hc.Do(req)
	if err != nil {
		return &transportError{fmt.Errorf("walrus/httpstore: read %s: %w", r.name, err)}
	}
	switch resp.StatusCode {
	case http.StatusOK:
		if resp.ContentLength >= 0 {
			if err := r.setTotal(resp.ContentLength); err != nil {
				resp.Body.Close()
				return err
			}
		}
		if r.off > 0 {
			// The server ignored the Range header: skip what was delivered.
			if _, err := io.CopyN(io.Discard, resp.Body, r.off); err != nil {
				resp.Body.Close()
				return &transportError{fmt.Errorf("walrus/httpstore: read %s: skipping to offset %d: %w", r.name, r.off, err)}
			}
		}
	case http.StatusPartialContent:
		start, total, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != r.off {
			resp.Body.Close()
			return fmt.Errorf("walrus/httpstore: read %s: asked for bytes from %d, got Content-Range %q", r.name, r.off, clean(resp.Header.Get("Content-Range"), 80))
		}
		if total >= 0 {
			if err := r.setTotal(total); err != nil {
				resp.Body.Close()
				return err
			}
		}
	default:
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return fmt.Errorf("walrus/httpstore: read %s: %w", r.name, decodeAPIError("read", resp.StatusCode, resp.Header, raw))
	}
	r.body = resp.Body
	return nil
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

func (r *blobReader) Read(p []byte) (int, error) {
	for {
		if r.err != nil {
			return 0, r.err
		}
		if err := r.ctx.Err(); err != nil {
			r.fail(fmt.Errorf("walrus/httpstore: read %s: %w", r.name, err))
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
		n, err := r.body.Read(p)
		r.off += int64(n)
		if n > 0 {
			r.fails = 0
		}
		if err == io.EOF && (r.total < 0 || r.off == r.total) {
			r.body.Close()
			r.body = nil
			r.err = io.EOF
			return n, io.EOF
		}
		if err == nil && r.total >= 0 && r.off > r.total {
			r.fail(&walrus.CorruptError{What: r.name + ": body longer than its Content-Length", Want: strconv.FormatInt(r.total, 10), Got: strconv.FormatInt(r.off, 10)})
			return n, nil
		}
		if err != nil {
			// Dropped or short: resume from r.off after a backoff.
			r.body.Close()
			r.body = nil
			if ctxErr := r.ctx.Err(); ctxErr != nil {
				r.fail(fmt.Errorf("walrus/httpstore: read %s: %w", r.name, ctxErr))
			} else if r.fails+1 >= r.c.attempts {
				r.fail(&walrus.RetryError{Op: "read " + r.name, Attempts: r.fails + 1, Err: &transportError{fmt.Errorf("walrus/httpstore: read %s: body cut off at byte %d: %w", r.name, r.off, err)}})
			} else if werr := r.c.sleep(r.ctx, r.c.backoff(r.fails+1, 0)); werr != nil {
				r.fail(fmt.Errorf("walrus/httpstore: read %s: %w", r.name, werr))
			}
		}
		if n > 0 {
			return n, nil
		}
	}
}

func (r *blobReader) fail(err error) {
	if r.body != nil {
		r.body.Close()
		r.body = nil
	}
	r.err = err
}

func (r *blobReader) Close() error {
	if r.body != nil {
		r.body.Close()
		r.body = nil
	}
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
			mr.cur = &blobReader{c: mr.c, ctx: mr.ctx, url: mr.c.aggregator + "/v1/blobs/" + string(part.ID), name: fmt.Sprintf("%s part %d (%s)", mr.name, mr.i+1, part.ID), total: -1}
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
