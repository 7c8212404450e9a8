package export_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export"
	"github.com/agentstate/agentstate/objects"
)

func TestMain(m *testing.M) {
	if dir := os.Getenv("AGENTSTATE_IMPORT_KILL_DIR"); dir != "" {
		importKillChild(dir) // never returns
	}
	os.Exit(m.Run())
}

const killPages, killPageSize = 1024, 4096 // a 4 MiB database: chunked, two levels of lists

// importKillChild is the victim of TestImportDirKilled: it rewrites a few
// pages of brain/memory.db and commits the directory, over and over, until
// killed.
func importKillChild(dir string) {
	ctx := context.Background()
	r, err := repo.Open(filepath.Join(dir, "store"), repo.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	brain := filepath.Join(dir, "brain")
	rng := rand.New(rand.NewPCG(uint64(os.Getpid()), 3))
	page := make([]byte, killPageSize)
	for i := 0; ; i++ {
		f, err := os.OpenFile(filepath.Join(brain, "memory.db"), os.O_WRONLY, 0)
		if err != nil {
			panic(err)
		}
		for range 1 + rng.IntN(20) {
			for k := range page {
				page[k] = byte(rng.Uint32())
			}
			if _, err := f.WriteAt(page, int64(1+rng.IntN(killPages-1))*killPageSize); err != nil {
				panic(err)
			}
		}
		f.Close()
		res, err := export.ImportDir(ctx, r.Blocks, brain, export.ImportOptions{Cache: r.StatCache()})
		if err != nil {
			panic(err)
		}
		if _, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "main", Tree: res.Tree, Message: fmt.Sprint(i)}); err != nil {
			panic(err)
		}
	}
}

// TestImportDirKilled SIGKILLs a process committing a directory whose
// memory database changes a few pages at a time (each commit written over
// the previous version, reading only the list nodes over what changed),
// at random instants: after every kill the directory committed again
// through the stat cache the killed process left has its database whole in
// the store, and the store verifies clean.
func TestImportDirKilled(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	brain := filepath.Join(dir, "brain")
	db := make([]byte, killPages*killPageSize)
	rand.NewChaCha8([32]byte{5}).Read(db)
	copy(db, "SQLite format 3\x00")
	binary.BigEndian.PutUint16(db[16:18], killPageSize)
	writeFile(t, brain, "memory.db", db, 0)
	writeFile(t, brain, "skills/a.md", []byte("a skill"), 0)
	r, err := repo.Init(filepath.Join(dir, "store"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	rng := rand.New(rand.NewPCG(7, 7))
	commits := 0
	for round := range 5 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "AGENTSTATE_IMPORT_KILL_DIR="+dir)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+rng.IntN(600)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		r, err := repo.Open(filepath.Join(dir, "store"), repo.Options{})
		if err != nil {
			t.Fatalf("round %d: store does not open after SIGKILL: %v", round, err)
		}
		if h, err := r.Refs.Head(ctx, "main"); err == nil {
			commits = int(h.Seq)
		}
		res, err := export.ImportDir(ctx, r.Blocks, brain, export.ImportOptions{Cache: r.StatCache()})
		if err != nil {
			t.Fatalf("round %d: import after the kill: %v", round, err)
		}
		if _, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "main", Tree: res.Tree, Message: "after kill"}); err != nil && err != repo.ErrNoChange {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(brain, "memory.db"))
		if err != nil {
			t.Fatal(err)
		}
		tr, err := objects.LoadTree(ctx, r.Blocks, res.Tree)
		if err != nil {
			t.Fatal(err)
		}
		v, _, err := tr.Get(ctx, "memory.db")
		if err != nil {
			t.Fatal(err)
		}
		got, err := objects.ReadValue(ctx, r.Blocks, v)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("round %d: memory.db read back after the kill: %v", round, err)
		}
		// Every commit, the killed process's and this one, whole.
		rep, err := r.Verify(ctx)
		if err != nil {
			t.Fatalf("round %d: verify: %v", round, err)
		}
		if len(rep.Problems) > 0 {
			t.Fatalf("round %d: verify found problems after the kill: %v", round, rep.Problems)
		}
		r.Close()
	}
	if commits < 2 {
		t.Fatalf("the children made %d commits; the test proved little", commits)
	}
	t.Logf("%d commits; 5 SIGKILLs", commits)
}
