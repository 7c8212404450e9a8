package repo_test

import (
	"bytes"
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

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("AGENTSTATE_CRASH_STORE"); dir != "" {
		crashChild(dir) // never returns
	}
	if dir := os.Getenv("AGENTSTATE_REDACT_KILL_STORE"); dir != "" {
		redactKillChild(dir) // never returns
	}
	os.Exit(m.Run())
}

// crashChild is the victim process of TestCrashSafety: it commits until killed.
func crashChild(dir string) {
	ctx := context.Background()
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 1))
	var db []byte
	if os.Getenv("AGENTSTATE_CRASH_PACK") != "" {
		db = sqliteVersions(1, uint64(os.Getpid()))[0]
	}
	for i := 0; ; i++ {
		head, hc, err := r.HeadCommit(ctx, "crash")
		if err != nil {
			panic(err)
		}
		var tr *objects.Tree
		if hc == nil {
			tr = objects.NewTree(r.Blocks)
		} else if tr, err = objects.LoadTree(ctx, r.Blocks, hc.Tree); err != nil {
			panic(err)
		}
		// Some commits write one small value, some a batch, some a large value.
		n := 1
		if i%5 == 0 {
			n = 200
		}
		var blocks []objects.Block
		for j := 0; j < n; j++ {
			size := 64 + rng.IntN(512)
			if j == 0 && i%7 == 0 {
				size = 2 << 20
			}
			data := make([]byte, size)
			for k := range data {
				data[k] = byte(rng.Uint32())
			}
			b := objects.NewValue(data)
			blocks = append(blocks, b)
			if _, err := tr.Put(ctx, fmt.Sprintf("k/%d/%d", rng.IntN(50), rng.IntN(1000)), b.CID); err != nil {
				panic(err)
			}
		}
		if err := r.Blocks.Put(ctx, blocks...); err != nil {
			panic(err)
		}
		// With packs: a new version of a chunked SQLite-like file each
		// commit, and gc (which packs its versions) every other one.
		if db != nil {
			db = nextSQLiteVersion(db, rng)
			v, _, err := objects.WriteValue(ctx, r.Blocks, bytes.NewReader(db))
			if err != nil {
				panic(err)
			}
			if _, err := tr.Put(ctx, "memory.db", v); err != nil {
				panic(err)
			}
		}
		root, err := tr.Commit(ctx)
		if err != nil {
			panic(err)
		}
		if _, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "crash", Tree: root, Parent: head, Fresh: head.IsZero(), Message: fmt.Sprint(i)}); err != nil {
			panic(err)
		}
		// With the commit graph rebuilt after every commit (drop and
		// write anew): the kill lands in the graph's writer most of the time.
		if os.Getenv("AGENTSTATE_CRASH_GRAPH") != "" {
			if _, err := r.RebuildGraph(ctx); err != nil {
				panic(err)
			}
		}
		if db != nil && i%2 == 1 {
			if _, err := r.GC(ctx, false); err != nil {
				panic(err)
			}
		}
		// With forgets: every tenth commit, cut all but the last three
		// states and prune (the kill lands anywhere in it too).
		if os.Getenv("AGENTSTATE_CRASH_FORGET") != "" && i%10 == 9 {
			if _, err := r.Forget(ctx, "crash", repo.Policy{Last: 3}, false); err != nil {
				panic(err)
			}
		}
	}
}

// TestCrashSafety SIGKILLs a process in the middle of a stream of commits,
// many times over; after each kill the store must open, verify clean, and
// have HEAD at a fully written commit.
func TestCrashSafety(t *testing.T) { crashRounds(t, nil, 16) }

// TestCrashSafetyForget is TestCrashSafety with a forget and prune every
// ten commits: a kill anywhere in a forget leaves a store that opens and
// verifies clean (every kept commit whole: verify walks them all).
func TestCrashSafetyForget(t *testing.T) {
	crashRounds(t, []string{"AGENTSTATE_CRASH_FORGET=1"}, 12)
}

// TestCrashSafetyGraph is TestCrashSafety with the commit graph dropped
// and rebuilt after every commit, so that most kills land in the graph's
// writer (a drop or a rebuild half done): the store opens and verifies
// clean, and the log read through what is left of the graph is the log
// of the commit objects.
func TestCrashSafetyGraph(t *testing.T) {
	crashRounds(t, []string{"AGENTSTATE_CRASH_GRAPH=1"}, 12)
}

// TestCrashSafetyPack is TestCrashSafety with a chunked SQLite-like file
// changed in every commit and gc, which packs its versions, run after every
// other commit: most kills land in gc's packing (or the unpacking of the
// blocks it deletes), and the store opens and verifies clean.
func TestCrashSafetyPack(t *testing.T) {
	crashRounds(t, []string{"AGENTSTATE_CRASH_PACK=1"}, 12)
}

func crashRounds(t *testing.T, env []string, rounds int) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	rng := rand.New(rand.NewPCG(42, 42))
	var lastSeq uint64
	kills := 0
	// A slow machine (or the race detector) may not reach a first commit,
	// a forget or a gc that packs within the random rounds: then more
	// rounds, each letting the child run longer, until it has (a few at
	// most).
	needCheckpoint := func() bool {
		if !slices.Contains(env, "AGENTSTATE_CRASH_FORGET=1") {
			return false
		}
		r, err := repo.Open(dir, repo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		_, ok, err := r.CheckpointOf(ctx, "crash")
		return err == nil && !ok
	}
	needPack := func() bool {
		if !slices.Contains(env, "AGENTSTATE_CRASH_PACK=1") {
			return false
		}
		r, err := repo.Open(dir, repo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		packs, err := r.Storage.(*badger.Store).PackMembers(ctx)
		return err == nil && len(packs) == 0
	}
	for round := 0; round < rounds || (round < rounds+6 && (lastSeq == 0 || needCheckpoint() || needPack())); round++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(append(os.Environ(), "AGENTSTATE_CRASH_STORE="+dir), env...)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wait := time.Duration(5+rng.IntN(900)) * time.Millisecond // early kills hit the store while it opens
		if round >= rounds {
			wait = time.Duration(round-rounds+1) * time.Second
		}
		time.Sleep(wait)
		cmd.Process.Signal(syscall.SIGKILL)
		kills++
		cmd.Wait()

		r, err := repo.Open(dir, repo.Options{})
		if err != nil {
			t.Fatalf("round %d: store does not open after SIGKILL: %v", round, err)
		}
		rep, err := r.Verify(ctx)
		if err != nil {
			t.Fatalf("round %d: verify: %v", round, err)
		}
		if len(rep.Problems) > 0 {
			t.Fatalf("round %d: verify found problems after SIGKILL: %v", round, rep.Problems)
		}
		h, err := r.Refs.Head(ctx, "crash")
		if err == nil {
			// HEAD names a commit whose whole tree and values are present (verify
			// walked them); the log only grows.
			if h.Seq < lastSeq {
				t.Fatalf("round %d: operation log shrank from %d to %d", round, lastSeq, h.Seq)
			}
			lastSeq = h.Seq
			tr, err := r.Tree(ctx, h.Commit)
			if err != nil {
				t.Fatalf("round %d: HEAD tree unreadable: %v", round, err)
			}
			// The log through the commit graph is the commit objects' log.
			lo, _, err := r.LogOptions(ctx, "crash")
			if err != nil {
				t.Fatal(err)
			}
			var got, want []objects.CID
			for e, err := range dag.LogWith(ctx, r.Blocks, h.Commit, lo) {
				if err != nil {
					t.Fatalf("round %d: log: %v", round, err)
				}
				got = append(got, e.CID)
			}
			for e, err := range dag.LogWith(ctx, dag.WithCommitCache(r.Storage, 64), h.Commit, lo) {
				if err != nil {
					t.Fatalf("round %d: log of the objects: %v", round, err)
				}
				want = append(want, e.CID)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: log through the graph has %d commits, the objects' %d", round, len(got), len(want))
			}
			for _, err := range tr.Entries(ctx, "") {
				if err != nil {
					t.Fatalf("round %d: HEAD tree walk: %v", round, err)
				}
			}
		}
		r.Close()
	}
	if lastSeq == 0 {
		t.Fatal("the child never committed; the test proved nothing")
	}
	if slices.Contains(env, "AGENTSTATE_CRASH_FORGET=1") {
		r, err := repo.Open(dir, repo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if _, ok, err := r.CheckpointOf(ctx, "crash"); err != nil || !ok {
			t.Fatalf("the child never finished a forget (%v); the test proved nothing", err)
		}
	}
	if slices.Contains(env, "AGENTSTATE_CRASH_PACK=1") {
		r, err := repo.Open(dir, repo.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if packs, err := r.Storage.(*badger.Store).PackMembers(ctx); err != nil || len(packs) == 0 {
			t.Fatalf("the child never packed (%v); the test proved nothing", err)
		}
	}
	t.Logf("%d commits survived %d SIGKILLs", lastSeq, kills)
}
