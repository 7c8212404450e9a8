package runtime

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/refs"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("AGENTSTATE_RUNTIME_CRASH"); dir != "" {
		crashChild(dir, os.Getenv("AGENTSTATE_RUNTIME_CRASH_MODE")) // never returns
	}
	os.Exit(m.Run())
}

// crashChild runs turns on agent s1 and dies by SIGKILL: in "mid-task" mode
// inside the third task after two of its writes, in "loop" mode whenever
// the parent kills it.
func crashChild(dir, mode string) {
	ctx := context.Background()
	rt, err := Open(ctx, Options{Store: dir, Signer: testKey("operator"), Sync: mode == "durable"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	t := &testing.T{}
	if mode == "durable" {
		// Each landed task is acknowledged on stdout once RunTask returns.
		for i := 0; ; i++ {
			in := fmt.Sprintf("%d-%d", os.Getpid(), i)
			turn(t, rt, "s1", in)
			fmt.Println(in)
		}
	}
	if mode == "mid-task" {
		turn(t, rt, "s1", "hello")
		turn(t, rt, "s1", "again")
		rt.RunTask(ctx, "s1", Task{ID: "turn:doomed"}, func(ctx context.Context, tx *Tx) error {
			tx.Put(ctx, "session/history.json", []byte(`["hello","again","doomed"]`))
			tx.Put(ctx, "scratch", []byte("half-saved"))
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				p.Kill()
			}
			select {}
		})
	}
	for i := 0; ; i++ {
		turn(t, rt, "s1", fmt.Sprintf("%d-%d", os.Getpid(), i))
	}
}

func runChild(t *testing.T, dir, mode string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTSTATE_RUNTIME_CRASH="+dir, "AGENTSTATE_RUNTIME_CRASH_MODE="+mode)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// checkAfterCrash reopens the store and checks it: it verifies clean, HEAD
// is a landed task, history has one turn per landed task, and every receipt
// verifies and names a landed task.
func checkAfterCrash(t *testing.T, dir string) []string {
	t.Helper()
	ctx := context.Background()
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatalf("store does not open after SIGKILL: %v", err)
	}
	rep, err := r.Verify(ctx)
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify after SIGKILL: %v %v", err, rep.Problems)
	}
	ents, _ := r.Refs.Entries(ctx, "s1")
	r.Close()
	rt := openWith(t, Options{Store: dir, Signer: testKey("operator")})
	h := turns(t, rt, "s1")
	if len(h) != len(ents) {
		t.Fatalf("history has %d turns but %d tasks landed", len(h), len(ents))
	}
	recs, err := rt.Receipts(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	// A receipt is appended right after its landing; a kill between the two
	// is repaired when the agent is next loaded.
	if len(recs) != len(ents) {
		t.Fatalf("%d receipts for %d landings", len(recs), len(ents))
	}
	for i, rc := range recs {
		if err := rc.Verify(rt.PublicKey()); err != nil {
			t.Fatal(err)
		}
		if rc.Commit != ents[i].New || rc.Task != ents[i].Task {
			t.Fatalf("receipt %d names %s/%s, landing %d was %s/%s", i, rc.Task, rc.Commit, i, ents[i].Task, ents[i].New)
		}
	}
	rt.Close()
	// Every receipt has its task record (written with it, or with the
	// receipt re-created), and verify found each one right.
	r, err = repo.Open(dir, repo.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	trs, ok, err := r.TaskRecords(ctx, "s1")
	if err != nil || (!ok && len(ents) > 0) || len(trs) != len(ents) {
		t.Fatalf("task records after SIGKILL: %d for %d landings, ok %v, %v", len(trs), len(ents), ok, err)
	}
	for i, tr := range trs {
		if tr.Commit != ents[i].New || tr.ID != ents[i].Task {
			t.Fatalf("task record %d names %s/%s, landing %d was %s/%s", i, tr.ID, tr.Commit, i, ents[i].Task, ents[i].New)
		}
	}
	return h
}

// A process killed in the middle of a task (seed 004: a crash mid-save)
// leaves the agent at its last landed state.
func TestCrashMidTaskFallsBackToLastLanded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	cmd := runChild(t, dir, "mid-task")
	cmd.Wait()
	if h := checkAfterCrash(t, dir); !slices.Equal(h, []string{"hello", "again"}) {
		t.Fatalf("after the crash: %q", h)
	}
}

func TestCrashAtRandomInstants(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills processes")
	}
	dir := filepath.Join(t.TempDir(), "store")
	openWith(t, Options{Store: dir, Signer: testKey("operator")}).Close() // a kill during creation is not what is tested
	rng := rand.New(rand.NewPCG(4, 4))
	var turns int
	for round := range 6 {
		cmd := runChild(t, dir, "loop")
		time.Sleep(time.Duration(200+rng.IntN(400)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		h := checkAfterCrash(t, dir)
		if len(h) < turns {
			t.Fatalf("round %d: history shrank from %d to %d", round, turns, len(h))
		}
		turns = len(h)
	}
	if turns == 0 {
		t.Fatal("no task ever landed; the test proved nothing")
	}
	t.Logf("%d turns survived 6 SIGKILLs", turns)
}

// With Options.Sync a task's commits and receipt are held in memory and
// written by its landing (or the next one), one durable write per task: a
// process killed at random instants still keeps every task it acknowledged
// (RunTask returned), in order, and the store verifies clean with a receipt
// for every landing (re-created for those the kill took).
func TestCrashKeepsEveryAcknowledgedTask(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	openWith(t, Options{Store: dir, Signer: testKey("operator")}).Close() // made whole before the first kill
	rng := rand.New(rand.NewPCG(24, 24))
	var acked []string
	for round := range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "AGENTSTATE_RUNTIME_CRASH="+dir, "AGENTSTATE_RUNTIME_CRASH_MODE=durable")
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan []string)
		go func() {
			var got []string
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				got = append(got, sc.Text())
			}
			lines <- got
		}()
		time.Sleep(time.Duration(300+rng.IntN(500)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		got := <-lines
		cmd.Wait()
		acked = append(acked, got...)
		h := checkAfterCrash(t, dir)
		if len(h) < len(acked) || !slices.Equal(h[:len(acked)], acked) {
			t.Fatalf("round %d: %d tasks acknowledged, history holds %d; the first acknowledged task missing: %v",
				round, len(acked), len(h), firstMissing(acked, h))
		}
		acked = h // a landing the kill cut off before its acknowledgement is kept too
	}
	if len(acked) == 0 {
		t.Fatal("no task was ever acknowledged; the test proved nothing")
	}
	t.Logf("%d acknowledged tasks survived 5 SIGKILLs", len(acked))
}

func firstMissing(want, have []string) string {
	for i, w := range want {
		if i >= len(have) || have[i] != w {
			return w
		}
	}
	return ""
}

// A landing whose receipt was never appended gets it re-created, byte for
// byte, when the agent is next loaded.
func TestMissingReceiptRecreated(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	rt := openWith(t, Options{Store: dir, Signer: testKey("operator")})
	first := turn(t, rt, "s1", "hello")
	// Land a task by hand, skipping the receipt, as a kill would.
	tx, err := rt.begin(ctx, "s1", Task{ID: "lost", Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	tx.Put(ctx, "a", []byte("1"))
	tx.Put(ctx, "b", []byte("2"))
	tx.finish()
	now := rt.repo.Now()
	if _, err := rt.repo.Refs.Move(ctx, refs.Move{Agent: "s1", Old: first.Commit, New: tx.last, Op: refs.OpCommit, Time: now, Task: "lost"}); err != nil {
		t.Fatal(err)
	}
	want, err := rt.receipt(ctx, "s1", tx.task, tx.start, first.Commit, tx.last, tx.last, 2, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	rt.Close()
	rt2 := openWith(t, Options{Store: dir, Signer: testKey("operator")})
	if _, err := rt2.Agent(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	recs, err := rt2.Receipts(ctx, "s1")
	if err != nil || len(recs) != 2 {
		t.Fatalf("%d receipts, %v", len(recs), err)
	}
	if string(recs[1].Line()) != string(want.Line()) || recs[1].Writes != 2 || recs[1].Model != "m" {
		t.Fatalf("re-created\n%s\nwant\n%s", recs[1].Line(), want.Line())
	}
}
