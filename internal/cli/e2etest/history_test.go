package e2etest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/ens"
	"github.com/agentstate/agentstate/ens/enstest"
	"github.com/agentstate/agentstate/export/history"
	"github.com/agentstate/agentstate/runtime"
	"github.com/agentstate/agentstate/walrus/walrustest"
)

// landTasks opens a runtime on store with the operator key in keyFile and
// lands one task per key, each writing its key.
func landTasks(t *testing.T, ctx context.Context, store, keyFile, agent string, keys ...string) {
	t.Helper()
	signer, err := runtime.LoadOrCreateKey(ctx, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.Open(ctx, runtime.Options{Store: store, Signer: signer})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	for _, k := range keys {
		_, err := rt.RunTask(ctx, agent, runtime.Task{ID: "task-" + k}, func(ctx context.Context, tx *runtime.Tx) error {
			return tx.Put(ctx, k, []byte("written by the task for "+k+"\n"))
		})
		if err != nil {
			t.Fatalf("task %s: %v", k, err)
		}
	}
}

// TestHistoryTravelsOverENSAndWalrus is issue 11's end-to-end drill: two
// stores, each with its own runtime and operator key; a clone; tasks on both
// sides; a pull that merges; a push of the history to the Walrus server with
// the manifest named by the ENS name's agent-history record (beside the
// agent-snapshot record of the tar); more work and an incremental push;
// amnesia; restore --history from the name alone into a fresh store. The
// restored log equals the original commit for commit, every receipt (signed
// by either operator) verifies against its real commit, and verify is clean.
// Around it: an untrusted signer, a torn record and a wrong key restore
// nothing.
func TestHistoryTravelsOverENSAndWalrus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "lumen.eth"
	chain := enstest.NewChain(t)
	owner := chain.NewAccount(t)
	chain.Register(t, name, enstest.Address(owner))
	srv := walrustest.NewServer(t)

	work := t.TempDir()
	ethKey := filepath.Join(work, "owner.ethkey")
	enstest.WriteKeyFile(t, ethKey, owner)
	opA, opB := filepath.Join(work, "operator-a.key"), filepath.Join(work, "operator-b.key")
	chainFlags := []string{"--ens", name, "--eth-rpc", chain.URL, "--ens-registry", chain.Registry.Hex()}
	walrusFlags := []string{"--walrus-publisher", srv.URL, "--walrus-aggregator", srv.URL}
	with := func(args []string, more ...[]string) []string {
		for _, m := range more {
			args = append(args, m...)
		}
		return args
	}

	// Store A: lumen's first tasks. Store B: a clone, where work goes on.
	a := storeCLI{t: t, ctx: ctx, store: filepath.Join(work, "a"), agent: "lumen"}
	b := storeCLI{t: t, ctx: ctx, store: filepath.Join(work, "b"), agent: "lumen"}
	landTasks(t, ctx, a.store, opA, "lumen", "memory/one.md", "memory/two.md", "skills/a.md")
	b.ok("clone", a.store, "lumen")
	landTasks(t, ctx, b.store, opB, "lumen", "skills/b1.md", "skills/b2.md")
	landTasks(t, ctx, a.store, opA, "lumen", "memory/three.md")
	out := a.ok("pull", b.store)
	if !strings.Contains(out, "merged") {
		t.Fatalf("the diverged pull did not merge: %s", out)
	}

	// Push the snapshot and the history.
	snapKey := filepath.Join(work, "snap.key")
	a.ok("keygen", "-o", snapKey)
	var pushed struct {
		BlobID  string `json:"blobId"`
		History struct {
			Manifest string `json:"manifest"`
			Packs    int    `json:"packs"`
			Pack     *struct {
				Blocks int `json:"blocks"`
			} `json:"pack"`
		} `json:"history"`
	}
	push := func() {
		t.Helper()
		out := a.ok(with([]string{"push", "--key", snapKey, "--eth-key", ethKey, "--history", "--sign-key", opA, "--json"}, chainFlags, walrusFlags)...)
		pushed.History.Pack = nil
		if err := json.Unmarshal([]byte(out), &pushed); err != nil {
			t.Fatalf("push --json: %v\n%s", err, out)
		}
	}
	push()
	first := pushed.History
	if first.Packs != 1 || first.Pack == nil {
		t.Fatalf("first history push: %+v", first)
	}
	if got := chain.Text(t, name, ens.PointerKey); got != pushed.BlobID {
		t.Fatalf("%s = %q, want the tar snapshot %s", ens.PointerKey, got, pushed.BlobID)
	}
	if got := chain.Text(t, name, ens.HistoryKey); got != first.Manifest {
		t.Fatalf("%s = %q, want %s", ens.HistoryKey, got, first.Manifest)
	}
	// More work, then an incremental push: one more pack, smaller.
	landTasks(t, ctx, a.store, opA, "lumen", "memory/four.md", "memory/five.md")
	push()
	if pushed.History.Packs != 2 || pushed.History.Pack == nil || pushed.History.Pack.Blocks >= first.Pack.Blocks {
		t.Fatalf("second history push: %+v (first pack %d blocks)", pushed.History, first.Pack.Blocks)
	}
	wantLog := a.ok("log", "--json")
	wantOplogLen := strings.Count(a.ok("receipts"), "\n")
	wantHash := strings.TrimSpace(a.ok("hash"))
	if n := strings.Count(wantLog, `"cid"`); n < 9 {
		t.Fatalf("the original log has %d commits:\n%s", n, wantLog)
	}
	pubA := filepath.Join(work, "operator-a.pub")
	if err := os.Rename(opA+".pub", pubA); err != nil {
		t.Fatal(err)
	}

	// Amnesia.
	if err := os.RemoveAll(a.store); err != nil {
		t.Fatal(err)
	}

	restoreFlags := with([]string{"restore", "--history", "--key", snapKey}, chainFlags, []string{"--walrus-aggregator", srv.URL})
	// A manifest signed by a key the restorer does not trust: nothing.
	stranger := storeCLI{t: t, ctx: ctx, store: filepath.Join(work, "c-stranger"), agent: "lumen"}
	stderr := stranger.fails(with(restoreFlags, []string{"--pub", fmt.Sprintf("%064x", 7)})...)
	if !strings.Contains(stderr, "not a trusted operator key") {
		t.Fatalf("untrusted signer: %s", stderr)
	}
	if _, err := os.Stat(stranger.store); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("a refused restore left a store behind")
	}
	// A wrong snapshot key: nothing.
	otherKey := filepath.Join(work, "other.key")
	stranger.ok("keygen", "-o", otherKey)
	stderr = stranger.fails(with([]string{"restore", "--history", "--key", otherKey, "--pub", pubA}, chainFlags, []string{"--walrus-aggregator", srv.URL})...)
	if !strings.Contains(stderr, "wrong key") {
		t.Fatalf("wrong key: %s", stderr)
	}

	// Restore the whole history from the name alone.
	c := storeCLI{t: t, ctx: ctx, store: filepath.Join(work, "c"), agent: "lumen"}
	out = c.ok(with(restoreFlags, []string{"--pub", pubA})...)
	if !strings.Contains(out, "2 packs") || !strings.Contains(out, "(created)") || !strings.Contains(out, "2 key records added") {
		t.Fatalf("restore --history said: %s", out)
	}
	if got := c.ok("log", "--json"); got != wantLog {
		t.Fatalf("the restored log differs from the original:\n%s\nwant:\n%s", got, wantLog)
	}
	if got := strings.TrimSpace(c.ok("hash")); got != wantHash {
		t.Fatalf("restored bundle hash %s, want %s", got, wantHash)
	}
	out = c.ok("receipts", "--verify")
	if want := fmt.Sprintf("%d receipt(s) verified", wantOplogLen); !strings.Contains(out, want) || wantOplogLen != 8 {
		t.Fatalf("receipts --verify after restore (want %d, of 8 tasks):\n%s", wantOplogLen, out)
	}
	c.ok("verify")
	// Time travel into the restored past works: the commit before the merge.
	c.ok("checkout", "HEAD~3", filepath.Join(work, "past"))

	// A torn record: the agent-history record names a blob that is not a
	// manifest. Refused, nothing changed in the restored store.
	if _, err := (func() (any, error) {
		cl, err := ens.Dial(ctx, chain.URL, chain.Registry)
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		ref, err := history.ParseRef(pushed.History.Manifest)
		if err != nil {
			return nil, err
		}
		ref.Size++
		return cl.SetText(ctx, name, ens.HistoryKey, ref.String(), owner)
	})(); err != nil {
		t.Fatal(err)
	}
	stderr = c.fails(with(restoreFlags, []string{"--pub", pubA})...)
	if !strings.Contains(stderr, "contradicts its manifest") {
		t.Fatalf("torn record: %s", stderr)
	}
	if got := c.ok("log", "--json"); got != wantLog {
		t.Fatal("a refused restore changed the log")
	}
}
