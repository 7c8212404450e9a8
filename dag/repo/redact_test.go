package repo_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs/redaction"
)

var redactSeed = sha256.Sum256([]byte("redact test key"))

func redactKey() ed25519.PrivateKey { return ed25519.NewKeyFromSeed(redactSeed[:]) }

// putCommit writes key=content at agent's HEAD and returns the commit.
func putCommit(t *testing.T, r *repo.Repo, agent, key string, content []byte) objects.CID {
	t.Helper()
	ctx := context.Background()
	head, hc, err := r.HeadCommit(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	tr := objects.NewTree(r.Blocks)
	if hc != nil {
		if tr, err = objects.LoadTree(ctx, r.Blocks, hc.Tree); err != nil {
			t.Fatal(err)
		}
	}
	v, _, err := objects.WriteValue(ctx, r.Blocks, bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Put(ctx, key, v); err != nil {
		t.Fatal(err)
	}
	root, err := tr.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: agent, Tree: root, Parent: head, Fresh: head.IsZero(), Message: key})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func valueAt(t *testing.T, r *repo.Repo, c objects.CID, key string) objects.CID {
	t.Helper()
	tr, err := r.Tree(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	v, ok, err := tr.Get(context.Background(), key)
	if err != nil || !ok {
		t.Fatalf("%s at %s: %v %v", key, c.Short(), ok, err)
	}
	return v
}

func mustVerify(t *testing.T, r *repo.Repo) {
	t.Helper()
	rep, err := r.Verify(context.Background())
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}

func newStore(t *testing.T) (*repo.Repo, string) {
	dir := filepath.Join(t.TempDir(), "s")
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir
}

// TestRedactRawValue: a secret in one version of a key is removed, commits
// and bundle hashes stay, verify is clean, and a block no record covers is
// still corruption.
func TestRedactRawValue(t *testing.T) {
	ctx := context.Background()
	r, _ := newStore(t)
	c1 := putCommit(t, r, "a", "skill.md", []byte("token=SECRET-123\n"))
	c2 := putCommit(t, r, "a", "skill.md", []byte("token=<removed>\n"))
	c3 := putCommit(t, r, "a", "other.md", []byte("unrelated\n"))
	secret := valueAt(t, r, c1, "skill.md")
	before := map[objects.CID]objects.BundleHash{}
	for _, c := range []objects.CID{c1, c2, c3} {
		h, err := r.CommitBundleHash(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		before[c] = h
	}
	rep, err := r.Redact(ctx, repo.RedactRequest{Agent: "a", Key: "skill.md", At: c1, Reason: "leaked token"}, redactKey())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Removed != 1 || len(rep.Commits) != 1 || rep.Commits[0] != c1 || rep.Values[0] != secret {
		t.Fatalf("report %+v", rep)
	}
	if ok, _ := r.Blocks.Has(ctx, secret); ok {
		t.Fatal("the secret's block is still in the store")
	}
	for c, h := range before {
		if got, err := r.CommitBundleHash(ctx, c); err != nil || got != h {
			t.Fatalf("bundle hash of %s moved: %v %v", c.Short(), got, err)
		}
		if _, err := r.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if h, _ := r.Refs.Head(ctx, "a"); h.Commit != c3 {
		t.Fatal("HEAD moved")
	}
	mustVerify(t, r)
	if _, err := r.GC(ctx, false); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, r)
	ri, ok, err := r.RedactionOf(ctx, secret)
	if err != nil || !ok || ri.Record.Reason != "leaked token" {
		t.Fatalf("RedactionOf: %+v %v %v", ri, ok, err)
	}
	// Again: nothing to do.
	if _, err := r.Redact(ctx, repo.RedactRequest{Agent: "a", Key: "skill.md", At: c1, Reason: "again"}, redactKey()); !errors.Is(err, repo.ErrNothingToRedact) {
		t.Fatalf("second redaction: %v", err)
	}
	// A block no record names, gone: corruption.
	other := valueAt(t, r, c3, "other.md")
	if err := r.Storage.(objects.BlockDeleter).Delete(ctx, other); err != nil {
		t.Fatal(err)
	}
	vr, err := r.Verify(ctx)
	if err != nil || len(vr.Problems) != 1 || !strings.Contains(vr.Problems[0], other.String()) {
		t.Fatalf("verify after deleting an unredacted block: %v %v", err, vr.Problems)
	}
}

// TestRedactBadInput: each mistake is one clear error and changes nothing.
func TestRedactBadInput(t *testing.T) {
	ctx := context.Background()
	r, _ := newStore(t)
	c1 := putCommit(t, r, "a", "k.md", []byte("secret\n"))
	putCommit(t, r, "a", "k.md", []byte("later\n"))
	cb := putCommit(t, r, "b", "k.md", []byte("b's\n"))
	for _, tc := range []struct {
		req  repo.RedactRequest
		want error
	}{
		{repo.RedactRequest{Agent: "a", Key: "nope.md", All: true, Reason: "x"}, repo.ErrNothingToRedact},
		{repo.RedactRequest{Agent: "a", Key: "nope.md", At: c1, Reason: "x"}, repo.ErrNothingToRedact},
		{repo.RedactRequest{Agent: "a", Key: "k.md", At: cb, Reason: "x"}, repo.ErrNotInHistory},
		{repo.RedactRequest{Agent: "a", Value: valueAt(t, r, cb, "k.md"), Reason: "x"}, repo.ErrNothingToRedact},
		{repo.RedactRequest{Agent: "a", Key: "k.md", At: c1}, repo.ErrBadRedaction},
		{repo.RedactRequest{Agent: "a", Key: "../k", At: c1, Reason: "x"}, repo.ErrBadRedaction},
		{repo.RedactRequest{Agent: "a", Reason: "x"}, repo.ErrBadRedaction},
	} {
		if _, err := r.Redact(ctx, tc.req, redactKey()); !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.req, err, tc.want)
		}
	}
	if ris, err := r.Redactions(ctx, ""); err != nil || len(ris) != 0 {
		t.Fatalf("records after refusals: %v %v", ris, err)
	}
	if ok, _ := r.Blocks.Has(ctx, valueAt(t, r, c1, "k.md")); !ok {
		t.Fatal("a refused redaction removed a block")
	}
	mustVerify(t, r)
}

// TestRedactRecordTrust: a record whose signer the store does not trust
// for the agent, or a forged one, covers nothing: verify names it and the
// block it names as corruption.
func TestRedactRecordTrust(t *testing.T) {
	ctx := context.Background()
	r, _ := newStore(t)
	c1 := putCommit(t, r, "a", "k.md", []byte("secret\n"))
	putCommit(t, r, "a", "k.md", []byte("later\n"))
	rep, err := r.Redact(ctx, repo.RedactRequest{Agent: "a", Key: "k.md", At: c1, Reason: "x"}, redactKey())
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, r)
	name := "redaction/a/" + rep.ID
	line, _, _ := r.Storage.GetMeta(ctx, name)

	// Forged: the reason changed, the signature kept (and the name).
	forged := bytes.Replace(line, []byte(`"reason":"x"`), []byte(`"reason":"y"`), 1)
	r.Storage.SetMeta(ctx, name, forged)
	vr, _ := r.Verify(ctx)
	if len(vr.Problems) != 2 || !strings.Contains(strings.Join(vr.Problems, "\n"), "not found") {
		t.Fatalf("forged record: %v", vr.Problems)
	}
	r.Storage.SetMeta(ctx, name, line)
	mustVerify(t, r)

	// Untrusted signer.
	pub := repo.KeyHex(redactKey().Public().(ed25519.PublicKey))
	if _, err := r.ApplyKeyOp(ctx, repo.KeyOp{Op: repo.KeyOpUntrust, Agent: "a", Keys: []string{pub}}); err != nil {
		t.Fatal(err)
	}
	vr, _ = r.Verify(ctx)
	if len(vr.Problems) != 2 || !strings.Contains(strings.Join(vr.Problems, "\n"), "does not trust") {
		t.Fatalf("untrusted record: %v", vr.Problems)
	}
	if _, err := r.GC(ctx, true); !errors.Is(err, repo.ErrDamaged) {
		t.Fatalf("gc with an untrusted record: %v", err)
	}
}

// TestRedactSharedChunks: a chunked value's chunks that a later version
// shares stay, and the report names that version; redacting it too
// removes them.
func TestRedactSharedChunks(t *testing.T) {
	ctx := context.Background()
	r, _ := newStore(t)
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 3<<20)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	copy(big[100:], "SECRET")
	c1 := putCommit(t, r, "a", "mem.bin", big)
	v2 := bytes.Clone(big)
	copy(v2[len(v2)-100:], "changed tail")
	c2 := putCommit(t, r, "a", "mem.bin", v2)
	putCommit(t, r, "a", "mem.bin", []byte("small now"))
	rep, err := r.Redact(ctx, repo.RedactRequest{Agent: "a", Key: "mem.bin", At: c1, Reason: "x"}, redactKey())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Kept == 0 || rep.Removed == 0 || len(rep.Shared) != 1 || rep.Shared[0].Commit != c2 {
		t.Fatalf("report %+v", rep)
	}
	mustVerify(t, r)
	// The later version still reads whole.
	if _, err := objects.ReadValueMax(ctx, r.Blocks, valueAt(t, r, c2, "mem.bin"), 1<<30); err != nil {
		t.Fatal(err)
	}
	rep2, err := r.Redact(ctx, repo.RedactRequest{Agent: "a", Key: "mem.bin", At: c2, Reason: "x"}, redactKey())
	if err != nil {
		t.Fatal(err)
	}
	if rep2.Kept != 0 || rep2.Removed < rep.Kept {
		t.Fatalf("second report %+v (first kept %d)", rep2, rep.Kept)
	}
	mustVerify(t, r)
	ris, _ := r.Redactions(ctx, "a")
	if len(ris) != 2 || ris[1].Record.Prev != ris[0].ID {
		t.Fatalf("records do not chain: %+v", ris)
	}
	if _, err := r.GC(ctx, false); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, r)
}

// TestRedactRecordVector pins the record's encoding (docs/format.md §10).
func TestRedactRecordVector(t *testing.T) {
	v := objects.NewValue([]byte("token=SECRET-123\n")).CID
	c, _ := objects.ParseCID("bafyreie5737gdxlw5i64vzichcalba3z2v5n6icifvx5xytvske7mr3hpm")
	rec := &redaction.Record{Agent: "lumen", Keys: []string{"skills/deploy.md"}, Values: []objects.CID{v}, Blocks: []objects.CID{v},
		Commits: []objects.CID{c}, Reason: "leaked API key", Time: 1700000000}
	if err := rec.Sign(redactKey()); err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"agent":"lumen","keys":["skills/deploy.md"],"values":["` + v.String() + `"],"blocks":["` + v.String() +
		`"],"commits":["` + c.String() + `"],"reason":"leaked API key","time":1700000000,"prev":"","signer":"` +
		hex.EncodeToString(redactKey().Public().(ed25519.PublicKey)) + `","sig":"`
	want += "7708b83454542651a59f32f5c6f5fc1a3be94e7d0475a2b1314dbb0a9ffddfad023aa2a7171196c255415479b74114e0bcf1945b39d196de02ca968306f51b05\"}"
	line := string(rec.Line())
	if line != want || rec.ID() != "337afedd5bd5f2c9fd9dd57a6bccb20f6c5f70f2da0daa88107836fc43615f1e" {
		t.Fatalf("line\n%s\nwant\n%s\nid %s", line, want, rec.ID())
	}
	t.Logf("seed %x\nline %s\nid %s", redactSeed, line, rec.ID())
	back, err := redaction.Parse(rec.Line())
	if err != nil || back.Verify() != nil || back.ID() != rec.ID() {
		t.Fatalf("parse: %v", err)
	}
	// Only value content: a dag-cbor block is refused.
	bad := *rec
	bad.Blocks = []objects.CID{c}
	if err := bad.Sign(redactKey()); !errors.Is(err, redaction.ErrMalformed) {
		t.Fatalf("a tree node as a block: %v", err)
	}
	if _, err := redaction.Parse([]byte(strings.Replace(line, `"v":1,`, `"v":1, `, 1))); !errors.Is(err, redaction.ErrMalformed) {
		t.Fatalf("non-canonical: %v", err)
	}
}

func redactKillChild(dir string) {
	ctx := context.Background()
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	repo.SetRedactHook(func(step string) {
		if step == "recorded" {
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				p.Kill() // SIGKILL on Unix
			}
		}
	})
	at, _ := objects.ParseCID(os.Getenv("AGENTSTATE_REDACT_AT"))
	_, err = r.Redact(ctx, repo.RedactRequest{Agent: "a", Key: "k.md", At: at, Reason: "x"}, redactKey())
	fmt.Fprintln(os.Stderr, "redaction finished without being killed:", err)
	os.Exit(1)
}

// TestRedactKilled: a process killed between writing the record and
// deleting the blocks leaves a store that verifies clean; gc finishes.
func TestRedactKilled(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c1 := putCommit(t, r, "a", "k.md", []byte("secret\n"))
	putCommit(t, r, "a", "k.md", []byte("later\n"))
	secret := valueAt(t, r, c1, "k.md")
	r.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "AGENTSTATE_REDACT_KILL_STORE="+dir, "AGENTSTATE_REDACT_AT="+c1.String())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v\n%s", err, out)
	}
	r, err = repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if ok, _ := r.Blocks.Has(ctx, secret); !ok {
		t.Fatal("the kill came after the deletion: the test proved nothing")
	}
	mustVerify(t, r)
	if ris, _ := r.Redactions(ctx, "a"); len(ris) != 1 || ris[0].Problem != "" {
		t.Fatalf("records: %+v", ris)
	}
	if _, err := r.GC(ctx, false); err != nil {
		t.Fatal(err)
	}
	if ok, _ := r.Blocks.Has(ctx, secret); ok {
		t.Fatal("gc left the redacted block")
	}
	mustVerify(t, r)
}

// TestRedactTravels: a transfer carries the records; a receiver that does
// not trust the signer refuses the history; one that does takes it without
// the redacted blocks and removes its own copies of them.
func TestRedactTravels(t *testing.T) {
	ctx := context.Background()
	src, _ := newStore(t)
	c1 := putCommit(t, src, "a", "k.md", []byte("secret\n"))
	putCommit(t, src, "a", "k.md", []byte("later\n"))
	secret := valueAt(t, src, c1, "k.md")

	// A store that cloned before the redaction holds the secret.
	early, _ := newStore(t)
	pub := repo.KeyHex(redactKey().Public().(ed25519.PublicKey))
	if _, err := early.Transfer(ctx, src, "a", "a", false, "clone", "src"); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Redact(ctx, repo.RedactRequest{Agent: "a", Key: "k.md", At: c1, Reason: "x"}, redactKey()); err != nil {
		t.Fatal(err)
	}
	putCommit(t, src, "a", "k.md", []byte("after\n"))

	// Not trusted: refused, nothing moves.
	dst, _ := newStore(t)
	if _, err := dst.Transfer(ctx, src, "a", "a", false, "clone", "src"); !errors.Is(err, repo.ErrUntrustedRedaction) {
		t.Fatalf("untrusted: %v", err)
	}
	if _, err := dst.Refs.Head(ctx, "a"); err == nil {
		t.Fatal("HEAD moved on a refused transfer")
	}
	for _, r := range []*repo.Repo{dst, early} {
		if _, err := r.ApplyKeyOp(ctx, repo.KeyOp{Op: repo.KeyOpTrust, Agent: "a", Keys: []string{pub}}); err != nil {
			t.Fatal(err)
		}
		tr, err := r.Transfer(ctx, src, "a", "a", false, "pull", "src")
		if err != nil {
			t.Fatal(err)
		}
		if tr.Redactions.Added != 1 {
			t.Fatalf("records taken: %+v", tr.Redactions)
		}
		if ok, _ := r.Blocks.Has(ctx, secret); ok {
			t.Fatal("the receiver holds the redacted block")
		}
		mustVerify(t, r)
		if _, err := r.GC(ctx, false); err != nil {
			t.Fatal(err)
		}
		mustVerify(t, r)
	}
	// A forged record on the way: refused.
	forger, _ := newStore(t)
	if _, err := forger.Transfer(ctx, src, "a", "a", false, "clone", "src"); err == nil {
		t.Fatal("untrusted clone taken")
	}
	ris, _ := src.Redactions(ctx, "a")
	line := bytes.Replace(ris[0].Record.Line(), []byte(`"reason":"x"`), []byte(`"reason":"y"`), 1)
	if _, err := forger.JudgeRedactions(ctx, [][]byte{line}); !errors.Is(err, repo.ErrBadRedaction) {
		t.Fatalf("forged record: %v", err)
	}
}
