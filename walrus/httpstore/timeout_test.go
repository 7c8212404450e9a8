package httpstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/walrus"
	"github.com/agentstate/agentstate/walrus/httpstore"
	"github.com/agentstate/agentstate/walrus/storetest"
	"github.com/agentstate/agentstate/walrus/walrustest"
)

// fastTimeouts scales the client's bounds down so that stalls are noticed in
// a fraction of a second.
var fastTimeouts = httpstore.Timeouts{
	ReadHeader:  300 * time.Millisecond,
	StoreAnswer: 300 * time.Millisecond,
	Idle:        200 * time.Millisecond,
	RateWindow:  300 * time.Millisecond,
	MinBytes:    4 << 10,
}

// bound is how long any of these tests may wait for the client to give up.
// A client that hangs fails the test instead of hanging the suite.
const bound = 10 * time.Second

// within runs f and fails the test if it does not return within bound. The
// context passed to f expires later than bound, so a client that honours
// contexts stops by itself after a failed test, but only the client's own
// limits can make f return in time.
func within(t *testing.T, f func(ctx context.Context) error) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*bound)
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- f(ctx) }()
	select {
	case err := <-done:
		t.Logf("gave up after %v: %v", time.Since(start).Round(time.Millisecond), err)
		return err
	case <-time.After(bound):
		t.Fatalf("still waiting after %v: the client hangs", bound)
		return nil
	}
}

func stallClient(t *testing.T, serverOpts ...walrustest.Option) (*httpstore.Client, *walrustest.Server) {
	return newClient(t, serverOpts, httpstore.WithTimeouts(fastTimeouts), httpstore.WithRetry(3, time.Millisecond, 5*time.Millisecond))
}

func readAllCtx(ctx context.Context, c *httpstore.Client, id walrus.BlobID) ([]byte, error) {
	return storetest.ReadAll(ctx, c, id)
}

// checkReadError checks that err is a *httpstore.ReadError naming blob and
// offset.
func checkReadError(t *testing.T, err error, blob walrus.BlobID, offset int64) *httpstore.ReadError {
	t.Helper()
	var re *httpstore.ReadError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T), want a *httpstore.ReadError", err, err)
	}
	if re.Blob != string(blob) || re.Offset != offset {
		t.Fatalf("ReadError names blob %q at byte %d, want %s at byte %d", re.Blob, re.Offset, blob, offset)
	}
	if msg := err.Error(); !strings.Contains(msg, string(blob)) || !strings.Contains(msg, "byte "+strconv.FormatInt(offset, 10)) {
		t.Fatalf("message %q does not name the blob and the offset", msg)
	}
	return re
}

// An aggregator that ignores Range and always cuts the body at the same byte
// gets a bounded number of attempts, then a typed error naming the blob, the
// offset and the cause.
func TestRangeIgnoredCutAtSameByte(t *testing.T) {
	c, srv := stallClient(t, walrustest.WithoutRange())
	content := storetest.Content(20, 10_000)
	s := put(t, c, content, walrus.StoreOptions{})

	// Cut once: the prefix already delivered is skipped and the read completes.
	srv.Inject(walrustest.Fault{Kind: walrustest.Truncate, At: 4000})
	if got := readAll(t, c, s.BlobID); !bytes.Equal(got, content) {
		t.Fatal("content differs after a restart from byte 0")
	}

	srv.Inject(walrustest.Fault{Kind: walrustest.Truncate, At: 4000, Count: 1000})
	before := srv.CountRequests("GET")
	var got []byte
	err := within(t, func(ctx context.Context) error {
		var err error
		got, err = readAllCtx(ctx, c, s.BlobID)
		return err
	})
	checkReadError(t, err, s.BlobID, 4000)
	var re *walrus.RetryError
	if !errors.As(err, &re) || re.Attempts != 3 || !errors.Is(err, walrus.ErrUnavailable) {
		t.Fatalf("error %v, want a *walrus.RetryError after 3 attempts", err)
	}
	if !strings.Contains(err.Error(), "Range") {
		t.Fatalf("message %q does not say the aggregator ignored Range", err)
	}
	if len(got) != 4000 || !bytes.Equal(got, content[:4000]) {
		t.Fatalf("delivered %d bytes before the error, want the first 4000", len(got))
	}
	if n := srv.CountRequests("GET") - before; n != 3 {
		t.Fatalf("%d GETs, want 3 (one attempt that progressed, two that did not)", n)
	}
}

// Even when the server honours Range, a body that never gets past one byte
// uses up the attempts.
func TestCutAtSameByteWithRange(t *testing.T) {
	c, srv := stallClient(t)
	content := storetest.Content(21, 10_000)
	s := put(t, c, content, walrus.StoreOptions{})
	srv.Inject(walrustest.Fault{Kind: walrustest.Truncate, At: 6000, Count: 1000})
	err := within(t, func(ctx context.Context) error {
		_, err := readAllCtx(ctx, c, s.BlobID)
		return err
	})
	checkReadError(t, err, s.BlobID, 6000)
	if !errors.Is(err, walrus.ErrUnavailable) {
		t.Fatalf("error %v, want ErrUnavailable", err)
	}
}

// An aggregator that takes the request and never answers.
func TestReadNoAnswer(t *testing.T) {
	c, srv := stallClient(t)
	s := put(t, c, []byte("never served"), walrus.StoreOptions{})
	srv.Inject(walrustest.Fault{Kind: walrustest.Hang, Method: "GET", Count: 1000})
	err := within(t, func(ctx context.Context) error {
		_, err := readAllCtx(ctx, c, s.BlobID)
		return err
	})
	var se *httpstore.StallError
	if !errors.As(err, &se) || se.Kind != httpstore.StallNoAnswer || !errors.Is(err, httpstore.ErrStalled) || !errors.Is(err, walrus.ErrUnavailable) {
		t.Fatalf("error %v, want a StallError (no answer) after the attempts", err)
	}
	if n := srv.CountRequests("GET"); n != 3 {
		t.Fatalf("%d GETs, want 3", n)
	}
}

// A body whose Content-Length is never met, on a connection held open.
func TestReadStalledBody(t *testing.T) {
	c, srv := stallClient(t)
	content := storetest.Content(22, 10_000)
	s := put(t, c, content, walrus.StoreOptions{})
	srv.Inject(walrustest.Fault{Kind: walrustest.Stall, At: 3000, Count: 1000})
	var got []byte
	err := within(t, func(ctx context.Context) error {
		var err error
		got, err = readAllCtx(ctx, c, s.BlobID)
		return err
	})
	checkReadError(t, err, s.BlobID, 3000)
	var se *httpstore.StallError
	if !errors.As(err, &se) || se.Kind != httpstore.StallIdle || !errors.Is(err, walrus.ErrUnavailable) {
		t.Fatalf("error %v, want an idle StallError after the attempts", err)
	}
	if !bytes.Equal(got, content[:3000]) {
		t.Fatalf("delivered %d bytes", len(got))
	}
	// A stall that clears: the read resumes where it stopped.
	srv.ClearFaults()
	srv.Inject(walrustest.Fault{Kind: walrustest.Stall, At: 3000})
	if got := readAll(t, c, s.BlobID); !bytes.Equal(got, content) {
		t.Fatal("content differs after a resumed stall")
	}
}

// A body trickled one byte at a time: every byte comes before the idle
// timeout, so only the throughput floor ends it.
func TestReadTrickle(t *testing.T) {
	c, srv := stallClient(t)
	content := storetest.Content(23, 10_000)
	s := put(t, c, content, walrus.StoreOptions{})
	srv.Inject(walrustest.Fault{Kind: walrustest.Trickle, Every: 10 * time.Millisecond, Count: 1000})
	err := within(t, func(ctx context.Context) error {
		_, err := readAllCtx(ctx, c, s.BlobID)
		return err
	})
	var se *httpstore.StallError
	if !errors.As(err, &se) || se.Kind != httpstore.StallSlow || se.MinBytes != fastTimeouts.MinBytes {
		t.Fatalf("error %v, want a StallError (too slow)", err)
	}
	var re *httpstore.ReadError
	if !errors.As(err, &re) || re.Blob != string(s.BlobID) || re.Offset == 0 || re.Offset > 100 {
		t.Fatalf("error %v, want a ReadError naming the blob and a small offset", err)
	}
}

// The same floor guards a split blob's parts.
func TestReadTrickleSplitBlob(t *testing.T) {
	c, srv := newClient(t, nil, httpstore.WithTimeouts(fastTimeouts), httpstore.WithRetry(3, time.Millisecond, 5*time.Millisecond), httpstore.WithPartSize(4<<10))
	content := storetest.Content(24, 10_000)
	s := put(t, c, content, walrus.StoreOptions{})
	if s.Parts != 3 {
		t.Fatalf("%d parts", s.Parts)
	}
	rc, err := c.Get(context.Background(), s.BlobID)
	if err != nil {
		t.Fatal(err)
	}
	srv.Inject(walrustest.Fault{Kind: walrustest.Trickle, Every: 10 * time.Millisecond, Count: 1000})
	err = within(t, func(context.Context) error {
		_, err := io.Copy(io.Discard, rc)
		return err
	})
	rc.Close() // not deferred: a reader still in use after a failed within must not be closed under it
	if !errors.Is(err, httpstore.ErrStalled) || !strings.Contains(err.Error(), "part 1") {
		t.Fatalf("error %v, want ErrStalled naming part 1", err)
	}
}

// A slow link that keeps moving more than the floor is not cut off, however
// long the whole transfer takes compared with the timeouts.
func TestSlowButSteadyReadCompletes(t *testing.T) {
	content := storetest.Content(25, 96<<10)
	c := misbehaving(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(len(content)))
		for off := 0; off < len(content); off += 8 << 10 {
			w.Write(content[off : off+8<<10])
			w.(http.Flusher).Flush()
			time.Sleep(40 * time.Millisecond) // 200 KiB/s, 12 chunks: 480 ms
		}
	}, httpstore.WithTimeouts(fastTimeouts))
	got, err := storetest.ReadAll(context.Background(), c, walrustest.BlobID(content))
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("slow but steady read: %d bytes, %v", len(got), err)
	}
}

// A consumer that pauses between reads is not mistaken for a stalled server.
func TestSlowConsumerIsNotAStall(t *testing.T) {
	c, _ := stallClient(t)
	content := storetest.Content(26, 300<<10)
	s := put(t, c, content, walrus.StoreOptions{})
	rc, err := c.Get(context.Background(), s.BlobID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var got bytes.Buffer
	buf := make([]byte, 64<<10)
	for i := 0; ; i++ {
		n, err := rc.Read(buf)
		got.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			time.Sleep(2 * fastTimeouts.RateWindow)
		}
	}
	if !bytes.Equal(got.Bytes(), content) {
		t.Fatal("content differs")
	}
}

// A publisher that reads the body and never answers.
func TestStoreNoAnswer(t *testing.T) {
	c, srv := stallClient(t)
	srv.Inject(walrustest.Fault{Kind: walrustest.Hang, Method: "PUT", Count: 1000})
	err := within(t, func(ctx context.Context) error {
		_, err := c.Put(ctx, strings.NewReader("unanswered"), 10, walrus.StoreOptions{})
		return err
	})
	var se *httpstore.StallError
	if !errors.As(err, &se) || se.Kind != httpstore.StallNoAnswer || !errors.Is(err, walrus.ErrUnavailable) {
		t.Fatalf("error %v, want a StallError (no answer) after the attempts", err)
	}
	if n := srv.CountRequests("PUT"); n != 3 {
		t.Fatalf("%d PUTs, want 3", n)
	}
}

// A publisher that trickles its answer.
func TestStoreTrickledAnswer(t *testing.T) {
	c, srv := stallClient(t)
	srv.Inject(walrustest.Fault{Kind: walrustest.Trickle, Method: "PUT", Every: 10 * time.Millisecond, Count: 1000})
	err := within(t, func(ctx context.Context) error {
		_, err := c.Put(ctx, strings.NewReader("slowly answered"), 15, walrus.StoreOptions{})
		return err
	})
	var se *httpstore.StallError
	if !errors.As(err, &se) || se.Kind != httpstore.StallSlow || !strings.Contains(err.Error(), "store") {
		t.Fatalf("error %v, want a StallError (too slow) for the store", err)
	}
}

// A publisher that stops reading the body part-way. The body is larger than
// what the kernel's socket buffers absorb, so the client's writes block.
func TestStoreStalledUpload(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 24 MiB")
	}
	const size = 24 << 20
	c, srv := newClient(t, []walrustest.Option{walrustest.WithMaxBlobSize(64 << 20)},
		httpstore.WithTimeouts(fastTimeouts), httpstore.WithRetry(2, time.Millisecond, 5*time.Millisecond), httpstore.WithPartSize(64<<20))
	srv.Inject(walrustest.Fault{Kind: walrustest.Stall, Method: "PUT", At: 1000, Count: 1000})
	content := make([]byte, size)
	err := within(t, func(ctx context.Context) error {
		_, err := c.Put(ctx, bytes.NewReader(content), size, walrus.StoreOptions{})
		return err
	})
	var se *httpstore.StallError
	if !errors.As(err, &se) || se.Kind != httpstore.StallIdle || !errors.Is(err, walrus.ErrUnavailable) {
		t.Fatalf("error %v, want an idle StallError after the attempts", err)
	}
}

// A "manifest" larger than any manifest can be is refused from its size,
// without reading it.
func TestHugeManifestRefused(t *testing.T) {
	c := misbehaving(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(1<<30))
		w.Write(httpstore.ManifestMagic[:])
		w.(http.Flusher).Flush()
		<-r.Context().Done() // then nothing: a reader would wait for ever
	}, httpstore.WithTimeouts(httpstore.Timeouts{Idle: time.Hour}))
	err := within(t, func(ctx context.Context) error {
		_, err := storetest.ReadAll(ctx, c, walrustest.BlobID([]byte("m")))
		return err
	})
	if !errors.Is(err, walrus.ErrCorrupt) || !strings.Contains(err.Error(), "manifest") || !strings.Contains(err.Error(), strconv.Itoa(1<<30)) {
		t.Fatalf("error %v, want ErrCorrupt naming the manifest size", err)
	}
}

// Answers are read up to a cap; an endless one is refused with a clear error.
func TestEndlessAnswers(t *testing.T) {
	endless := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			chunk := bytes.Repeat([]byte(" "), 32<<10)
			for r.Context().Err() == nil {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}
	}
	t.Run("store answer", func(t *testing.T) {
		c := misbehaving(t, endless(200))
		err := within(t, func(ctx context.Context) error {
			_, err := c.Put(ctx, strings.NewReader("x"), 1, walrus.StoreOptions{})
			return err
		})
		if !errors.Is(err, httpstore.ErrBadResponse) || !strings.Contains(err.Error(), "larger than") {
			t.Fatalf("endless store answer: %v", err)
		}
	})
	t.Run("error answer", func(t *testing.T) {
		c := misbehaving(t, endless(500))
		err := within(t, func(ctx context.Context) error {
			_, err := storetest.ReadAll(ctx, c, walrustest.BlobID([]byte("x")))
			return err
		})
		var ae *walrus.APIError
		if !errors.As(err, &ae) || ae.HTTPStatus != 500 {
			t.Fatalf("endless error answer: %v", err)
		}
	})
}

// The caller's deadline ends a stalled read even with the default (long)
// timeouts.
func TestDeadlineEndsStall(t *testing.T) {
	c, srv := newClient(t, nil)
	content := storetest.Content(27, 10_000)
	s := put(t, c, content, walrus.StoreOptions{})
	srv.Inject(walrustest.Fault{Kind: walrustest.Stall, Count: 1000})
	err := within(t, func(context.Context) error {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := readAllCtx(ctx, c, s.BlobID)
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want context.DeadlineExceeded", err)
	}
	srv.ClearFaults()
	srv.Inject(walrustest.Fault{Kind: walrustest.Hang, Method: "PUT", Count: 1000})
	err = within(t, func(context.Context) error {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		_, err := c.Put(ctx, strings.NewReader("late"), 4, walrus.StoreOptions{})
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want context.DeadlineExceeded", err)
	}
}

// rangeServer serves content honouring "Range: bytes=N-", cutting each
// answer after cut bytes (0: never) and waiting delay before answering.
func rangeServer(content []byte, cut int, delay time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(delay)
		start := 0
		if v, ok := strings.CutPrefix(r.Header.Get("Range"), "bytes="); ok {
			start, _ = strconv.Atoi(strings.TrimSuffix(v, "-"))
			w.Header().Set("Content-Range", "bytes "+strconv.Itoa(start)+"-"+strconv.Itoa(len(content)-1)+"/"+strconv.Itoa(len(content)))
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(content)-start))
		if start > 0 {
			w.WriteHeader(http.StatusPartialContent)
		}
		body := content[start:]
		if cut > 0 && cut < len(body) {
			w.Write(body[:cut])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		}
		w.Write(body)
	}
}

// A server that drops every connection after a byte makes progress on each
// attempt, so the attempts never run out; the throughput floor ends it.
func TestByteThenDropEnds(t *testing.T) {
	content := storetest.Content(28, 100_000)
	c := misbehaving(t, rangeServer(content, 1, 0), httpstore.WithTimeouts(fastTimeouts), httpstore.WithRetry(3, 2*time.Millisecond, 4*time.Millisecond))
	err := within(t, func(ctx context.Context) error {
		_, err := storetest.ReadAll(ctx, c, walrustest.BlobID(content))
		return err
	})
	var se *httpstore.StallError
	if !errors.As(err, &se) || se.Kind != httpstore.StallSlow {
		t.Fatalf("error %v, want a StallError (too slow)", err)
	}
}

// Waiting for an answer is bounded by ReadHeader, not by the throughput
// floor: a small blob from a slow-to-answer aggregator, read in two
// attempts, is not "too slow".
func TestSlowAnswerSmallBlob(t *testing.T) {
	content := storetest.Content(29, 1000)
	c := misbehaving(t, rangeServer(content, 600, 150*time.Millisecond), httpstore.WithTimeouts(fastTimeouts))
	got, err := storetest.ReadAll(context.Background(), c, walrustest.BlobID(content))
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("read: %d bytes, %v", len(got), err)
	}
}
