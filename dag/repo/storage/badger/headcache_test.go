package badger_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

// HEAD records are read through a cache, and a read never goes back in
// time: whatever moves HEAD, a read begun after the move returns is the
// new HEAD or a later one, and one reader's reads never go backwards, with
// readers racing the writers all along (run under -race).
func TestHeadReadsNeverStale(t *testing.T) {
	ctx := context.Background()
	s := create(t)
	// A HEAD read that misses the cache pauses a random while before and
	// after its Badger read, and a swap after its commit: that widens the
	// windows where reads and a swap interleave.
	pause := func(string) { time.Sleep(time.Duration(rand.IntN(300)) * time.Microsecond) }
	s.SetHeadHooks(badger.HeadHooks{Missed: pause, Read: pause, Swapped: pause})
	r := refs.New(s)
	c := func(i int) objects.CID { return objects.Sum(objects.CodecDagCBOR, []byte(fmt.Sprint(i))) }
	const agents, moves, readers = 2, 150, 4
	var done [agents]atomic.Uint64 // the last seq whose move returned
	for a := range agents {
		if _, err := r.Move(ctx, refs.Move{Agent: fmt.Sprint("a", a), New: c(0), Op: refs.OpCommit}); err != nil {
			t.Fatal(err)
		}
		done[a].Store(1)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, agents+readers)
	for a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent := fmt.Sprint("a", a)
			for i := range moves {
				e, err := r.Move(ctx, refs.Move{Agent: agent, Old: c(i), New: c(i + 1), Op: refs.OpCommit})
				if err != nil {
					errs <- err
					return
				}
				done[a].Store(e.Seq)
				h, err := r.Head(ctx, agent)
				if err != nil || h.Seq < e.Seq {
					errs <- fmt.Errorf("%s: read after move %d: seq %d, %v", agent, e.Seq, h.Seq, err)
					return
				}
			}
		}()
	}
	var rg sync.WaitGroup
	for range readers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			var last [agents]uint64
			for {
				select {
				case <-stop:
					return
				default:
				}
				for a := range agents {
					floor := done[a].Load()
					h, err := r.Head(ctx, fmt.Sprint("a", a))
					if err != nil || h.Seq < floor || h.Seq < last[a] || h.Commit != c(int(h.Seq)-1) {
						errs <- fmt.Errorf("a%d: read seq %d (commit %v) after a move to %d returned and an earlier read of %d: %v", a, h.Seq, h.Commit, floor, last[a], err)
						return
					}
					last[a] = h.Seq
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for a := range agents {
		if h, err := r.Head(ctx, fmt.Sprint("a", a)); err != nil || h.Seq != moves+1 || h.Commit != c(moves) {
			t.Fatalf("a%d at the end: %+v, %v", a, h, err)
		}
	}
}

// The interleaving that makes a cached HEAD go back in time, forced: a read
// whose Badger transaction saw record 1 waits before the cache keeps it; a
// swap to record 2 commits; another read returns record 2; then the first
// read goes on. No read after that may return record 1. And when nothing
// moves, a HEAD read does not reach Badger.
func TestHeadReadBeforeSwapKeepsNothing(t *testing.T) {
	ctx := context.Background()
	s := create(t)
	rec := func(i int) []byte { return []byte(fmt.Sprint("head record ", i)) }
	if err := s.SwapHead(ctx, "a", nil, 1, []byte("entry 1"), rec(1)); err != nil {
		t.Fatal(err)
	}
	// That swap kept record 1; a failed one drops it, so that the first
	// read below reaches Badger.
	if err := s.SwapHead(ctx, "a", []byte("not the record"), 2, []byte("entry"), rec(9)); err == nil {
		t.Fatal("a swap from a record that is not HEAD's succeeded")
	}
	var (
		badgerReads          atomic.Int64
		holdRead, holdSwap   atomic.Bool
		readHeld, swapHeld   = make(chan struct{}), make(chan struct{})
		readGoOn, swapGoOn   = make(chan struct{}), make(chan struct{})
		earlyRead, swapError = make(chan []byte, 1), make(chan error, 1)
	)
	holdRead.Store(true)
	holdSwap.Store(true)
	s.SetHeadHooks(badger.HeadHooks{Read: func(string) {
		badgerReads.Add(1)
		if holdRead.CompareAndSwap(true, false) {
			close(readHeld)
			<-readGoOn
		}
	}, Swapped: func(string) {
		if holdSwap.CompareAndSwap(true, false) {
			close(swapHeld)
			<-swapGoOn
		}
	}})
	read := func(want int, when string) {
		t.Helper()
		v, ok, err := s.HeadRecord(ctx, "a")
		if err != nil || !ok || string(v) != string(rec(want)) {
			t.Fatalf("%s: read %q, %v, %v; want %q", when, v, ok, err, rec(want))
		}
	}

	go func() {
		v, _, err := s.HeadRecord(ctx, "a")
		if err != nil {
			v = []byte(err.Error())
		}
		earlyRead <- v
	}()
	<-readHeld // its transaction saw record 1
	go func() { swapError <- s.SwapHead(ctx, "a", rec(1), 2, []byte("entry 2"), rec(2)) }()
	<-swapHeld // record 2 is committed
	read(2, "while the swap ends")
	close(readGoOn)
	if v := <-earlyRead; string(v) != string(rec(1)) {
		t.Fatalf("the read begun before the swap returned %q", v)
	}
	read(2, "after the early read returned")
	close(swapGoOn)
	if err := <-swapError; err != nil {
		t.Fatal(err)
	}
	read(2, "after the swap returned")

	// Nothing moves now: one more read reaches Badger at most, then none.
	read(2, "again")
	before := badgerReads.Load()
	for range 10 {
		read(2, "with nothing moving")
	}
	if n := badgerReads.Load() - before; n != 0 {
		t.Fatalf("%d HEAD reads reached Badger with nothing moving", n)
	}
}

// A swap that committed keeps its own record: the HEAD read after a move
// (a runtime's next task) does not reach Badger. Two swaps of one agent
// under way at once keep nothing (the later commit could be either), and
// neither does a swap that failed.
func TestHeadSwapKeepsItsRecord(t *testing.T) {
	ctx := context.Background()
	s := create(t)
	rec := func(i int) []byte { return []byte(fmt.Sprint("head record ", i)) }
	var badgerReads atomic.Int64
	var hold atomic.Bool
	held, goOn := make(chan struct{}), make(chan struct{})
	s.SetHeadHooks(badger.HeadHooks{Read: func(string) { badgerReads.Add(1) }, Swapped: func(string) {
		if hold.CompareAndSwap(true, false) {
			close(held)
			<-goOn
		}
	}})
	read := func(want int, reads int64, when string) {
		t.Helper()
		before := badgerReads.Load()
		v, ok, err := s.HeadRecord(ctx, "a")
		if err != nil || !ok || string(v) != string(rec(want)) {
			t.Fatalf("%s: read %q, %v, %v; want %q", when, v, ok, err, rec(want))
		}
		if n := badgerReads.Load() - before; n != reads {
			t.Fatalf("%s: %d reads reached Badger, want %d", when, n, reads)
		}
	}
	for i := 1; i <= 5; i++ {
		var old []byte
		if i > 1 {
			old = rec(i - 1)
		}
		if err := s.SwapHead(ctx, "a", old, uint64(i), []byte("entry"), rec(i)); err != nil {
			t.Fatal(err)
		}
		read(i, 0, fmt.Sprint("after move ", i))
	}
	// A failed swap (HEAD is not at old) keeps nothing: the next read
	// reaches Badger and finds the record that stands.
	if err := s.SwapHead(ctx, "a", rec(1), 6, []byte("entry"), rec(99)); err == nil {
		t.Fatal("a swap from a HEAD that moved succeeded")
	}
	read(5, 1, "after a failed swap")
	// Two swaps at once: the first waits after its commit while the second
	// runs whole; neither keeps its record.
	hold.Store(true)
	first := make(chan error, 1)
	go func() { first <- s.SwapHead(ctx, "a", rec(5), 6, []byte("entry"), rec(6)) }()
	<-held
	second := s.SwapHead(ctx, "a", rec(6), 7, []byte("entry"), rec(7))
	close(goOn)
	if err := <-first; err != nil || second != nil {
		t.Fatalf("overlapping swaps: %v, %v", err, second)
	}
	read(7, 1, "after overlapping swaps")
	read(7, 0, "once more")
}
