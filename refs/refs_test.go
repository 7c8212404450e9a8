package refs_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

func c(i int) objects.CID { return objects.Sum(objects.CodecDagCBOR, []byte(fmt.Sprint(i))) }

func open(t *testing.T) (*memory.Storage, *refs.Refs) {
	s := memory.New()
	return s, refs.New(s)
}

// tampered is a refs.Store whose log entry seq reads back edited.
type tampered struct {
	refs.Store
	seq  uint64
	edit func([]byte) []byte
}

func (s tampered) LogRecords(ctx context.Context, agent string) iter.Seq2[refs.Record, error] {
	return func(yield func(refs.Record, error) bool) {
		for r, err := range s.Store.LogRecords(ctx, agent) {
			if r.Seq == s.seq {
				r.Data = s.edit(r.Data)
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

func TestMoveCAS(t *testing.T) {
	ctx := context.Background()
	_, r := open(t)
	if _, err := r.Move(ctx, refs.Move{Agent: "lumen", New: c(1), Op: refs.OpCommit}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Move(ctx, refs.Move{Agent: "lumen", New: c(9), Op: refs.OpCommit}); !errors.Is(err, refs.ErrConflict) {
		t.Fatalf("creating an existing agent: %v, want conflict", err)
	}
	if _, err := r.Move(ctx, refs.Move{Agent: "lumen", Old: c(5), New: c(2), Op: refs.OpCommit}); !errors.Is(err, refs.ErrConflict) {
		t.Fatalf("stale CAS: %v, want conflict", err)
	}
	e, err := r.Move(ctx, refs.Move{Agent: "lumen", Old: c(1), New: c(2), Op: refs.OpCommit, Task: "t1"})
	if err != nil || e.Seq != 2 {
		t.Fatalf("Move = %+v, %v", e, err)
	}
	h, _ := r.Head(ctx, "lumen")
	if h.Commit != c(2) || h.Seq != 2 {
		t.Fatalf("head %+v", h)
	}
	if _, err := r.Head(ctx, "nobody"); !errors.Is(err, refs.ErrNoAgent) {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "a b", "../x", "a@b", "-x", "x:y"} {
		if _, err := r.Move(ctx, refs.Move{Agent: bad, New: c(1)}); !errors.Is(err, refs.ErrBadAgent) {
			t.Errorf("agent %q: %v", bad, err)
		}
	}
	if p := r.Verify(ctx, "lumen"); len(p) != 0 {
		t.Fatal(p)
	}
}

func TestConcurrentCASOneWins(t *testing.T) {
	ctx := context.Background()
	_, r := open(t)
	r.Move(ctx, refs.Move{Agent: "a", New: c(0), Op: refs.OpCommit})
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 1; i <= 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := r.Move(ctx, refs.Move{Agent: "a", Old: c(0), New: c(i), Op: refs.OpCommit})
			if err == nil {
				mu.Lock()
				wins++
				mu.Unlock()
			} else if !errors.Is(err, refs.ErrConflict) {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d compare-and-swaps from the same HEAD succeeded, want 1", wins)
	}
	if p := r.Verify(ctx, "a"); len(p) != 0 {
		t.Fatal(p)
	}
}

func TestVerifyDetectsEdit(t *testing.T) {
	ctx := context.Background()
	s, r := open(t)
	prev := objects.CID{}
	for i := 1; i <= 5; i++ {
		if _, err := r.Move(ctx, refs.Move{Agent: "a", Old: prev, New: c(i), Op: refs.OpCommit}); err != nil {
			t.Fatal(err)
		}
		prev = c(i)
	}
	// Edit entry 3's task field behind the store's back.
	r = refs.New(tampered{Store: s, seq: 3, edit: func(v []byte) []byte {
		return []byte(string(v[:len(v)-1]) + `,"task":"forged"}`)
	}})
	p := r.Verify(ctx, "a")
	if len(p) == 0 || !errors.Is(p[0], refs.ErrBrokenLog) {
		t.Fatalf("edited entry not detected: %v", p)
	}
}

func TestUndoRedo(t *testing.T) {
	var log []refs.Entry
	add := func(op refs.Op, old, new objects.CID, target uint64) {
		log = append(log, refs.Entry{Seq: uint64(len(log) + 1), Op: op, Old: old, New: new, Target: target})
	}
	add(refs.OpCommit, objects.CID{}, c(1), 0)
	add(refs.OpCommit, c(1), c(2), 0)
	add(refs.OpCommit, c(2), c(3), 0)
	e, err := refs.UndoTarget(log, false)
	if err != nil || e.Seq != 3 {
		t.Fatalf("first undo target %v %v", e, err)
	}
	add(refs.OpUndo, c(3), c(2), 3)
	if e, _ = refs.UndoTarget(log, false); e.Seq != 2 {
		t.Fatalf("second undo should step further back, got %d", e.Seq)
	}
	add(refs.OpUndo, c(2), c(1), 2)
	if _, err := refs.UndoTarget(log, false); !errors.Is(err, refs.ErrNothingUndo) {
		t.Fatalf("undo past the first operation: %v", err)
	}
	if e, _ = refs.UndoTarget(log, true); e.Seq != 2 {
		t.Fatalf("redo target %d, want 2", e.Seq)
	}
	add(refs.OpRedo, c(1), c(2), 2)
	if e, _ = refs.UndoTarget(log, true); e.Seq != 3 {
		t.Fatalf("second redo target %d, want 3", e.Seq)
	}
	add(refs.OpCommit, c(2), c(4), 0)
	if _, err := refs.UndoTarget(log, true); !errors.Is(err, refs.ErrNothingRedo) {
		t.Fatalf("redo after a new commit: %v", err)
	}
	if e, _ = refs.UndoTarget(log, false); e.Seq != 7 {
		t.Fatalf("undo target %d, want 7", e.Seq)
	}
}

// slowLog is a refs.Store whose log reads let a writer move HEAD between
// reading HEAD and reading the log, as a served store's writers do.
type slowLog struct {
	refs.Store
	between func()
}

func (s slowLog) LogRecords(ctx context.Context, agent string) iter.Seq2[refs.Record, error] {
	s.between()
	return s.Store.LogRecords(ctx, agent)
}

// Verify beside a writer: HEAD moving while the log is read is not a broken
// log.
func TestVerifyBesideAWriter(t *testing.T) {
	ctx := context.Background()
	s := memory.New()
	w := refs.New(s)
	if _, err := w.Move(ctx, refs.Move{Agent: "lumen", New: c(0), Op: refs.OpCommit}); err != nil {
		t.Fatal(err)
	}
	n := 0
	moves := 0
	move := func() {
		if moves >= 3 { // a writer that lands a few times, then stops
			return
		}
		moves++
		n++
		if _, err := w.Move(ctx, refs.Move{Agent: "lumen", Old: c(n - 1), New: c(n), Op: refs.OpCommit}); err != nil {
			t.Error(err)
		}
	}
	r := refs.New(slowLog{Store: s, between: move})
	if problems := r.Verify(ctx, "lumen"); len(problems) > 0 {
		t.Fatalf("verify beside a writer: %v", problems)
	}
	if moves != 3 {
		t.Fatalf("the writer moved HEAD %d times during verify, want 3", moves)
	}
}

// ValidateAgent accepts exactly the names ^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$
// matches.
func TestValidateAgentMatchesPattern(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	names := []string{"", "a", "A", "0", ".", "_", "-", "a.b_c-d", ".a", "-a", "a b", "a/b", "é", "a\x00",
		strings.Repeat("a", 63), strings.Repeat("a", 64), strings.Repeat("a", 65), "a\n", "Z9", "z-", "a..", "[a]"}
	for c := 0; c < 256; c++ {
		names = append(names, string([]byte{byte(c)}), "a"+string([]byte{byte(c)}))
	}
	for _, n := range names {
		if got, want := refs.ValidateAgent(n) == nil, re.MatchString(n); got != want {
			t.Errorf("ValidateAgent(%q) accepts: %v, the pattern: %v", n, got, want)
		}
	}
}

// headEdit is a refs.Store whose HEAD records read back through edit.
type headEdit struct {
	refs.Store
	edit func([]byte) []byte
}

func (s headEdit) HeadRecord(ctx context.Context, agent string) ([]byte, bool, error) {
	b, ok, err := s.Store.HeadRecord(ctx, agent)
	if ok && s.edit != nil {
		b = s.edit(b)
	}
	return b, ok, err
}

// A HEAD read again is the HEAD stored now, whoever moved it: a HEAD
// decoded before is reused only for the very bytes it was decoded from.
func TestHeadReadsWhatIsStored(t *testing.T) {
	ctx := context.Background()
	s, r := open(t)
	other := refs.New(s) // another writer over the same records
	if _, err := r.Move(ctx, refs.Move{Agent: "lumen", New: c(1), Op: refs.OpCommit}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		h, err := r.Head(ctx, "lumen")
		if err != nil || h.Commit != c(i) || h.Seq != uint64(i) {
			t.Fatalf("read %d: %+v, %v; want commit %v seq %d", i, h, err, c(i), i)
		}
		if _, err := other.Move(ctx, refs.Move{Agent: "lumen", Old: c(i), New: c(i + 1), Op: refs.OpCommit}); err != nil {
			t.Fatal(err)
		}
	}
	// The same record, then a damaged copy of it: the damage is seen.
	ed := &headEdit{Store: s}
	re := refs.New(ed)
	if _, err := re.Head(ctx, "lumen"); err != nil {
		t.Fatal(err)
	}
	ed.edit = func(b []byte) []byte { return b[:len(b)-1] }
	if _, err := re.Head(ctx, "lumen"); !errors.Is(err, refs.ErrBrokenLog) {
		t.Fatalf("a truncated HEAD record read after a good one: %v, want ErrBrokenLog", err)
	}
	ed.edit = func(b []byte) []byte { return []byte(strings.Replace(string(b), `"seq":4`, `"seq":7`, 1)) }
	if h, err := re.Head(ctx, "lumen"); err != nil || h.Seq != 7 {
		t.Fatalf("an edited HEAD record: %+v, %v; want seq 7 as stored", h, err)
	}
	// More agents than the memo holds: every HEAD still reads right.
	const n = 5000
	for i := range n {
		if _, err := r.Move(ctx, refs.Move{Agent: fmt.Sprintf("a%d", i), New: c(i), Op: refs.OpCommit}); err != nil {
			t.Fatal(err)
		}
	}
	for pass := range 2 {
		for i := range n {
			if h, err := r.Head(ctx, fmt.Sprintf("a%d", i)); err != nil || h.Commit != c(i) {
				t.Fatalf("pass %d, agent a%d: %+v, %v", pass, i, h, err)
			}
		}
	}
}
