// Command hermes is a Hermes-pattern task loop on the agentstate runtime:
// an agent brain seeded on first run, tasks that call (scripted) tools,
// update memory and write a skill after a hard task, signed receipts, a
// background encrypted snapshot to a local blob directory, and a cold
// restore after the operator's store is wiped.
//
// Run it from the repository root:
//
//	go run ./examples/hermes            # in a temporary directory, removed after
//	go run ./examples/hermes -dir demo  # keep everything in ./demo to inspect with the CLI
package main

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentstate/agentstate/export/envelope"
	"github.com/agentstate/agentstate/runtime"
	"github.com/agentstate/agentstate/walrus/localstore"
)

//go:embed seed
var seedFS embed.FS

const agent = "lumen"

func main() {
	dir := flag.String("dir", "", "working directory (default: a temporary one, removed at exit)")
	flag.Parse()
	if err := run(context.Background(), *dir); err != nil {
		fmt.Fprintln(os.Stderr, "hermes:", err)
		os.Exit(1)
	}
}

// A scripted model: each task is a list of tool calls and a final answer.
type step struct{ tool, arg string }

type job struct {
	id, input string
	calls     []step
	fact      string
	revise    string // a task whose finding this one confirms (memory.db)
}

var jobs = []job{
	{"audit-vault", "audit Vault.sol", []step{
		{"read_file", "Vault.sol"}, {"grep", "call{value:"}, {"read_skill", "access-control"},
		{"grep", "balances[msg.sender] ="}, {"run_tests", "forge test"}, {"read_file", "test/Vault.t.sol"},
	}, "Vault.withdraw sends ETH before zeroing the balance (reentrancy).", ""},
	{"audit-token", "audit Token.sol", []step{
		{"read_file", "Token.sol"}, {"read_skill", "access-control"},
	}, "Token.mint has onlyOwner; no finding.", "audit-vault"},
}

func run(ctx context.Context, dir string) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "hermes-demo-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	paths := struct{ store, blobs, seed, opKey, snapKey string }{
		filepath.Join(dir, "store"), filepath.Join(dir, "blobs"), filepath.Join(dir, "seed"),
		filepath.Join(dir, "operator.key"), filepath.Join(dir, "snapshot.key"),
	}
	if err := writeSeed(paths.seed); err != nil {
		return err
	}
	signer, err := runtime.LoadOrCreateKey(ctx, paths.opKey)
	if err != nil {
		return err
	}
	key, err := loadOrCreateSnapshotKey(ctx, paths.snapKey)
	if err != nil {
		return err
	}
	cipher, err := envelope.NewAESGCM(key, envelope.Options{})
	if err != nil {
		return err
	}
	blobs, err := localstore.Open(paths.blobs)
	if err != nil {
		return err
	}
	// The pointer file lives in the store by default; put it beside the blob
	// directory instead so it survives wiping the store (as an ENS record
	// would).
	opts := runtime.Options{Store: paths.store, Signer: signer, Cipher: cipher, Blobs: blobs,
		Pointer: pointerDir(filepath.Join(dir, "pointers")), SeedDir: paths.seed,
		// Ship the whole history with each snapshot (packs and a manifest
		// signed with the operator key), so that a cold start gets every
		// commit and receipt back, not only the latest state.
		History: true,
		OnSnapshot: func(ev runtime.SnapshotEvent) {
			if ev.Err != nil {
				fmt.Printf("  [snapshot] %s at %s failed (attempt %d, final=%v): %v\n", ev.Agent, ev.Commit.Short(), ev.Attempt, ev.Final, ev.Err)
				return
			}
			fmt.Printf("  [snapshot] %s at %s shipped: blob %s (%d bytes, bundle %s), pointer %s; history: %d packs\n",
				ev.Agent, ev.Commit.Short(), ev.Result.BlobID, ev.Result.Size, ev.Result.BundleHash[:10], ev.Result.Pointer, ev.Result.HistoryPacks)
		}}
	rt, err := runtime.Open(ctx, opts)
	if err != nil {
		return err
	}
	defer rt.Close()

	fmt.Printf("== operator %x, everything under %s\n", []byte(rt.PublicKey())[:8], dir)
	info, err := rt.Agent(ctx, agent)
	if err != nil {
		return err
	}
	fmt.Printf("== agent %s loaded (%s) at %s\n", agent, info.Origin, info.Head.Short())

	for _, j := range jobs {
		rec, err := rt.RunTask(ctx, agent, runtime.Task{ID: j.id, Attempt: "1", Model: "scripted-model", Adapter: "hermes-example"},
			func(ctx context.Context, tx *runtime.Tx) error { return hermesLoop(ctx, tx, j) })
		if err != nil {
			return err
		}
		printReceipt(rt, rec)
	}

	// Two tasks at once: different keys merge, the same key conflicts.
	fmt.Println("== two overlapping tasks writing different keys, then two writing the same key")
	if err := overlap(ctx, rt, "notes/user.md", "notes/style.md"); err != nil {
		return err
	}
	err = overlap(ctx, rt, "MEMORY.md", "MEMORY.md")
	var ce *runtime.ConflictError
	if !errors.As(err, &ce) {
		return fmt.Errorf("expected a conflict, got %v", err)
	}
	fmt.Printf("  conflict, as expected: keys %q; HEAD stayed where the first task left it\n", ce.Keys)

	// A failing task moves nothing.
	head, _ := rt.Head(ctx, agent)
	_, err = rt.RunTask(ctx, agent, runtime.Task{ID: "audit-broken"}, func(ctx context.Context, tx *runtime.Tx) error {
		tx.Put(ctx, "skills/half-learned.md", []byte("..."))
		return errors.New("model output did not parse after 8 turns")
	})
	after, _ := rt.Head(ctx, agent)
	fmt.Printf("== a failing task: %v\n   HEAD before %s, after %s\n", err, head.Short(), after.Short())

	if err := rt.WaitSnapshots(ctx); err != nil {
		return err
	}
	v, err := rt.View(ctx, agent, "")
	if err != nil {
		return err
	}
	want, _ := v.BundleHash(ctx)
	skills, _ := v.List(ctx, "skills/")
	fmt.Printf("== brain now: bundle %s, skills %v\n", want, skills)
	if err := rt.Close(); err != nil {
		return err
	}

	// Amnesia: the operator loses its store. Only the blob directory, the
	// pointer and the keys remain.
	fmt.Println("== amnesia: the store is wiped; cold start from the published history (or, without one, the snapshot)")
	if err := os.RemoveAll(paths.store); err != nil {
		return err
	}
	rt2, err := runtime.Open(ctx, opts)
	if err != nil {
		return err
	}
	defer rt2.Close()
	info, err = rt2.Agent(ctx, agent)
	if err != nil {
		return err
	}
	v2, err := rt2.View(ctx, agent, "")
	if err != nil {
		return err
	}
	got, _ := v2.BundleHash(ctx)
	what := "snapshot blob"
	if info.Restore.History {
		what = "whole history, manifest"
	}
	fmt.Printf("   %s from its %s %s: bundle %s (%s), %d receipts re-ingested\n", info.Origin, what, info.Restore.BlobID, got,
		map[bool]string{true: "matches", false: "DOES NOT MATCH"}[got == want], info.Restore.Receipts)
	recs, err := rt2.Receipts(ctx, agent)
	if err != nil {
		return err
	}
	for _, r := range recs {
		if err := r.Verify(rt2.PublicKey()); err != nil {
			return err
		}
		if _, err := rt2.View(ctx, agent, r.Commit.String()); err != nil {
			return fmt.Errorf("receipt of task %s: its commit is not in the restored store: %w", r.Task, err)
		}
	}
	fmt.Printf("   all %d receipts verify against the operator key and their commits\n", len(recs))
	fmt.Printf("== inspect with the CLI (with -dir): agentstate --store %s --agent %s log --oneline / receipts --verify / oplog\n", paths.store, agent)
	return nil
}

// hermesLoop is one Hermes-pattern session: assemble the prompt from the
// brain, run the tool calls, record the transcript, update memory, and
// write a skill after a hard task (5+ tool calls).
func hermesLoop(ctx context.Context, tx *runtime.Tx, j job) error {
	system, err := tx.Get(ctx, "system.md")
	if err != nil {
		return err
	}
	skills, err := tx.List(ctx, "skills/")
	if err != nil {
		return err
	}
	fmt.Printf("== task %s: %q (prompt %d bytes, skill index %v)\n", j.id, j.input, len(system), skills)
	var transcript []string
	for i, c := range j.calls {
		transcript = append(transcript, fmt.Sprintf("turn %d: {\"tool\":%q,\"args\":%q}", i+1, c.tool, c.arg))
	}
	transcript = append(transcript, "final: "+j.fact)
	if err := tx.Put(ctx, "memory/transcripts/"+j.id+".txt", []byte(strings.Join(transcript, "\n")+"\n")); err != nil {
		return err
	}
	var facts struct {
		Facts []string `json:"facts"`
	}
	b, err := tx.Get(ctx, "memory/facts.json")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &facts); err != nil {
		return fmt.Errorf("memory/facts.json: %w", err)
	}
	facts.Facts = append(facts.Facts, j.fact)
	b, _ = json.Marshal(facts)
	if err := tx.Put(ctx, "memory/facts.json", b); err != nil {
		return err
	}
	if err := updateMemoryDB(ctx, tx, j, transcript); err != nil {
		return err
	}
	fmt.Printf("   %d tool calls, memory updated (memory/facts.json, memory.db)\n", len(j.calls))
	if len(j.calls) >= 5 {
		skill := fmt.Sprintf("---\nname: %s\ndescription: learned from %s\n---\n", "reentrancy-check", j.id)
		skill += "1. grep for external calls (call{value:}).\n2. Check that balances are written before the call.\n"
		if err := tx.Put(ctx, "skills/reentrancy-check.md", []byte(skill)); err != nil {
			return err
		}
		fmt.Println("   hard task: wrote skills/reentrancy-check.md")
	}
	return nil
}

func overlap(ctx context.Context, rt *runtime.Runtime, keyA, keyB string) error {
	started := make(chan struct{})
	release := make(chan struct{})
	var wg sync.WaitGroup
	var recA *runtime.Receipt
	var errA error
	wg.Add(1)
	go func() {
		defer wg.Done()
		recA, errA = rt.RunTask(ctx, agent, runtime.Task{ID: "slow:" + keyA}, func(ctx context.Context, tx *runtime.Tx) error {
			if err := tx.Put(ctx, keyA, []byte("written by the slow task\n")); err != nil {
				return err
			}
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	recB, err := rt.RunTask(ctx, agent, runtime.Task{ID: "fast:" + keyB}, func(ctx context.Context, tx *runtime.Tx) error {
		return tx.Put(ctx, keyB, []byte("written by the fast task\n"))
	})
	close(release)
	wg.Wait()
	if err != nil {
		return err
	}
	printReceipt(rt, recB)
	if errA != nil {
		return errA
	}
	printReceipt(rt, recA)
	return nil
}

func printReceipt(rt *runtime.Runtime, r *runtime.Receipt) {
	ok := "verified"
	if err := r.Verify(rt.PublicKey()); err != nil {
		ok = err.Error()
	}
	how := ""
	if r.Merged() {
		how = " as a merge"
	}
	fmt.Printf("   landed%s: %s -> %s, bundle %s -> %s, stateDelta %s, %d write(s), receipt %s\n",
		how, short(r.From.String()), r.Commit.Short(), r.BundleBefore.String()[:10], r.BundleAfter.String()[:10], r.StateDeltaHash.String()[:10], r.Writes, ok)
}

func short(s string) string {
	if s == "" {
		return "(new)"
	}
	return s[:16]
}

func writeSeed(dst string) error {
	return fs.WalkDir(seedFS, "seed", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, strings.TrimPrefix(p, "seed"))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := seedFS.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
}

func loadOrCreateSnapshotKey(ctx context.Context, path string) (envelope.Key, error) {
	if _, err := os.Stat(path); err == nil {
		return envelope.LoadKeyFile(ctx, path)
	}
	k, err := envelope.GenerateKey(rand.Reader)
	if err != nil {
		return k, err
	}
	return k, envelope.WriteKeyFile(ctx, path, k)
}
