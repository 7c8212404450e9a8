// Package e2etest runs agentstate end to end against real outside services:
// ENS contracts on go-ethereum's simulated chain and an HTTP server that
// speaks Walrus's API. It is a package of its own so that go-ethereum's node
// package, which the simulated chain links, stays out of internal/cli's
// test binary: its flags package rewrites urfave/cli's help globals when it
// initialises, and internal/cli's test binary is also the agentstate its
// scripts run, which must behave as the installed one does.
package e2etest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/ens"
	"github.com/agentstate/agentstate/ens/enstest"
	"github.com/agentstate/agentstate/internal/cli"
	"github.com/agentstate/agentstate/walrus"
	"github.com/agentstate/agentstate/walrus/walrustest"
)

// storeCLI runs the agentstate command line in-process against one store.
type storeCLI struct {
	t     *testing.T
	ctx   context.Context
	store string
	agent string
}

// run runs one command and returns its output and exit code.
func (c storeCLI) run(args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	var out, errb bytes.Buffer
	full := append([]string{"agentstate", "--store", c.store, "--agent", c.agent}, args...)
	start := time.Now()
	code = cli.Main(c.ctx, full, strings.NewReader(""), &out, &errb)
	c.t.Logf("agentstate %s: exit %d in %v", strings.Join(args, " "), code, time.Since(start).Round(time.Millisecond))
	return out.String(), errb.String(), code
}

// ok runs a command that must succeed and returns its stdout.
func (c storeCLI) ok(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(args...)
	if code != 0 {
		c.t.Fatalf("agentstate %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// fails runs a command that must fail and returns its stderr.
func (c storeCLI) fails(args ...string) string {
	c.t.Helper()
	out, errOut, code := c.run(args...)
	if code == 0 {
		c.t.Fatalf("agentstate %s succeeded, want failure\nstdout: %s\nstderr: %s", strings.Join(args, " "), out, errOut)
	}
	return errOut
}

// makeBrain writes a brain directory: a few small text files and one large
// file of incompressible bytes, so that the snapshot is bigger than one
// publisher request and travels as parts under a manifest.
func makeBrain(t *testing.T, dir string, large int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, large)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	files := map[string][]byte{
		"system.md":               []byte("You are lumen.\n"),
		"skills/reentrancy.md":    []byte("# Reentrancy\nCheck effects before interactions.\n"),
		"memory/facts.json":       []byte(`{"chain":"ethereum","name":"lumen.eth"}` + "\n"),
		"memory/embeddings.bin":   big,
		"notes/2024/01/first.txt": []byte("first note\n"),
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree returns every regular file under dir by slash path, and fails on
// anything that is neither a file nor a directory.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", p)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sameTree fails unless a and b hold the same paths with the same bytes.
func sameTree(t *testing.T, what string, a, b map[string][]byte) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d files, want %d", what, len(b), len(a))
	}
	for p, data := range a {
		got, ok := b[p]
		if !ok {
			t.Fatalf("%s: %s missing", what, p)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("%s: %s differs (%d bytes, want %d)", what, p, len(got), len(data))
		}
	}
}

// headTree returns the tree CID of the agent's HEAD from log --json.
func headTree(c storeCLI) string {
	c.t.Helper()
	var log []struct {
		Tree       string `json:"tree"`
		BundleHash string `json:"bundleHash"`
	}
	if err := json.Unmarshal([]byte(c.ok("log", "-n", "1", "--json")), &log); err != nil || len(log) != 1 || log[0].Tree == "" {
		c.t.Fatalf("log -n 1 --json: %v %+v", err, log)
	}
	return log[0].Tree
}

// agents lists the agents of the store from agents --json.
func agents(c storeCLI) []string {
	c.t.Helper()
	var list []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(c.ok("agents", "--json")), &list); err != nil {
		c.t.Fatalf("agents --json: %v", err)
	}
	var names []string
	for _, a := range list {
		names = append(names, a.Name)
	}
	return names
}

// receiptLines appends receipt lines to (or, with no lines, reads) an
// agent's tape directly: the CLI has no command that writes receipts (the
// runtime does), and the amnesia drill must bring them back.
func receiptLines(t *testing.T, ctx context.Context, store, agent string, lines ...string) string {
	t.Helper()
	r, err := repo.Open(store, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tp := r.Tape
	for _, l := range lines {
		if _, err := tp.Append(ctx, agent, []byte(l)); err != nil {
			t.Fatal(err)
		}
	}
	nd, err := tp.NDJSON(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	return string(nd)
}

// TestAmnesiaOverENSAndWalrus is the end-to-end drill of DESIGN §6 through
// the CLI, over the real ENS contracts on a simulated chain reached by HTTP
// JSON-RPC and a Walrus publisher/aggregator reached by HTTP: commit a brain,
// push it (the snapshot travels as parts under a manifest; the ENS name's
// agent-snapshot record is repointed), delete the whole store, restore from
// the name alone into a fresh store, and find the same bundle hash, tree,
// keys, receipts and checkout. Around it: a wrong snapshot key restores
// nothing, a signer that does not own the name cannot repoint it, and a
// restore rides out a couple of 503s.
func TestAmnesiaOverENSAndWalrus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const name = "lumen.eth"

	chain := enstest.NewChain(t)
	operator, stranger := chain.NewAccount(t), chain.NewAccount(t)
	chain.Register(t, name, enstest.Address(operator))
	srv := walrustest.NewServer(t) // the public publishers' 10 MiB request limit

	work := t.TempDir()
	operatorKey := filepath.Join(work, "operator.ethkey")
	strangerKey := filepath.Join(work, "stranger.ethkey")
	enstest.WriteKeyFile(t, operatorKey, operator)
	enstest.WriteKeyFile(t, strangerKey, stranger)
	brain := filepath.Join(work, "brain")
	// Larger than one request (10 MiB), so the push is split.
	makeBrain(t, brain, walrustest.DefaultMaxBlobSize+(1<<20))

	chainFlags := []string{"--ens", name, "--eth-rpc", chain.URL, "--ens-registry", chain.Registry.Hex()}
	walrusFlags := []string{"--walrus-publisher", srv.URL, "--walrus-aggregator", srv.URL}
	args := func(cmd string, rest ...[]string) []string {
		a := []string{cmd}
		for _, r := range rest {
			a = append(a, r...)
		}
		return a
	}

	// Commit and push.
	old := storeCLI{t: t, ctx: ctx, store: filepath.Join(work, "store"), agent: "lumen"}
	old.ok("init")
	old.ok("commit", "-m", "seed", brain)
	receipts := []string{`{"kind":"tool","tool":"search","n":1}`, `{"kind":"tool","tool":"fetch","n":2}`}
	wantReceipts := receiptLines(t, ctx, old.store, old.agent, receipts...)
	snapKey := filepath.Join(work, "agent.key")
	old.ok("keygen", "-o", snapKey)
	var pushed struct {
		BlobID     string `json:"blobId"`
		BundleHash string `json:"bundleHash"`
		Tree       string `json:"tree"`
		Parts      int    `json:"parts"`
		Pointer    string `json:"pointer"`
	}
	out := old.ok(args("push", []string{"--key", snapKey, "--eth-key", operatorKey, "--json"}, chainFlags, walrusFlags)...)
	if err := json.Unmarshal([]byte(out), &pushed); err != nil {
		t.Fatalf("push --json: %v\n%s", err, out)
	}
	if _, err := walrus.ParseBlobID(pushed.BlobID); err != nil {
		t.Fatalf("push printed blob id %q: %v", pushed.BlobID, err)
	}
	if pushed.Parts < 2 || srv.NumBlobs() != pushed.Parts+1 {
		t.Fatalf("push stored %d parts, the server holds %d blobs; want >= 2 parts under one manifest", pushed.Parts, srv.NumBlobs())
	}
	if !strings.Contains(pushed.Pointer, name) {
		t.Fatalf("push names the pointer %q, want %s", pushed.Pointer, name)
	}

	// The name now points at the blob: read through the contract's own ABI
	// and through package ens over the same HTTP endpoint the CLI used.
	if got := chain.Text(t, name, ens.PointerKey); got != pushed.BlobID {
		t.Fatalf("%s %s = %q on chain, want the pushed blob %s", name, ens.PointerKey, got, pushed.BlobID)
	}
	ensClient, err := ens.Dial(ctx, chain.URL, chain.Registry)
	if err != nil {
		t.Fatal(err)
	}
	defer ensClient.Close()
	if got, err := ensClient.ReadPointer(ctx, name); err != nil || got != pushed.BlobID {
		t.Fatalf("ens ReadPointer = %q, %v; want %s", got, err, pushed.BlobID)
	}

	// What must survive.
	wantHash := strings.TrimSpace(old.ok("hash"))
	wantLs := old.ok("ls")
	wantTree := headTree(old)
	if wantHash != pushed.BundleHash || wantTree != pushed.Tree {
		t.Fatalf("push reported bundle %s tree %s; the store says %s %s", pushed.BundleHash, pushed.Tree, wantHash, wantTree)
	}
	before := filepath.Join(work, "checkout-before")
	old.ok("checkout", "HEAD", before)
	wantFiles := readTree(t, before)
	sameTree(t, "checkout of the pushed commit vs the brain", readTree(t, brain), wantFiles)

	// Amnesia: the whole store is gone.
	if err := os.RemoveAll(old.store); err != nil {
		t.Fatal(err)
	}
	if stderr := old.fails("log"); !strings.Contains(stderr, "store") {
		t.Fatalf("log on a deleted store: %s", stderr)
	}

	// A wrong snapshot key restores nothing.
	otherKey := filepath.Join(work, "other.key")
	old.ok("keygen", "-o", otherKey)
	wrong := storeCLI{t: t, ctx: ctx, store: filepath.Join(work, "store-wrong-key"), agent: "lumen"}
	stderr := wrong.fails(args("restore", []string{"--key", otherKey}, chainFlags, []string{"--walrus-aggregator", srv.URL})...)
	t.Logf("wrong key: %s", stderr)
	if !strings.Contains(stderr, "wrong key") {
		t.Fatalf("restore with the wrong key: %s", stderr)
	}
	if _, err := os.Stat(wrong.store); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a failed restore into a new store left the store behind (%v)", err)
	}

	// Restore from the name alone into a fresh store.
	fresh := storeCLI{t: t, ctx: ctx, store: filepath.Join(work, "store-restored"), agent: "lumen"}
	out = fresh.ok(args("restore", []string{"--key", snapKey}, chainFlags, []string{"--walrus-aggregator", srv.URL})...)
	if !strings.Contains(out, "restored lumen from blob "+pushed.BlobID) || !strings.Contains(out, fmt.Sprintf("%d receipts re-ingested", len(receipts))) {
		t.Fatalf("restore said: %s", out)
	}
	if a := agents(fresh); len(a) != 1 || a[0] != "lumen" {
		t.Fatalf("agents after restore: %v", a)
	}
	if got := strings.TrimSpace(fresh.ok("hash")); got != wantHash {
		t.Fatalf("restored bundle hash %s, want %s", got, wantHash)
	}
	if got := headTree(fresh); got != wantTree {
		t.Fatalf("restored tree %s, want %s", got, wantTree)
	}
	if got := fresh.ok("ls"); got != wantLs {
		t.Fatalf("restored ls:\n%s\nwant:\n%s", got, wantLs)
	}
	after := filepath.Join(work, "checkout-after")
	fresh.ok("checkout", "HEAD", after)
	sameTree(t, "checkout after restore vs before", wantFiles, readTree(t, after))
	if got := receiptLines(t, ctx, fresh.store, fresh.agent); got != wantReceipts {
		t.Fatalf("restored receipts:\n%s\nwant:\n%s", got, wantReceipts)
	}
	fresh.ok("verify")

	// A signer that does not own the name cannot repoint it: the push is
	// refused before anything is uploaded and the record keeps the old id.
	// The owner then can.
	if err := os.WriteFile(filepath.Join(brain, "system.md"), []byte("You are lumen, restored.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh.ok("commit", "-m", "after amnesia", brain)
	blobsBefore := srv.NumBlobs()
	stderr = fresh.fails(args("push", []string{"--key", snapKey, "--eth-key", strangerKey}, chainFlags, walrusFlags)...)
	t.Logf("stranger: %s", stderr)
	if !strings.Contains(stderr, "not authorised") || !strings.Contains(stderr, enstest.Address(stranger).Hex()) || !strings.Contains(stderr, "nothing was uploaded") {
		t.Fatalf("push signed by a stranger: %s", stderr)
	}
	if srv.NumBlobs() != blobsBefore {
		t.Fatalf("a refused push uploaded %d blobs", srv.NumBlobs()-blobsBefore)
	}
	if got := chain.Text(t, name, ens.PointerKey); got != pushed.BlobID {
		t.Fatalf("after a refused push the record is %q, want %s", got, pushed.BlobID)
	}
	out = fresh.ok(args("push", []string{"--key", snapKey, "--eth-key", operatorKey, "--json"}, chainFlags, walrusFlags)...)
	var repushed struct {
		BlobID string `json:"blobId"`
	}
	if err := json.Unmarshal([]byte(out), &repushed); err != nil {
		t.Fatal(err)
	}
	if repushed.BlobID == pushed.BlobID {
		t.Fatalf("a new commit pushed to the same blob %s", pushed.BlobID)
	}
	if got := chain.Text(t, name, ens.PointerKey); got != repushed.BlobID {
		t.Fatalf("after the owner's push the record is %q, want %s", got, repushed.BlobID)
	}

	// A restore rides out the aggregator answering 503 twice.
	srv.Inject(walrustest.Fault{Kind: walrustest.Unavailable, Method: "GET", Count: 2})
	flaky := storeCLI{t: t, ctx: ctx, store: filepath.Join(work, "store-flaky"), agent: "lumen"}
	flaky.ok(args("restore", []string{"--key", snapKey}, chainFlags, []string{"--walrus-aggregator", srv.URL})...)
	if n := srv.PendingFaults(); n != 0 {
		t.Fatalf("%d injected 503s were never served", n)
	}
	if got, want := strings.TrimSpace(flaky.ok("hash")), strings.TrimSpace(fresh.ok("hash")); got != want {
		t.Fatalf("restore through 503s: bundle hash %s, want %s", got, want)
	}
	sameTree(t, "restore through 503s", readTree(t, brain), func() map[string][]byte {
		dir := filepath.Join(work, "checkout-flaky")
		flaky.ok("checkout", "HEAD", dir)
		return readTree(t, dir)
	}())
}
