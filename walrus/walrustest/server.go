package walrustest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/walrus"
)

// DefaultMaxBlobSize is the request size limit of public publishers, 10 MiB.
const DefaultMaxBlobSize = 10 << 20

// FaultKind names an injected failure.
type FaultKind int

const (
	// Unavailable answers 503 with reason BLOB_UNAVAILABLE.
	Unavailable FaultKind = iota + 1
	// Timeout answers 504 with reason INSUFFICIENT_CONFIRMATIONS.
	Timeout
	// TooManyRequests answers 429 with a plain-text body.
	TooManyRequests
	// Drop closes the connection without answering (and, for PUT, without
	// storing).
	Drop
	// DropAfterStore stores the blob, then closes the connection without
	// answering. It matches PUT requests only.
	DropAfterStore
	// Truncate sends the headers of a successful GET with the full
	// Content-Length, half of the body (or the body up to the blob's byte
	// Fault.At), then closes the connection. It matches GET requests only.
	Truncate
	// Hang takes the request and never answers, holding the connection open
	// until the client goes away or the server closes. A PUT's body is read
	// (and discarded) first, so the client is left waiting for the answer.
	Hang
	// Stall holds the connection open part-way through a transfer. On GET it
	// sends the headers with the full Content-Length and the body up to half
	// (or up to the blob's byte Fault.At), then sends nothing more. On PUT it
	// reads the request body up to half its Content-Length (or Fault.At
	// bytes), then reads nothing more and never answers.
	Stall
	// Trickle sends a body one byte every Fault.Every (default 1s): on GET
	// the blob, on PUT the JSON answer (after storing the blob).
	Trickle
)

func (k FaultKind) String() string {
	switch k {
	case Unavailable:
		return "503"
	case Timeout:
		return "504"
	case TooManyRequests:
		return "429"
	case Drop:
		return "drop"
	case DropAfterStore:
		return "drop-after-store"
	case Truncate:
		return "truncate"
	case Hang:
		return "hang"
	case Stall:
		return "stall"
	case Trickle:
		return "trickle"
	}
	return "fault(" + strconv.Itoa(int(k)) + ")"
}

// Fault makes the next Count requests that match Method fail as Kind.
type Fault struct {
	Kind FaultKind
	// Method restricts the fault to one HTTP method; "" matches any (but
	// DropAfterStore only ever matches PUT, Truncate only GET, and Stall
	// and Trickle only GET and PUT).
	Method string
	// Count is how many requests fail; 0 means 1.
	Count int
	// RetryAfter, if positive, is sent in a Retry-After header (whole
	// seconds, rounded up) with 429, 503 and 504.
	RetryAfter time.Duration
	// At, if positive, is where Truncate and Stall cut a GET body, as an
	// offset in the blob (so every request is cut at the same byte, however
	// it was ranged), or how many body bytes Stall reads of a PUT. 0 means
	// half of what the request would otherwise transfer.
	At int64
	// Every is the delay before each byte of a Trickle; 0 means one second.
	Every time.Duration
}

func (f Fault) matches(method string) bool {
	switch f.Kind {
	case DropAfterStore:
		if method != http.MethodPut {
			return false
		}
	case Truncate:
		if method != http.MethodGet {
			return false
		}
	case Stall, Trickle:
		if method != http.MethodGet && method != http.MethodPut {
			return false
		}
	}
	return f.Method == "" || f.Method == method
}

// Request records one request the server received.
type Request struct {
	Method string
	Path   string
	Query  string
	// Status is the status answered: 0 while the request is being answered
	// and when the connection was dropped.
	Status int
	// Fault is the injected fault, 0 if none.
	Fault FaultKind
	// BodySize is the number of body bytes read (once answered).
	BodySize int64
}

// Server is an in-process Walrus publisher and aggregator.
type Server struct {
	// URL is the base URL of both the publisher and the aggregator.
	URL string

	srv     *httptest.Server
	dir     string
	maxSize int64
	snake   bool
	closed  chan struct{} // closed by Close, ends held connections
	once    sync.Once

	mu       sync.Mutex
	epoch    int64
	blobs    map[walrus.BlobID]*blob
	objects  map[string]walrus.BlobID
	faults   []Fault
	requests []Request
	seq      uint64
	noRange  bool
}

type blob struct {
	path       string
	size       int64
	endEpoch   int64
	deletable  bool
	objectID   string
	registered int64
}

// Option configures a Server.
type Option func(*Server)

// WithMaxBlobSize sets the largest body PUT accepts; larger ones answer 413.
func WithMaxBlobSize(n int64) Option { return func(s *Server) { s.maxSize = n } }

// WithEpoch sets the starting epoch (default 1).
func WithEpoch(e int64) Option { return func(s *Server) { s.epoch = e } }

// WithoutRange makes GET ignore Range headers and answer 200 with the whole
// blob, as some caches and proxies in front of aggregators do.
func WithoutRange() Option { return func(s *Server) { s.noRange = true } }

// WithSnakeCase makes PUT answer with snake_case field names, as some
// generated documentation of the API shows, instead of camelCase.
func WithSnakeCase() Option { return func(s *Server) { s.snake = true } }

// NewServer starts a server that is closed when the test ends.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		dir:     t.TempDir(),
		maxSize: DefaultMaxBlobSize,
		epoch:   1,
		blobs:   map[walrus.BlobID]*blob{},
		objects: map[string]walrus.BlobID{},
		closed:  make(chan struct{}),
	}
	for _, o := range opts {
		o(s)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close shuts the server down; NewServer arranges it at the end of the test.
func (s *Server) Close() {
	s.once.Do(func() { close(s.closed) })
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Epoch returns the current epoch.
func (s *Server) Epoch() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.epoch
}

// SetEpoch moves the current epoch; blobs whose end epoch is not after it
// have expired.
func (s *Server) SetEpoch(e int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.epoch = e
}

// SetRange turns support for Range headers on (the default) or off (see
// WithoutRange).
func (s *Server) SetRange(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noRange = !on
}

// Inject queues a fault. Faults apply in the order queued: a request takes
// the first queued fault that matches its method.
func (s *Server) Inject(f Fault) {
	if f.Count <= 0 {
		f.Count = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, f)
}

// FailNext makes the next n requests of any method fail as kind.
func (s *Server) FailNext(n int, kind FaultKind) { s.Inject(Fault{Kind: kind, Count: n}) }

// ClearFaults drops every queued fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// PendingFaults returns how many injected failures have not fired yet.
func (s *Server) PendingFaults() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.faults {
		n += f.Count
	}
	return n
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// CountRequests returns how many requests with the given method (any if "")
// the server received.
func (s *Server) CountRequests(method string) int {
	n := 0
	for _, r := range s.Requests() {
		if method == "" || r.Method == method {
			n++
		}
	}
	return n
}

// NumBlobs returns the number of blobs stored, expired ones included.
func (s *Server) NumBlobs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.blobs)
}

// Blob returns the content stored under id and its end epoch.
func (s *Server) Blob(id walrus.BlobID) (content []byte, endEpoch int64, ok bool) {
	s.mu.Lock()
	b := s.blobs[id]
	s.mu.Unlock()
	if b == nil {
		return nil, 0, false
	}
	content, err := os.ReadFile(b.path)
	if err != nil {
		return nil, 0, false
	}
	return content, b.endEpoch, true
}

// ReplaceBlob swaps the content stored under id, leaving the id as it was,
// to simulate an aggregator that serves wrong bytes.
func (s *Server) ReplaceBlob(id walrus.BlobID, content []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.blobs[id]
	if b == nil {
		return fmt.Errorf("walrustest: no blob %s", id)
	}
	if err := os.WriteFile(b.path, content, 0o600); err != nil {
		return err
	}
	b.size = int64(len(content))
	return nil
}

// BlobID returns the id the server gives to content.
func BlobID(content []byte) walrus.BlobID {
	h := sha256.New()
	h.Write([]byte("walrustest blob id v1\x00"))
	h.Write(content)
	var d [32]byte
	h.Sum(d[:0])
	return walrus.BlobIDFromBytes(d)
}

// takeFault pops the fault for a request, if any.
func (s *Server) takeFault(method string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.faults {
		f := &s.faults[i]
		if !f.matches(method) {
			continue
		}
		out := *f
		f.Count--
		if f.Count == 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		return out, true
	}
	return Fault{}, false
}

// record notes a request as it arrives and returns a function that fills
// in its outcome (so requests are counted even before they are answered).
func (s *Server) record(r *http.Request, fault FaultKind) func(status int, bodySize int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := len(s.requests)
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Fault: fault})
	return func(status int, bodySize int64) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.requests[i].Status = status
		s.requests[i].BodySize = bodySize
	}
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	body := &countingReader{r: r.Body}
	r.Body = body
	fault, faulted := s.takeFault(r.Method)
	var fk FaultKind
	if faulted {
		fk = fault.Kind
	}
	done := s.record(r, fk)
	defer func() {
		done(sw.status, body.n)
	}()
	if faulted {
		switch fault.Kind {
		case Unavailable:
			setRetryAfter(sw, fault.RetryAfter)
			writeError(sw, http.StatusServiceUnavailable, "UNAVAILABLE", "BLOB_UNAVAILABLE", "the blob is temporarily unavailable; retry later")
			return
		case Timeout:
			setRetryAfter(sw, fault.RetryAfter)
			writeError(sw, http.StatusGatewayTimeout, "DEADLINE_EXCEEDED", "INSUFFICIENT_CONFIRMATIONS", "the service failed to store the blob to sufficient Walrus storage nodes before a timeout, please retry the operation")
			return
		case TooManyRequests:
			setRetryAfter(sw, fault.RetryAfter)
			sw.Header().Set("Content-Type", "text/plain; charset=utf-8")
			sw.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(sw, "Too Many Requests! Wait for 1s\n")
			return
		case Drop:
			dropConnection(sw)
			return
		case Hang:
			if r.Method == http.MethodPut {
				io.Copy(io.Discard, r.Body)
			}
			s.hold(r)
			return
		}
	}
	switch {
	case r.URL.Path == "/v1/blobs":
		if r.Method != http.MethodPut {
			sw.Header().Set("Allow", http.MethodPut)
			writeError(sw, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "METHOD_NOT_ALLOWED", "use PUT to store a blob")
			return
		}
		s.servePut(sw, r, fault)
	case strings.HasPrefix(r.URL.Path, "/v1/blobs/"):
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			sw.Header().Set("Allow", "GET, HEAD")
			writeError(sw, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "METHOD_NOT_ALLOWED", "use GET to read a blob")
			return
		}
		s.serveGet(sw, r, fault)
	default:
		writeError(sw, http.StatusNotFound, "NOT_FOUND", "ROUTE_NOT_FOUND", "no such route: "+r.URL.Path)
	}
}

type countingReader struct {
	r io.ReadCloser
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }

func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	if d > 0 {
		w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(d.Seconds())), 10))
	}
}

// hold keeps a connection open without sending anything until the client
// goes away or the server closes.
func (s *Server) hold(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.closed:
	}
}

// trickle writes b one byte every d (one second if d is 0), flushing each,
// until done or the client goes away.
func (s *Server) trickle(w http.ResponseWriter, r *http.Request, b io.Reader, d time.Duration) {
	if d <= 0 {
		d = time.Second
	}
	t := time.NewTicker(d)
	defer t.Stop()
	var one [1]byte
	for {
		select {
		case <-r.Context().Done():
			return
		case <-s.closed:
			return
		case <-t.C:
		}
		if _, err := io.ReadFull(b, one[:]); err != nil {
			return
		}
		if _, err := w.Write(one[:]); err != nil {
			return
		}
		w.(http.Flusher).Flush()
	}
}

// dropConnection closes the connection without an answer.
func dropConnection(w http.ResponseWriter) {
	if sw, ok := w.(*statusWriter); ok {
		w = sw.ResponseWriter
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

// writeError answers in the documented error shape.
func writeError(w http.ResponseWriter, code int, status, reason, message string) {
	body := map[string]any{
		"error": map[string]any{
			"code":    code,
			"status":  status,
			"message": message,
			"details": []any{map[string]any{
				"@type":  "ErrorInfo",
				"reason": reason,
				"domain": "walrustest",
			}},
		},
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(code)
	w.Write(b)
}

func badRequest(w http.ResponseWriter, message string) {
	writeError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "INVALID_ARGUMENT", message)
}

// knownPutParams lists the query parameters the publisher documents.
var knownPutParams = map[string]bool{
	"epochs": true, "permanent": true, "deletable": true, "send_object_to": true,
	"share": true, "force": true, "encoding_type": true,
}

type putParams struct {
	epochs    int64
	permanent bool
	force     bool
	sendTo    string
}

func parsePutParams(q map[string][]string) (putParams, error) {
	var p putParams
	for k, v := range q {
		if !knownPutParams[k] {
			return p, fmt.Errorf("unknown query parameter %q", k)
		}
		if len(v) != 1 {
			return p, fmt.Errorf("query parameter %q given %d times", k, len(v))
		}
	}
	get := func(k string) (string, bool) {
		v, ok := q[k]
		if !ok {
			return "", false
		}
		return v[0], true
	}
	parseBool := func(k string) (bool, error) {
		v, ok := get(k)
		if !ok {
			return false, nil
		}
		switch v {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return false, fmt.Errorf("query parameter %s=%q is not a boolean", k, v)
	}
	ev, ok := get("epochs")
	if !ok {
		return p, errors.New("missing query parameter epochs")
	}
	e, err := strconv.ParseInt(ev, 10, 64)
	if err != nil || e < 1 || e > walrus.MaxEpochsAhead {
		return p, fmt.Errorf("epochs=%q: want an integer in 1..%d", ev, walrus.MaxEpochsAhead)
	}
	p.epochs = e
	if p.permanent, err = parseBool("permanent"); err != nil {
		return p, err
	}
	deletable, err := parseBool("deletable")
	if err != nil {
		return p, err
	}
	if p.permanent && deletable {
		return p, errors.New("the blob cannot be defined as both deletable and permanent")
	}
	if p.force, err = parseBool("force"); err != nil {
		return p, err
	}
	share, err := parseBool("share")
	if err != nil {
		return p, err
	}
	if to, ok := get("send_object_to"); ok {
		if !walrus.IsSuiAddress(to) {
			return p, fmt.Errorf("send_object_to=%q is not a Sui address", to)
		}
		if share {
			return p, errors.New("send_object_to and share are exclusive")
		}
		p.sendTo = to
	}
	if enc, ok := get("encoding_type"); ok && enc != "RS2" {
		return p, fmt.Errorf("unsupported encoding_type %q", enc)
	}
	return p, nil
}

func (s *Server) servePut(w http.ResponseWriter, r *http.Request, fault Fault) {
	p, err := parsePutParams(r.URL.Query())
	if err != nil {
		badRequest(w, err.Error())
		return
	}
	if fault.Kind == Stall {
		n := fault.At
		if n <= 0 {
			n = r.ContentLength / 2
		}
		io.CopyN(io.Discard, r.Body, n)
		s.hold(r)
		return
	}
	if r.ContentLength > s.maxSize {
		tooLarge(w, s.maxSize)
		return
	}
	tmp, err := os.CreateTemp(s.dir, "upload-*")
	if err != nil {
		writeError(w, http.StatusInternalServerError, "INTERNAL", "INTERNAL", err.Error())
		return
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	h := sha256.New()
	h.Write([]byte("walrustest blob id v1\x00"))
	n, err := io.Copy(io.MultiWriter(tmp, h), http.MaxBytesReader(w, r.Body, s.maxSize))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		tooLarge(w, s.maxSize)
		return
	}
	if err != nil {
		// The client went away mid-upload; nobody reads this answer.
		badRequest(w, "reading the body: "+err.Error())
		return
	}
	var d [32]byte
	h.Sum(d[:0])
	id := walrus.BlobIDFromBytes(d)

	resp := s.store(id, tmp, n, p)
	if fault.Kind == DropAfterStore {
		dropConnection(w)
		return
	}
	if s.snake {
		resp = snakeKeys(resp).(map[string]any)
	}
	b, _ := json.Marshal(resp)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	if fault.Kind == Trickle {
		s.trickle(w, r, bytes.NewReader(b), fault.Every)
		return
	}
	w.Write(b)
}

func tooLarge(w http.ResponseWriter, max int64) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	fmt.Fprintf(w, "length limit exceeded: the limit is %d bytes\n", max)
}

// store records the uploaded file under id and builds the answer.
func (s *Server) store(id walrus.BlobID, tmp *os.File, size int64, p putParams) map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := s.epoch
	want := cur + p.epochs
	s.seq++
	seq := s.seq
	if old := s.blobs[id]; old != nil && old.endEpoch > cur && !p.force {
		if old.endEpoch >= want {
			ac := map[string]any{"blobId": string(id), "endEpoch": old.endEpoch}
			if old.deletable {
				ac["object"] = old.objectID
			} else {
				ac["event"] = map[string]any{"txDigest": digest58(id, seq), "eventSeq": "0"}
			}
			return map[string]any{"alreadyCertified": ac}
		}
	}
	path := filepath.Join(s.dir, hex.EncodeToString([]byte(id)))
	if old := s.blobs[id]; old != nil {
		path = old.path
	} else {
		tmp.Close()
		if err := os.Rename(tmp.Name(), path); err != nil {
			panic(http.ErrAbortHandler)
		}
	}
	obj := objectID(id, seq)
	b := &blob{path: path, size: size, endEpoch: want, deletable: !p.permanent, objectID: obj, registered: cur}
	s.blobs[id] = b
	s.objects[obj] = id
	encoded := 5*size + 64<<20 // roughly what RS2 costs: fixed metadata plus ~5x
	return map[string]any{
		"newlyCreated": map[string]any{
			"blobObject": map[string]any{
				"id":              obj,
				"registeredEpoch": cur,
				"blobId":          string(id),
				"size":            size,
				"encodingType":    "RS2",
				"certifiedEpoch":  cur,
				"storage": map[string]any{
					"id":          objectID(id, seq+1<<32),
					"startEpoch":  cur,
					"endEpoch":    want,
					"storageSize": encoded,
				},
				"deletable": !p.permanent,
			},
			"resourceOperation": map[string]any{
				"registerFromScratch": map[string]any{"encodedLength": encoded, "epochsAhead": p.epochs},
			},
			"cost": 1000 * p.epochs,
		},
	}
}

func objectID(id walrus.BlobID, seq uint64) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("object %s %d", id, seq)))
	return "0x" + hex.EncodeToString(h[:])
}

const b58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"

func digest58(id walrus.BlobID, seq uint64) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("tx %s %d", id, seq)))
	out := make([]byte, 44)
	for i := range out {
		out[i] = b58[int(h[i%32]+byte(i))%len(b58)]
	}
	return string(out)
}

// snakeKeys rewrites camelCase keys to snake_case, recursively.
func snakeKeys(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			var b strings.Builder
			for i, c := range k {
				if 'A' <= c && c <= 'Z' {
					if i > 0 {
						b.WriteByte('_')
					}
					c += 'a' - 'A'
				}
				b.WriteRune(c)
			}
			out[b.String()] = snakeKeys(x)
		}
		return out
	case []any:
		for i := range v {
			v[i] = snakeKeys(v[i])
		}
	}
	return v
}

func (s *Server) serveGet(w http.ResponseWriter, r *http.Request, fault Fault) {
	rest := strings.TrimPrefix(r.URL.Path, "/v1/blobs/")
	var id walrus.BlobID
	if obj, ok := strings.CutPrefix(rest, "by-object-id/"); ok {
		if !walrus.IsSuiAddress(obj) {
			badRequest(w, fmt.Sprintf("%q is not an object id", obj))
			return
		}
		s.mu.Lock()
		id = s.objects[strings.ToLower(obj)]
		s.mu.Unlock()
	} else {
		var err error
		if id, err = walrus.ParseBlobID(rest); err != nil {
			badRequest(w, fmt.Sprintf("invalid blob id %q", rest))
			return
		}
	}
	s.mu.Lock()
	b := s.blobs[id]
	live := b != nil && s.epoch < b.endEpoch
	s.mu.Unlock()
	if !live {
		writeError(w, http.StatusNotFound, "NOT_FOUND", "BLOB_NOT_FOUND", "the requested blob has not been found on Walrus (never stored, or expired)")
		return
	}
	f, err := os.Open(b.path)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "INTERNAL", "INTERNAL", err.Error())
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "INTERNAL", "INTERNAL", err.Error())
		return
	}
	size := st.Size()
	rng := r.Header.Get("Range")
	s.mu.Lock()
	if s.noRange {
		rng = ""
	}
	s.mu.Unlock()
	start, end, partial, ok := parseRange(rng, size)
	if !ok {
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", size))
		writeError(w, http.StatusRequestedRangeNotSatisfiable, "OUT_OF_RANGE", "RANGE_NOT_SATISFIABLE", "range not satisfiable")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Accept-Ranges", "bytes")
	h.Set("ETag", `"`+string(id)+`"`)
	h.Set("Content-Length", strconv.FormatInt(end-start, 10))
	status := http.StatusOK
	if partial {
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, end-1, size))
		status = http.StatusPartialContent
	}
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	n := end - start
	switch fault.Kind {
	case Truncate, Stall:
		n /= 2
		if fault.At > 0 {
			n = max(0, min(end, fault.At)-start)
		}
	case Trickle:
		s.trickle(w, r, io.NewSectionReader(f, start, n), fault.Every)
		return
	}
	io.Copy(w, io.NewSectionReader(f, start, n))
	switch fault.Kind {
	case Truncate:
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	case Stall:
		w.(http.Flusher).Flush()
		s.hold(r)
	}
}

// parseRange interprets a single-range Range header for a body of size
// bytes and returns the half-open interval to send. Absent, malformed or
// multi-range headers send the whole body (allowed by RFC 9110).
func parseRange(h string, size int64) (start, end int64, partial, ok bool) {
	spec, found := strings.CutPrefix(h, "bytes=")
	if h == "" || !found || strings.Contains(spec, ",") {
		return 0, size, false, true
	}
	first, last, found := strings.Cut(strings.TrimSpace(spec), "-")
	if !found {
		return 0, size, false, true
	}
	if first == "" { // suffix: the last N bytes
		n, err := strconv.ParseInt(last, 10, 64)
		if err != nil || n < 0 {
			return 0, size, false, true
		}
		if n == 0 {
			return 0, 0, false, false
		}
		if n > size {
			n = size
		}
		return size - n, size, true, true
	}
	a, err := strconv.ParseInt(first, 10, 64)
	if err != nil || a < 0 {
		return 0, size, false, true
	}
	if a >= size {
		return 0, 0, false, false
	}
	b := size - 1
	if last != "" {
		if b, err = strconv.ParseInt(last, 10, 64); err != nil || b < a {
			return 0, size, false, true
		}
		if b >= size {
			b = size - 1
		}
	}
	return a, b + 1, true, true
}
