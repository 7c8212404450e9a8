package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/walrus"
)

// Suite describes the store under test.
type Suite struct {
	// New returns a new, empty store. It is called once per subtest.
	New func(t *testing.T) walrus.Store
	// LargeSize is the size of the large blob in the round-trip tests. Set it
	// above the store's part size to exercise splitting; 0 means 1 MiB + 7.
	LargeSize int64
	// Stall, for stores behind a network, makes every later transfer of st
	// stop part-way and hold (a server that stops sending, or never
	// answers). The Stalled test then requires Put and reading a blob to
	// fail within StallBound instead of hanging. Nil for stores with
	// nothing to stall.
	Stall func(t *testing.T, st walrus.Store)
	// StallBound is how long a stalled Put or Get may take to fail; 0 means
	// 10 seconds. Configure the store's timeouts well below it.
	StallBound time.Duration
}

// Run runs the conformance suite.
func Run(t *testing.T, s Suite) {
	if s.LargeSize == 0 {
		s.LargeSize = 1<<20 + 7
	}
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, s) })
	t.Run("Idempotent", func(t *testing.T) { testIdempotent(t, s) })
	t.Run("DistinctContent", func(t *testing.T) { testDistinct(t, s) })
	t.Run("ConcurrentSameContent", func(t *testing.T) { testConcurrent(t, s) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, s) })
	t.Run("BadBlobID", func(t *testing.T) { testBadID(t, s) })
	t.Run("SizeMismatch", func(t *testing.T) { testSizeMismatch(t, s) })
	t.Run("InvalidOptions", func(t *testing.T) { testInvalidOptions(t, s) })
	t.Run("Progress", func(t *testing.T) { testProgress(t, s) })
	t.Run("CancelledContext", func(t *testing.T) { testCancelled(t, s) })
	t.Run("CancelDuringRead", func(t *testing.T) { testCancelDuringRead(t, s) })
	t.Run("DeadlineDuringRead", func(t *testing.T) { testDeadlineDuringRead(t, s) })
	if s.Stall != nil {
		t.Run("Stalled", func(t *testing.T) { testStalled(t, s) })
	}
}

// Content returns n deterministic pseudo-random bytes derived from seed.
func Content(seed uint64, n int64) []byte {
	var key [32]byte
	key[0] = byte(seed)
	key[1] = byte(seed >> 8)
	key[2] = byte(seed >> 16)
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

// onlyReader hides every method but Read, so stores cannot seek or ReadAt.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// ReadAll reads the blob named id whole.
func ReadAll(ctx context.Context, st walrus.Store, id walrus.BlobID) ([]byte, error) {
	rc, err := st.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func mustPut(t *testing.T, st walrus.Store, r io.Reader, size int64) walrus.Stored {
	t.Helper()
	stored, err := st.Put(context.Background(), r, size, walrus.StoreOptions{Epochs: 2})
	if err != nil {
		t.Fatalf("Put(%d bytes): %v", size, err)
	}
	return stored
}

func testRoundTrip(t *testing.T, s Suite) {
	sizes := []int64{0, 1, 13, 64<<10 + 3, s.LargeSize}
	for i, size := range sizes {
		content := Content(uint64(i+1), size)
		readers := []struct {
			name string
			r    func() io.Reader
			size int64
		}{
			{"seekable", func() io.Reader { return bytes.NewReader(content) }, size},
			{"stream", func() io.Reader { return onlyReader{bytes.NewReader(content)} }, size},
			{"unknown-size", func() io.Reader { return onlyReader{bytes.NewReader(content)} }, -1},
		}
		var first walrus.BlobID
		for _, rd := range readers {
			t.Run(fmt.Sprintf("%d/%s", size, rd.name), func(t *testing.T) {
				st := s.New(t)
				stored := mustPut(t, st, rd.r(), rd.size)
				if _, err := walrus.ParseBlobID(string(stored.BlobID)); err != nil {
					t.Fatalf("Put returned a malformed id: %v", err)
				}
				if stored.Size != size {
					t.Errorf("Stored.Size = %d, want %d", stored.Size, size)
				}
				if first == "" {
					first = stored.BlobID
				} else if stored.BlobID != first {
					t.Errorf("same content stored through a %s reader got id %s, earlier %s", rd.name, stored.BlobID, first)
				}
				got, err := ReadAll(context.Background(), st, stored.BlobID)
				if err != nil {
					t.Fatalf("Get %s: %v", stored.BlobID, err)
				}
				if !bytes.Equal(got, content) {
					t.Fatalf("read back %d bytes, differing from the %d stored", len(got), len(content))
				}
			})
		}
	}
}

func testIdempotent(t *testing.T, s Suite) {
	st := s.New(t)
	content := Content(7, 5000)
	a := mustPut(t, st, bytes.NewReader(content), int64(len(content)))
	b := mustPut(t, st, bytes.NewReader(content), int64(len(content)))
	if a.BlobID != b.BlobID {
		t.Fatalf("re-put gave id %s, first put %s", b.BlobID, a.BlobID)
	}
	if a.AlreadyCertified {
		t.Errorf("first put of new content reported AlreadyCertified")
	}
	if !b.AlreadyCertified {
		t.Errorf("re-put of the same content did not report AlreadyCertified")
	}
	large := Content(8, s.LargeSize)
	c := mustPut(t, st, bytes.NewReader(large), int64(len(large)))
	d := mustPut(t, st, onlyReader{bytes.NewReader(large)}, -1)
	if c.BlobID != d.BlobID || c.Parts != d.Parts {
		t.Fatalf("re-put of the large blob gave %+v, first %+v", d, c)
	}
	if !d.AlreadyCertified {
		t.Errorf("re-put of the large blob did not report AlreadyCertified")
	}
}

func testDistinct(t *testing.T, s Suite) {
	st := s.New(t)
	seen := map[walrus.BlobID]string{}
	for _, c := range []string{"", "a", "b", "ab", "ba", "a\x00"} {
		stored := mustPut(t, st, bytes.NewReader([]byte(c)), int64(len(c)))
		if prev, dup := seen[stored.BlobID]; dup {
			t.Fatalf("%q and %q got the same id %s", prev, c, stored.BlobID)
		}
		seen[stored.BlobID] = c
	}
}

func testConcurrent(t *testing.T, s Suite) {
	st := s.New(t)
	content := Content(9, 100_000)
	const n = 4
	ids := make([]walrus.BlobID, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stored, err := st.Put(context.Background(), bytes.NewReader(content), int64(len(content)), walrus.StoreOptions{})
			ids[i], errs[i] = stored.BlobID, err
		}()
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("concurrent put %d: %v", i, errs[i])
		}
		if ids[i] != ids[0] {
			t.Fatalf("concurrent puts of the same content gave ids %s and %s", ids[0], ids[i])
		}
	}
	got, err := ReadAll(context.Background(), st, ids[0])
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("read after concurrent puts: %v (equal %v)", err, bytes.Equal(got, content))
	}
}

func testNotFound(t *testing.T, s Suite) {
	st := s.New(t)
	mustPut(t, st, bytes.NewReader([]byte("something else")), 14)
	var raw [32]byte
	copy(raw[:], Content(10, 32))
	id := walrus.BlobIDFromBytes(raw)
	rc, err := st.Get(context.Background(), id)
	if err == nil {
		rc.Close()
		t.Fatalf("Get of an unknown id succeeded")
	}
	if !errors.Is(err, walrus.ErrNotFound) {
		t.Fatalf("Get of an unknown id: %v, want ErrNotFound", err)
	}
}

func testBadID(t *testing.T, s Suite) {
	st := s.New(t)
	bad := []walrus.BlobID{"", "short", "M4hsZGQ1oCktdzegB6HnI6Mi28S2nqOPHxK-W7_4BUk=", "M4hsZGQ1oCktdzegB6HnI6Mi28S2nqOPHxK+W7/4BUk",
		"../../../../../../etc/passwd", "M4hsZGQ1oCktdzegB6HnI6Mi28S2nqOPHxK-W7_4BUl", "0x56ae1c86e17db174ea002f8340e28880bc8a8587c56e8604a4fa6b1170b23a60"}
	for _, id := range bad {
		rc, err := st.Get(context.Background(), id)
		if err == nil {
			rc.Close()
			t.Errorf("Get(%q) succeeded", id)
			continue
		}
		if !errors.Is(err, walrus.ErrBadBlobID) {
			t.Errorf("Get(%q): %v, want ErrBadBlobID", id, err)
		}
	}
}

func testSizeMismatch(t *testing.T, s Suite) {
	st := s.New(t)
	content := []byte("twelve bytes")
	for _, declared := range []int64{int64(len(content)) - 1, int64(len(content)) + 1, 0, -2} {
		_, err := st.Put(context.Background(), onlyReader{bytes.NewReader(content)}, declared, walrus.StoreOptions{})
		if !errors.Is(err, walrus.ErrSizeMismatch) {
			t.Errorf("Put of %d bytes declared as %d: %v, want ErrSizeMismatch", len(content), declared, err)
		}
		_, err = st.Put(context.Background(), bytes.NewReader(content), declared, walrus.StoreOptions{})
		if !errors.Is(err, walrus.ErrSizeMismatch) {
			t.Errorf("Put of %d seekable bytes declared as %d: %v, want ErrSizeMismatch", len(content), declared, err)
		}
	}
	// A reader is read from where it stands.
	r := bytes.NewReader(content)
	r.Seek(7, io.SeekStart)
	stored, err := st.Put(context.Background(), r, int64(len(content))-7, walrus.StoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ReadAll(context.Background(), st, stored.BlobID); err != nil || string(got) != "bytes" {
		t.Fatalf("Put from offset 7 stored %q, %v", got, err)
	}
	if r.Len() != 0 {
		t.Errorf("Put left %d bytes unread in the reader", r.Len())
	}
}

func testInvalidOptions(t *testing.T, s Suite) {
	st := s.New(t)
	for _, o := range []walrus.StoreOptions{{Epochs: -1}, {Epochs: walrus.MaxEpochsAhead + 1}, {SendObjectTo: "not-an-address"}} {
		_, err := st.Put(context.Background(), bytes.NewReader([]byte("x")), 1, o)
		if !errors.Is(err, walrus.ErrInvalidOptions) {
			t.Errorf("Put with %+v: %v, want ErrInvalidOptions", o, err)
		}
	}
}

func testProgress(t *testing.T, s Suite) {
	st := s.New(t)
	content := Content(11, s.LargeSize)
	var calls int
	var last int64 = -1
	opts := walrus.StoreOptions{Progress: func(done, total int64) {
		calls++
		if done < last {
			t.Errorf("progress went back from %d to %d", last, done)
		}
		if total != int64(len(content)) {
			t.Errorf("progress total %d, want %d", total, len(content))
		}
		if done > total {
			t.Errorf("progress done %d > total %d", done, total)
		}
		last = done
	}}
	if _, err := st.Put(context.Background(), bytes.NewReader(content), int64(len(content)), opts); err != nil {
		t.Fatal(err)
	}
	if calls == 0 || last != int64(len(content)) {
		t.Fatalf("progress called %d times, last done %d, want it to end at %d", calls, last, len(content))
	}
}

func testCancelled(t *testing.T, s Suite) {
	st := s.New(t)
	stored := mustPut(t, st, bytes.NewReader([]byte("hello")), 5)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.Put(ctx, bytes.NewReader([]byte("other")), 5, walrus.StoreOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context: %v, want context.Canceled", err)
	}
	rc, err := st.Get(ctx, stored.BlobID)
	if err == nil {
		rc.Close()
		t.Fatalf("Get with a cancelled context succeeded")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: %v, want context.Canceled", err)
	}
}

func testCancelDuringRead(t *testing.T, s Suite) {
	st := s.New(t)
	content := Content(12, s.LargeSize)
	stored := mustPut(t, st, bytes.NewReader(content), int64(len(content)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rc, err := st.Get(ctx, stored.BlobID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadFull(rc, make([]byte, 100)); err != nil {
		t.Fatalf("first read: %v", err)
	}
	cancel()
	_, err = io.Copy(io.Discard, rc)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("reading on after cancel: %v, want context.Canceled", err)
	}
}

// A deadline that passes mid-read ends the read with an error matching
// context.DeadlineExceeded, never a short read ending in io.EOF.
func testDeadlineDuringRead(t *testing.T, s Suite) {
	st := s.New(t)
	content := Content(13, s.LargeSize)
	stored := mustPut(t, st, bytes.NewReader(content), int64(len(content)))
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	rc, err := st.Get(ctx, stored.BlobID)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, err := io.ReadFull(rc, make([]byte, 100)); err != nil {
		t.Fatalf("first read: %v", err)
	}
	expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	if _, err := st.Put(expired, bytes.NewReader([]byte("late")), 4, walrus.StoreOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Put past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if rc2, err := st.Get(expired, stored.BlobID); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			rc2.Close()
		}
		t.Errorf("Get past its deadline: %v, want context.DeadlineExceeded", err)
	}
	cancel()
	if _, err := io.Copy(io.Discard, rc); !errors.Is(err, context.Canceled) {
		t.Fatalf("reading on after the context ended: %v, want context.Canceled", err)
	}
}

// A store whose transfers stall fails within the bound: stores, reads
// started before the stall and reads started after it.
func testStalled(t *testing.T, s Suite) {
	bound := s.StallBound
	if bound == 0 {
		bound = 10 * time.Second
	}
	st := s.New(t)
	content := Content(14, s.LargeSize)
	stored := mustPut(t, st, bytes.NewReader(content), int64(len(content)))
	open, err := st.Get(context.Background(), stored.BlobID)
	if err != nil {
		t.Fatal(err)
	}
	s.Stall(t, st)
	// Each operation gets a context that outlives the bound: only the
	// store's own limits can end it in time.
	within := func(what string, mustFail bool, f func(ctx context.Context) error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 3*bound)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- f(ctx) }()
		select {
		case err := <-done:
			if err == nil && mustFail {
				t.Errorf("%s against a stalled store succeeded", what)
			} else if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s: %v: ended by the caller's deadline, not by the store", what, err)
			}
		case <-time.After(bound):
			t.Fatalf("%s against a stalled store still waiting after %v", what, bound)
		}
	}
	// Its bytes may have arrived before the stall: it must only not hang.
	within("reading a blob opened before the stall", false, func(context.Context) error {
		_, err := io.Copy(io.Discard, open)
		return err
	})
	open.Close()
	within("reading a blob", true, func(ctx context.Context) error {
		_, err := ReadAll(ctx, st, stored.BlobID)
		return err
	})
	within("storing a blob", true, func(ctx context.Context) error {
		_, err := st.Put(ctx, bytes.NewReader(Content(15, 5000)), 5000, walrus.StoreOptions{})
		return err
	})
}
