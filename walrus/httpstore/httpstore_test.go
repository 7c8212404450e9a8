package httpstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstate/agentstate/walrus"
	"github.com/agentstate/agentstate/walrus/httpstore"
	"github.com/agentstate/agentstate/walrus/storetest"
	"github.com/agentstate/agentstate/walrus/walrustest"
)

// waits records the retry waits a client asked for, without sleeping.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) get() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.d...)
}

func put(t *testing.T, c *httpstore.Client, content []byte, opts walrus.StoreOptions) walrus.Stored {
	t.Helper()
	stored, err := c.Put(context.Background(), bytes.NewReader(content), int64(len(content)), opts)
	if err != nil {
		t.Fatalf("Put: %v", err)
	}
	return stored
}

func readAll(t *testing.T, c *httpstore.Client, id walrus.BlobID) []byte {
	t.Helper()
	b, err := storetest.ReadAll(context.Background(), c, id)
	if err != nil {
		t.Fatalf("Get %s: %v", id, err)
	}
	return b
}

func TestStoreAnswer(t *testing.T) {
	c, srv := newClient(t, []walrustest.Option{walrustest.WithEpoch(40)})
	content := []byte("some other string")
	s := put(t, c, content, walrus.StoreOptions{Epochs: 5, Permanent: true, SendObjectTo: "0xabc"})
	if s.BlobID != walrustest.BlobID(content) || s.EndEpoch != 45 || s.Size != 17 || s.AlreadyCertified || s.Parts != 0 || !walrus.IsSuiAddress(s.ObjectID) {
		t.Fatalf("Stored = %+v", s)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Method != "PUT" || reqs[0].Path != "/v1/blobs" || reqs[0].BodySize != 17 {
		t.Fatalf("requests %+v", reqs)
	}
	if q := reqs[0].Query; q != "epochs=5&permanent=true&send_object_to=0xabc" {
		t.Fatalf("query %q", q)
	}
	// Default epochs is 1; a re-store is answered alreadyCertified.
	s2 := put(t, c, content, walrus.StoreOptions{})
	if !s2.AlreadyCertified || s2.BlobID != s.BlobID || s2.EndEpoch != 45 || s2.ObjectID != "" {
		t.Fatalf("re-store = %+v", s2)
	}
	if q := srv.Requests()[1].Query; q != "epochs=1" {
		t.Fatalf("query %q", q)
	}
	// A deletable blob re-stored is answered with its object id.
	d := put(t, c, []byte("deletable"), walrus.StoreOptions{Epochs: 2})
	d2 := put(t, c, []byte("deletable"), walrus.StoreOptions{Epochs: 1})
	if !d2.AlreadyCertified || d2.ObjectID != d.ObjectID {
		t.Fatalf("re-store of deletable = %+v, first %+v", d2, d)
	}
	// Asking for a longer lifetime than the existing one stores anew.
	d3 := put(t, c, []byte("deletable"), walrus.StoreOptions{Epochs: 10})
	if d3.AlreadyCertified || d3.EndEpoch != 50 {
		t.Fatalf("extension = %+v", d3)
	}
}

func TestExpiry(t *testing.T) {
	c, srv := newClient(t, []walrustest.Option{walrustest.WithEpoch(7)})
	s := put(t, c, []byte("short-lived"), walrus.StoreOptions{Epochs: 2})
	if s.EndEpoch != 9 {
		t.Fatalf("EndEpoch %d, want 9", s.EndEpoch)
	}
	srv.SetEpoch(8)
	if got := readAll(t, c, s.BlobID); string(got) != "short-lived" {
		t.Fatalf("got %q", got)
	}
	srv.SetEpoch(9)
	_, err := c.Get(context.Background(), s.BlobID)
	var ae *walrus.APIError
	if !errors.Is(err, walrus.ErrNotFound) || !errors.As(err, &ae) || !ae.HasReason("BLOB_NOT_FOUND") {
		t.Fatalf("Get of an expired blob: %v", err)
	}
	// Storing again revives it.
	s2 := put(t, c, []byte("short-lived"), walrus.StoreOptions{Epochs: 1})
	if s2.AlreadyCertified || s2.EndEpoch != 10 || s2.BlobID != s.BlobID {
		t.Fatalf("re-store after expiry = %+v", s2)
	}
	readAll(t, c, s.BlobID)
}

func TestRetriesThenSuccess(t *testing.T) {
	for _, kind := range []walrustest.FaultKind{walrustest.Unavailable, walrustest.Timeout, walrustest.TooManyRequests, walrustest.Drop} {
		t.Run(kind.String(), func(t *testing.T) {
			c, srv := newClient(t, nil)
			w := &waits{}
			c.SetSleep(w.sleep)
			content := storetest.Content(1, 5000)
			srv.Inject(walrustest.Fault{Kind: kind, Method: "PUT", Count: 3})
			s := put(t, c, content, walrus.StoreOptions{})
			if n := srv.CountRequests("PUT"); n != 4 {
				t.Fatalf("%d PUT requests, want 4", n)
			}
			if len(w.get()) != 3 {
				t.Fatalf("waits %v, want 3", w.get())
			}
			srv.Inject(walrustest.Fault{Kind: kind, Method: "GET", Count: 3})
			if got := readAll(t, c, s.BlobID); !bytes.Equal(got, content) {
				t.Fatal("content differs")
			}
			if srv.PendingFaults() != 0 {
				t.Fatalf("%d faults did not fire", srv.PendingFaults())
			}
		})
	}
}

func TestBackoffPolicy(t *testing.T) {
	srv := walrustest.NewServer(t)
	c, err := httpstore.New(srv.URL, srv.URL, httpstore.WithHTTPClient(srv.Client()), httpstore.WithRetry(6, 100*time.Millisecond, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	w := &waits{}
	c.SetSleep(w.sleep)
	srv.Inject(walrustest.Fault{Kind: walrustest.Unavailable, Count: 4})
	srv.Inject(walrustest.Fault{Kind: walrustest.TooManyRequests, RetryAfter: 3 * time.Second})
	put(t, c, []byte("x"), walrus.StoreOptions{})
	got := w.get()
	if len(got) != 5 {
		t.Fatalf("waits %v", got)
	}
	for i, d := range got[:4] {
		hi := 100 * time.Millisecond << i
		if d < hi/2 || d > hi {
			t.Errorf("wait %d = %v, want in [%v, %v]", i+1, d, hi/2, hi)
		}
	}
	if got[4] != 3*time.Second {
		t.Errorf("wait after Retry-After: 3 = %v", got[4])
	}
}

func TestRetriesExhausted(t *testing.T) {
	c, srv := newClient(t, nil) // 4 attempts
	srv.Inject(walrustest.Fault{Kind: walrustest.Unavailable, Method: "PUT", Count: 4})
	_, err := c.Put(context.Background(), bytes.NewReader([]byte("x")), 1, walrus.StoreOptions{})
	var re *walrus.RetryError
	var ae *walrus.APIError
	if !errors.Is(err, walrus.ErrUnavailable) || !errors.As(err, &re) || re.Attempts != 4 || !errors.As(err, &ae) || ae.HTTPStatus != 503 || !ae.HasReason("BLOB_UNAVAILABLE") {
		t.Fatalf("Put against a 503 wall: %v", err)
	}
	if n := srv.CountRequests("PUT"); n != 4 {
		t.Fatalf("%d requests, want 4", n)
	}

	s := put(t, c, []byte("y"), walrus.StoreOptions{})
	srv.Inject(walrustest.Fault{Kind: walrustest.Drop, Method: "GET", Count: 100})
	_, err = c.Get(context.Background(), s.BlobID)
	if !errors.Is(err, walrus.ErrUnavailable) {
		t.Fatalf("Get against dropped connections: %v", err)
	}
}

func TestTooLargeNotRetried(t *testing.T) {
	c, srv := newClient(t, []walrustest.Option{walrustest.WithMaxBlobSize(1000)}, httpstore.WithPartSize(4096))
	_, err := c.Put(context.Background(), bytes.NewReader(make([]byte, 2000)), 2000, walrus.StoreOptions{})
	var ae *walrus.APIError
	if !errors.Is(err, walrus.ErrTooLarge) || !errors.As(err, &ae) || ae.HTTPStatus != 413 || errors.Is(err, walrus.ErrUnavailable) {
		t.Fatalf("Put over the limit: %v", err)
	}
	if n := srv.CountRequests("PUT"); n != 1 {
		t.Fatalf("%d requests, want 1 (no retry)", n)
	}
	// A body without a Content-Length is cut off by the limit too.
	_, err = c.Put(context.Background(), onlyReader{bytes.NewReader(make([]byte, 1500))}, -1, walrus.StoreOptions{})
	if !errors.Is(err, walrus.ErrTooLarge) {
		t.Fatalf("Put of unknown size over the limit: %v", err)
	}
}

type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func TestTruncatedBodyResumed(t *testing.T) {
	c, srv := newClient(t, nil)
	content := storetest.Content(2, 300_000)
	s := put(t, c, content, walrus.StoreOptions{})
	srv.Inject(walrustest.Fault{Kind: walrustest.Truncate, Count: 2})
	if got := readAll(t, c, s.BlobID); !bytes.Equal(got, content) {
		t.Fatal("content differs after resumed reads")
	}
	var ranges []string
	for _, r := range srv.Requests() {
		if r.Method == "GET" && r.Fault == 0 {
			ranges = append(ranges, r.Path)
		}
	}
	if len(ranges) != 1 {
		t.Fatalf("want 1 clean GET after 2 truncated ones, got %v", srv.Requests())
	}
	// Cut off, then unavailable until the attempts run out: an error, never
	// a silent short read.
	srv.Inject(walrustest.Fault{Kind: walrustest.Truncate})
	srv.Inject(walrustest.Fault{Kind: walrustest.Unavailable, Method: "GET", Count: 100})
	got, err := storetest.ReadAll(context.Background(), c, s.BlobID)
	if !errors.Is(err, walrus.ErrUnavailable) || len(got) != len(content)/2 {
		t.Fatalf("read against a failing server: %d bytes, %v", len(got), err)
	}
	srv.ClearFaults()
	// A server that cuts off every response still makes progress each time,
	// so the read completes.
	srv.Inject(walrustest.Fault{Kind: walrustest.Truncate, Count: 10})
	if got := readAll(t, c, s.BlobID); !bytes.Equal(got, content) {
		t.Fatal("content differs after repeated resumes")
	}
}

func TestDropAfterStore(t *testing.T) {
	c, srv := newClient(t, nil)
	srv.Inject(walrustest.Fault{Kind: walrustest.DropAfterStore})
	s := put(t, c, []byte("stored but unanswered"), walrus.StoreOptions{})
	if !s.AlreadyCertified || srv.NumBlobs() != 1 {
		t.Fatalf("Stored %+v, %d blobs", s, srv.NumBlobs())
	}
}

// stream yields n deterministic pseudo-random bytes without random access.
func stream(seed byte, n int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{seed}), n)
}

func TestLargeBlobBoundedMemory(t *testing.T) {
	const size = 25 << 20
	const partSize = 10 << 20
	c, srv := newClient(t, []walrustest.Option{walrustest.WithMaxBlobSize(partSize)}, httpstore.WithPartSize(partSize))

	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()

	want := sha256.New()
	io.Copy(want, stream(7, size))
	var progressCalls int
	var lastDone int64
	s, err := c.Put(context.Background(), stream(7, size), size, walrus.StoreOptions{Progress: func(done, total int64) {
		progressCalls++
		lastDone = done
	}})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := c.Get(context.Background(), s.BlobID)
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.New()
	n, err := io.Copy(got, rc)
	rc.Close()
	close(stop)
	<-done
	if err != nil || n != size {
		t.Fatalf("read back %d bytes: %v", n, err)
	}
	if !bytes.Equal(got.Sum(nil), want.Sum(nil)) {
		t.Fatal("content differs")
	}
	if s.Parts != 3 || s.Size != size || srv.CountRequests("PUT") != 4 || srv.NumBlobs() != 4 {
		t.Fatalf("Stored %+v, %d PUTs, %d blobs; want 3 parts + manifest", s, srv.CountRequests("PUT"), srv.NumBlobs())
	}
	if lastDone != size || progressCalls < 3 {
		t.Fatalf("progress: %d calls, last %d", progressCalls, lastDone)
	}
	grew := int64(peak.Load()) - int64(base.HeapInuse)
	t.Logf("heap in use grew by at most %.1f MiB moving a %d MiB blob", float64(grew)/(1<<20), size>>20)
	if grew > 8<<20 {
		t.Fatalf("heap grew by %d bytes; memory is not bounded", grew)
	}
	m, ok, err := c.ReadManifest(context.Background(), s.BlobID)
	if err != nil || !ok || len(m.Parts) != 3 || m.Parts[2].Size != 5<<20 {
		t.Fatalf("ReadManifest: %+v %v %v", m, ok, err)
	}
}

func TestManifestVerification(t *testing.T) {
	c, srv := newClient(t, nil, httpstore.WithPartSize(4096))
	content := storetest.Content(3, 10_000)
	s := put(t, c, content, walrus.StoreOptions{})
	m, ok, err := c.ReadManifest(context.Background(), s.BlobID)
	if err != nil || !ok || len(m.Parts) != 3 {
		t.Fatalf("ReadManifest: %v %v", ok, err)
	}
	if sum := sha256.Sum256(content); m.SHA256 != sum || m.Size != 10_000 {
		t.Fatal("manifest does not describe the content")
	}

	// Same length, different bytes: caught by the sha256 at the end.
	bad := bytes.Clone(content[4096:8192])
	bad[7] ^= 0xff
	if err := srv.ReplaceBlob(m.Parts[1].ID, bad); err != nil {
		t.Fatal(err)
	}
	_, err = storetest.ReadAll(context.Background(), c, s.BlobID)
	var ce *walrus.CorruptError
	if !errors.As(err, &ce) || ce.ID != s.BlobID || !strings.Contains(ce.What, "sha256") {
		t.Fatalf("read of tampered part: %v", err)
	}
	// Short part.
	srv.ReplaceBlob(m.Parts[1].ID, content[4096:8000])
	if _, err = storetest.ReadAll(context.Background(), c, s.BlobID); !errors.As(err, &ce) || !strings.Contains(ce.What, "part 2 size") {
		t.Fatalf("read of short part: %v", err)
	}
	// Long part.
	srv.ReplaceBlob(m.Parts[1].ID, content[4096:8200])
	if _, err = storetest.ReadAll(context.Background(), c, s.BlobID); !errors.As(err, &ce) || !strings.Contains(ce.What, "part 2 size") {
		t.Fatalf("read of long part: %v", err)
	}
	// An expired part makes the whole blob not found.
	srv.ReplaceBlob(m.Parts[1].ID, content[4096:8192])
	srv.SetEpoch(srv.Epoch() + 1)
	if _, err := c.Get(context.Background(), s.BlobID); !errors.Is(err, walrus.ErrNotFound) {
		t.Fatalf("read of an expired manifest: %v", err)
	}
}

func TestMagicPrefixedContentIsWrapped(t *testing.T) {
	c, srv := newClient(t, nil)
	content := append(append([]byte{}, httpstore.ManifestMagic[:]...), "not a manifest at all"...)
	s := put(t, c, content, walrus.StoreOptions{})
	if s.Parts != 1 || srv.NumBlobs() != 2 {
		t.Fatalf("magic-prefixed content stored as %+v in %d blobs, want a one-part manifest", s, srv.NumBlobs())
	}
	if got := readAll(t, c, s.BlobID); !bytes.Equal(got, content) {
		t.Fatalf("read back %q", got)
	}
	// A foreign blob that starts with the magic but is no manifest is refused.
	id := walrustest.BlobID(content)
	_, err := c.Get(context.Background(), id)
	if !errors.Is(err, walrus.ErrCorrupt) {
		t.Fatalf("Get of a foreign magic-prefixed blob: %v", err)
	}
}

func TestGetByObjectID(t *testing.T) {
	c, _ := newClient(t, nil, httpstore.WithPartSize(2048))
	for _, n := range []int64{10, 5000} {
		content := storetest.Content(4, n)
		s := put(t, c, content, walrus.StoreOptions{Permanent: true})
		rc, err := c.GetByObjectID(context.Background(), s.ObjectID)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, content) {
			t.Fatalf("GetByObjectID(%d bytes): %v", n, err)
		}
	}
	if _, err := c.GetByObjectID(context.Background(), "0x"+strings.Repeat("0", 64)); !errors.Is(err, walrus.ErrNotFound) {
		t.Fatalf("unknown object: %v", err)
	}
	if _, err := c.GetByObjectID(context.Background(), "../etc"); err == nil {
		t.Fatal("bad object id accepted")
	}
}

func TestMissingURLs(t *testing.T) {
	c, err := httpstore.New("", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Put(context.Background(), bytes.NewReader(nil), 0, walrus.StoreOptions{}); !errors.Is(err, httpstore.ErrNoPublisher) {
		t.Fatalf("Put without publisher: %v", err)
	}
	if _, err := c.Get(context.Background(), walrustest.BlobID(nil)); !errors.Is(err, httpstore.ErrNoAggregator) {
		t.Fatalf("Get without aggregator: %v", err)
	}
	for _, bad := range []string{"ftp://x", "localhost:8080", "http://", "http://h/?q=1", "http://u:p@h", "http://h/#f", "::"} {
		if _, err := httpstore.New(bad, ""); err == nil {
			t.Errorf("New(%q) accepted", bad)
		}
	}
	for _, o := range []httpstore.Option{httpstore.WithRetry(0, 0, 0), httpstore.WithRetry(3, time.Second, time.Millisecond), httpstore.WithPartSize(10), httpstore.WithHTTPClient(nil), httpstore.WithSpool("", -1)} {
		if _, err := httpstore.New("http://h", "http://h", o); err == nil {
			t.Error("New accepted a bad option")
		}
	}
	// A base path is kept.
	srv := walrustest.NewServer(t)
	c, _ = httpstore.New(srv.URL+"/", srv.URL+"/", httpstore.WithHTTPClient(srv.Client()))
	s, err := c.Put(context.Background(), strings.NewReader("x"), 1, walrus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := srv.Requests()[0].Path; p != "/v1/blobs" {
		t.Fatalf("path %q", p)
	}
	readAll(t, c, s.BlobID)
}

func TestCancelDuringBackoff(t *testing.T) {
	srv := walrustest.NewServer(t)
	c, err := httpstore.New(srv.URL, srv.URL, httpstore.WithHTTPClient(srv.Client()), httpstore.WithRetry(10, time.Hour, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	srv.Inject(walrustest.Fault{Kind: walrustest.Unavailable, Count: 100})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for srv.CountRequests("") == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	_, err = c.Put(ctx, strings.NewReader("x"), 1, walrus.StoreOptions{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Put cancelled during backoff: %v", err)
	}
	if time.Since(start) > time.Minute {
		t.Fatal("cancellation did not interrupt the backoff")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = c.Get(ctx, walrustest.BlobID(nil))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get timed out during backoff: %v", err)
	}
}

func BenchmarkPutGet1MiB(b *testing.B) {
	c, _ := newClient(b, nil)
	content := storetest.Content(5, 1<<20)
	b.SetBytes(int64(len(content)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		content[0], content[1], content[2] = byte(i), byte(i>>8), byte(i>>16)
		s, err := c.Put(context.Background(), bytes.NewReader(content), int64(len(content)), walrus.StoreOptions{})
		if err != nil {
			b.Fatal(err)
		}
		rc, err := c.Get(context.Background(), s.BlobID)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			b.Fatal(err)
		}
		rc.Close()
	}
}

func TestCancelDuringUpload(t *testing.T) {
	c, srv := newClient(t, nil, httpstore.WithPartSize(16<<10))
	content := storetest.Content(6, 100<<10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := c.Put(ctx, bytes.NewReader(content), int64(len(content)), walrus.StoreOptions{Progress: func(done, total int64) {
		if done >= 20<<10 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Put cancelled mid-upload: %v", err)
	}
	if n := srv.CountRequests("PUT"); n > 2 {
		t.Fatalf("%d PUTs after cancelling in the second part", n)
	}
}

// A misbehaving service, hand-written, for what walrustest will not do.
func misbehaving(t *testing.T, h http.HandlerFunc, opts ...httpstore.Option) *httpstore.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(srv.CloseClientConnections)
	opts = append([]httpstore.Option{httpstore.WithHTTPClient(srv.Client()), httpstore.WithRetry(3, time.Millisecond, time.Millisecond)}, opts...)
	c, err := httpstore.New(srv.URL, srv.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMisbehavingServices(t *testing.T) {
	id := walrustest.BlobID([]byte("x"))
	content := storetest.Content(7, 1000)

	t.Run("range ignored", func(t *testing.T) {
		var calls atomic.Int32
		c := misbehaving(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			if calls.Add(1) == 1 {
				w.Write(content[:300])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}
			w.Write(content) // 200 with everything, Range or not
		})
		if got := readAll(t, c, id); !bytes.Equal(got, content) {
			t.Fatal("content differs when the server ignores Range")
		}
	})
	t.Run("wrong Content-Range", func(t *testing.T) {
		var calls atomic.Int32
		c := misbehaving(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			if calls.Add(1) == 1 {
				w.Write(content[:300])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}
			w.Header().Set("Content-Range", "bytes 0-999/1000")
			w.WriteHeader(206)
			w.Write(content)
		})
		_, err := storetest.ReadAll(context.Background(), c, id)
		if err == nil || !strings.Contains(err.Error(), "Content-Range") {
			t.Fatalf("resume answered from the wrong offset: %v", err)
		}
	})
	t.Run("size changes between requests", func(t *testing.T) {
		var calls atomic.Int32
		c := misbehaving(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "1000")
			if calls.Add(1) == 1 {
				w.Write(content[:300])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}
			w.Header().Set("Content-Range", "bytes 300-998/999")
			w.Header().Set("Content-Length", "699")
			w.WriteHeader(206)
			w.Write(content[300:999])
		})
		_, err := storetest.ReadAll(context.Background(), c, id)
		if !errors.Is(err, walrus.ErrCorrupt) {
			t.Fatalf("size changed mid-read: %v", err)
		}
	})
	t.Run("publisher answers HTML", func(t *testing.T) {
		c := misbehaving(t, func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Write([]byte("<html>welcome</html>"))
		})
		_, err := c.Put(context.Background(), strings.NewReader("x"), 1, walrus.StoreOptions{})
		if !errors.Is(err, httpstore.ErrBadResponse) {
			t.Fatalf("HTML answer: %v", err)
		}
	})
	t.Run("publisher reports the wrong size", func(t *testing.T) {
		c := misbehaving(t, func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			io.WriteString(w, `{"newlyCreated":{"blobObject":{"blobId":"`+string(id)+`","size":2,"storage":{"endEpoch":5}}}}`)
		})
		_, err := c.Put(context.Background(), strings.NewReader("x"), 1, walrus.StoreOptions{})
		if !errors.Is(err, httpstore.ErrBadResponse) {
			t.Fatalf("wrong size: %v", err)
		}
	})
	t.Run("publisher answer cut off", func(t *testing.T) {
		var calls atomic.Int32
		c := misbehaving(t, func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			body := `{"alreadyCertified":{"blobId":"` + string(id) + `","endEpoch":5,"object":"0x1"}}`
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			if calls.Add(1) == 1 {
				io.WriteString(w, body[:20])
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}
			io.WriteString(w, body)
		})
		s, err := c.Put(context.Background(), strings.NewReader("x"), 1, walrus.StoreOptions{})
		if err != nil || s.BlobID != id || s.EndEpoch != 5 || s.ObjectID != "0x1" || calls.Load() != 2 {
			t.Fatalf("Put after a cut-off answer: %+v %v (%d calls)", s, err, calls.Load())
		}
	})
}
