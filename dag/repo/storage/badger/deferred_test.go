package badger_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

func createSync(t *testing.T) (*badger.Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "s")
	s, err := badger.Create(dir, badger.Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

func tapeOf(t *testing.T, s *badger.Store, agent string) []string {
	t.Helper()
	var out []string
	for l, err := range s.TapeLines(context.Background(), agent) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(l))
	}
	return out
}

// Writes made with a deferred context are read back at once, cost no
// write of their own, and ride in the next durable write: a task's blocks,
// its HEAD move and the receipt before it are one Badger write.
func TestDeferredWritesRideTheNextDurableWrite(t *testing.T) {
	ctx := context.Background()
	s, dir := createSync(t)
	d := badger.Deferred(ctx)
	if _, err := s.AppendLines(ctx, "a", [][]byte{[]byte("line 1")}); err != nil {
		t.Fatal(err)
	}
	before := s.Writes()
	var blocks []objects.Block
	for i := range 3 {
		blocks = append(blocks, objects.NewValue(fmt.Appendf(nil, "value %d", i)))
	}
	blocks = append(blocks, objects.NewValue(make([]byte, 40<<10))) // a value-log value
	for _, b := range blocks {
		if err := s.Put(d, b); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := s.AppendLines(d, "a", [][]byte{[]byte("line 2"), []byte("line 3")}); err != nil || n != 3 {
		t.Fatalf("deferred append: last %d, %v; want 3", n, err)
	}
	if err := s.SetMeta(d, "cache/x", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMeta(d, "cache/x", []byte("2")); err != nil { // the last value wins
		t.Fatal(err)
	}
	if got := s.Writes() - before; got != 0 {
		t.Fatalf("deferred writes made %d Badger writes, want 0", got)
	}
	for _, b := range blocks {
		data, err := s.Get(ctx, b.CID)
		if err != nil || string(data) != string(b.Data) {
			t.Fatalf("held block %s: %v", b.CID, err)
		}
		if ok, err := s.Has(ctx, b.CID); !ok || err != nil {
			t.Fatalf("Has(held block) = %v, %v", ok, err)
		}
	}
	if got := tapeOf(t, s, "a"); !slices.Equal(got, []string{"line 1", "line 2", "line 3"}) {
		t.Fatalf("tape with held lines: %q", got)
	}
	if v, ok, err := s.GetMeta(ctx, "cache/x"); !ok || err != nil || string(v) != "2" {
		t.Fatalf("held meta: %q %v %v", v, ok, err)
	}
	// The durable write: a HEAD move. One Badger write carries everything.
	if err := s.SwapHead(ctx, "a", nil, 1, []byte("entry 1"), []byte("head 1")); err != nil {
		t.Fatal(err)
	}
	if got := s.Writes() - before; got != 1 {
		t.Fatalf("the HEAD move made %d Badger writes, want 1", got)
	}
	if n, err := s.AppendLines(ctx, "a", [][]byte{[]byte("line 4")}); err != nil || n != 4 {
		t.Fatalf("durable append after held lines: last %d, %v; want 4", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for _, b := range blocks {
		if data, err := s2.Get(ctx, b.CID); err != nil || string(data) != string(b.Data) {
			t.Fatalf("block %s after reopen: %v", b.CID, err)
		}
	}
	if got := tapeOf(t, s2, "a"); !slices.Equal(got, []string{"line 1", "line 2", "line 3", "line 4"}) {
		t.Fatalf("tape after reopen: %q", got)
	}
	if v, _, _ := s2.GetMeta(ctx, "cache/x"); string(v) != "2" {
		t.Fatalf("meta after reopen: %q", v)
	}
}

// Held writes past the bound are written at once, and Close writes what is
// left; deleting a held block forgets it.
func TestDeferredWritesBoundedAndClosed(t *testing.T) {
	ctx := context.Background()
	s, dir := createSync(t)
	d := badger.Deferred(ctx)
	before := s.Writes()
	var blocks []objects.Block
	for i := 0; len(blocks)*(64<<10) <= badger.MaxHeld; i++ {
		data := make([]byte, 64<<10)
		copy(data, fmt.Sprint(i))
		blocks = append(blocks, objects.NewValue(data))
	}
	for _, b := range blocks {
		if err := s.Put(d, b); err != nil {
			t.Fatal(err)
		}
	}
	if s.Writes() == before {
		t.Fatalf("%d bytes held and none written", len(blocks)*(64<<10))
	}
	last := objects.NewValue([]byte("held at close"))
	gone := objects.NewValue([]byte("deleted while held"))
	if err := s.Put(d, last, gone); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, gone.CID); err != nil {
		t.Fatal(err)
	}
	if ok, _ := s.Has(ctx, gone.CID); ok {
		t.Fatal("a deleted held block is still there")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for _, b := range append(blocks, last) {
		if ok, err := s2.Has(ctx, b.CID); !ok || err != nil {
			t.Fatalf("block %s lost: %v", b.CID, err)
		}
	}
	if ok, _ := s2.Has(ctx, gone.CID); ok {
		t.Fatal("a deleted held block was written")
	}
}

// Without Options.Sync nothing is held: every write goes to Badger at once.
func TestDeferredWithoutSyncWritesAtOnce(t *testing.T) {
	ctx := context.Background()
	s := create(t)
	before := s.Writes()
	if err := s.Put(badger.Deferred(ctx), objects.NewValue([]byte("x"))); err != nil {
		t.Fatal(err)
	}
	if s.Writes() != before+1 {
		t.Fatalf("a deferred put without Sync made %d writes, want 1", s.Writes()-before)
	}
}

// deferredChild is the victim of TestDeferredKilled: it holds block A and
// tape line 1, moves HEAD (durable), holds block B and line 2, says so and
// waits to be killed.
func deferredChild(dir string) {
	ctx := context.Background()
	s, err := badger.Open(dir, badger.Options{Sync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	d := badger.Deferred(ctx)
	must := func(err error) {
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	must(s.Put(d, objects.NewValue([]byte("A"))))
	_, err = s.AppendLines(d, "a", [][]byte{[]byte("line 1")})
	must(err)
	must(s.SwapHead(ctx, "a", nil, 1, []byte("entry"), []byte("head")))
	must(s.Put(d, objects.NewValue([]byte("B"))))
	_, err = s.AppendLines(d, "a", [][]byte{[]byte("line 2")})
	must(err)
	fmt.Println("ready")
	select {}
}

// A process killed with writes held keeps what its last durable write
// carried (block A, line 1 and the HEAD record) and loses only what was
// held after it, and the store opens whole.
func TestDeferredKilled(t *testing.T) {
	ctx := context.Background()
	s, dir := createSync(t)
	s.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTSTATE_TEST_DEFERRED="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("child said %q", line)
	}
	s2, err := badger.Open(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if ok, _ := s2.Has(ctx, objects.NewValue([]byte("A")).CID); !ok {
		t.Fatal("block A, carried by the HEAD move, was lost")
	}
	if ok, _ := s2.Has(ctx, objects.NewValue([]byte("B")).CID); ok {
		t.Fatal("block B was written though only held")
	}
	if h, ok, _ := s2.HeadRecord(ctx, "a"); !ok || string(h) != "head" {
		t.Fatalf("HEAD record after the kill: %q %v", h, ok)
	}
	if got := tapeOf(t, s2, "a"); !slices.Equal(got, []string{"line 1"}) {
		t.Fatalf("tape after the kill: %q", got)
	}
}

// A runtime appends a receipt to its tape with every task: deferred
// appends find the tape's end once, not with a seek in Badger each (an
// iterator over every table), and lines appended deferred, directly and
// held across durable writes keep one order, in memory and after reopening.
func TestDeferredTapeAppendsFindTheEndOnce(t *testing.T) {
	ctx := context.Background()
	s, dir := createSync(t)
	d := badger.Deferred(ctx)
	var want []string
	appendLine := func(c context.Context, l string) {
		t.Helper()
		if _, err := s.AppendLines(c, "a", [][]byte{[]byte(l)}); err != nil {
			t.Fatal(err)
		}
		want = append(want, l)
	}
	appendLine(ctx, "direct 0")
	scans := badger.TapeScans()
	for i := range 50 {
		appendLine(d, fmt.Sprint("deferred ", i))
		if i%3 == 0 {
			appendLine(d, fmt.Sprint("deferred again ", i))
		}
		if err := s.SetMeta(ctx, "durable", []byte{byte(i)}); err != nil { // carries what is held
			t.Fatal(err)
		}
	}
	if n := badger.TapeScans() - scans; n > 1 {
		t.Fatalf("50 rounds of deferred appends sought the tape's end %d times, want at most 1", n)
	}
	appendLine(ctx, "direct 1")
	appendLine(d, "deferred after direct")
	appendLine(d, "and one more")
	if got := tapeOf(t, s, "a"); !slices.Equal(got, want) {
		t.Fatalf("tape %q, want %q", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := badger.Open(dir, badger.Options{Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := tapeOf(t, s, "a"); !slices.Equal(got, want) {
		t.Fatalf("tape after reopening %q, want %q", got, want)
	}
}
