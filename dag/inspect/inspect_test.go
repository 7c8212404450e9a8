package inspect_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/runtime"
)

func put(kv ...string) func(context.Context, *runtime.Tx) error {
	return func(ctx context.Context, tx *runtime.Tx) error {
		for i := 0; i+1 < len(kv); i += 2 {
			if err := tx.Put(ctx, kv[i], []byte(kv[i+1])); err != nil {
				return err
			}
		}
		return nil
	}
}

// fixture lands tasks through a runtime (receipts, a merge of two tasks
// that ran at once, an undo), then opens the store for a View.
func fixture(t *testing.T) (*inspect.View, map[string]objects.CID) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]objects.CID{}
	land := func(name string, fn func(context.Context, *runtime.Tx) error) {
		rc, err := rt.RunTask(ctx, "lumen", runtime.Task{ID: name, Model: "m-1"}, fn)
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = rc.Commit
	}
	land("base", put("notes.md", "one\ntwo\nthree\n", "bin", "\x00\x01\x02"))
	// Two tasks at once on disjoint keys: the slow one lands as a merge.
	in, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		land("slow", func(ctx context.Context, tx *runtime.Tx) error {
			if err := tx.Put(ctx, "skills/a.md", []byte("<script>alert(1)</script>\n")); err != nil {
				return err
			}
			close(in)
			<-release
			return nil
		})
	}()
	<-in
	land("fast", put("notes.md", "one\nTWO\nthree\n"))
	close(release)
	wg.Wait()
	land("later", put("tmp", "x"))
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if _, err := r.Undo(ctx, "lumen"); err != nil {
		t.Fatal(err)
	}
	return inspect.New(r), ids
}

func TestReads(t *testing.T) {
	ctx := context.Background()
	v, ids := fixture(t)

	agents, err := v.Agents(ctx)
	if err != nil || len(agents) != 1 || agents[0].Name != "lumen" || agents[0].Head != ids["slow"] {
		t.Fatalf("agents %+v %v", agents, err)
	}

	hist, err := v.Log(ctx, "lumen", inspect.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	log := hist.Commits
	if log[0].CID != ids["slow"] || len(log[0].Parents) != 2 || log[0].Parents[0] != ids["fast"] {
		t.Fatalf("log head %+v, want the merge of slow onto fast", log[0])
	}
	// The merge, fast's commit, slow's task commit, base's two (one a put).
	if len(log) != 5 || len(log[4].Parents) != 0 {
		t.Fatalf("log %+v", log)
	}
	pos := map[objects.CID]int{}
	for i, c := range log {
		pos[c.CID] = i
	}
	for i, c := range log {
		for _, p := range c.Parents {
			if pos[p] <= i {
				t.Fatalf("log shows %s (parent of %s) before it", p.Short(), c.CID.Short())
			}
		}
	}
	notesHist, err := v.Log(ctx, "lumen", inspect.LogOptions{Path: "notes.md"})
	onlyNotes := notesHist.Commits
	if err != nil || len(onlyNotes) != 2 || onlyNotes[0].CID != ids["fast"] {
		t.Fatalf("log --path notes.md: %+v %v", onlyNotes, err)
	}

	shown, err := v.Show(ctx, "lumen", "HEAD~1", true)
	c, changes := shown.Commit, shown.Changes
	if err != nil || c.CID != ids["fast"] || c.Metadata["model"] != "m-1" {
		t.Fatalf("show HEAD~1 %+v %v", c, err)
	}
	if len(changes) != 1 || changes[0].Path != "notes.md" || !strings.Contains(changes[0].Patch, "-two\n+TWO\n") {
		t.Fatalf("show changes %+v", changes)
	}

	diff, err := v.Diff(ctx, "lumen", ids["base"].String(), "HEAD", true)
	if err != nil {
		t.Fatal(err)
	}
	if len(diff) != 2 || diff[0].Path != "notes.md" || diff[1].Path != "skills/a.md" || diff[1].Change != objects.Added ||
		!strings.Contains(diff[1].Patch, "+<script>alert(1)</script>") {
		t.Fatalf("diff %+v", diff)
	}
	bin, err := v.Diff(ctx, "lumen", "HEAD", ids["later"].String(), true)
	if err != nil || len(bin) != 1 || bin[0].Path != "tmp" {
		t.Fatalf("diff to the undone commit %+v %v", bin, err)
	}

	val, err := v.Get(ctx, "lumen", "HEAD", "bin", 1<<10)
	if err != nil || val.Text || val.Size != 3 || string(val.Data) != "\x00\x01\x02" {
		t.Fatalf("get bin %+v %v", val, err)
	}
	val, err = v.Get(ctx, "lumen", "HEAD", "notes.md", 4)
	if err != nil || !val.Truncated || val.Data != nil || val.Size != 14 {
		t.Fatalf("get over the cap %+v %v", val, err)
	}

	keys, more, err := v.List(ctx, "lumen", "HEAD", "", 2)
	if err != nil || !more || len(keys) != 2 || keys[0].Key != "bin" || keys[1].Key != "notes.md" || keys[1].Size != 14 {
		t.Fatalf("list %+v %v %v", keys, more, err)
	}

	ops, err := v.Oplog(ctx, "lumen", 0)
	if err != nil {
		t.Fatal(err)
	}
	if ops[0].Op != "undo" || ops[0].Undone || !ops[1].Undone || ops[1].New != ids["later"] {
		t.Fatalf("oplog %+v", ops[:2])
	}
	for _, op := range ops[2:] {
		if op.Undone {
			t.Fatalf("operation %d marked undone", op.Seq)
		}
	}

	rcs, err := v.Receipts(ctx, "lumen", true)
	if err != nil || len(rcs) != 4 {
		t.Fatalf("receipts %d %v", len(rcs), err)
	}
	for _, rc := range rcs {
		if rc.Verified == nil || !*rc.Verified {
			t.Fatalf("receipt %d: %+v", rc.N, rc)
		}
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	v, _ := fixture(t)
	for name, err := range map[string]error{
		"unknown agent": func() error { _, err := v.Log(ctx, "nobody", inspect.LogOptions{}); return err }(),
		"unknown rev":   func() error { _, err := v.Show(ctx, "lumen", "bafyreiaaaaaaaaaaaaaaaaa", false); return err }(),
		"too far back":  func() error { _, err := v.Show(ctx, "lumen", "HEAD~99", false); return err }(),
		"unknown key":   func() error { _, err := v.Get(ctx, "lumen", "HEAD", "nope", 10); return err }(),
		"rm missing":    func() error { _, err := v.Delete(ctx, "lumen", "nope", inspect.WriteOptions{}); return err }(),
	} {
		if !errors.Is(err, inspect.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", name, err)
		}
	}
	for name, err := range map[string]error{
		"bad agent": func() error { _, err := v.Log(ctx, "../x", inspect.LogOptions{}); return err }(),
		"bad rev":   func() error { _, err := v.Show(ctx, "lumen", "HEAD~~x", false); return err }(),
		"bad key":   func() error { _, err := v.Get(ctx, "lumen", "HEAD", "../etc", 10); return err }(),
		"bad put":   func() error { _, err := v.Put(ctx, "lumen", "a//b", nil, inspect.WriteOptions{}); return err }(),
		"fork onto": func() error { _, err := v.Fork(ctx, "lumen", "HEAD", "lumen"); return err }(),
	} {
		if !errors.Is(err, inspect.ErrBadRequest) {
			t.Errorf("%s: %v, want ErrBadRequest", name, err)
		}
	}
}

func TestWrites(t *testing.T) {
	ctx := context.Background()
	v, ids := fixture(t)
	meta := map[string]string{"source": "mcp"}
	id, err := v.Put(ctx, "lumen", "k", []byte("v"), inspect.WriteOptions{Message: "mcp: put k", Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	shown, err := v.Show(ctx, "lumen", "HEAD", false)
	c := shown.Commit
	if err != nil || c.CID != id || c.Message != "mcp: put k" || c.Metadata["source"] != "mcp" || c.Parents[0] != ids["slow"] {
		t.Fatalf("after put: %+v %v", c, err)
	}
	if _, err := v.Put(ctx, "lumen", "k", []byte("v"), inspect.WriteOptions{}); !errors.Is(err, inspect.ErrNoChange) {
		t.Fatalf("same value again: %v", err)
	}
	if _, err := v.Delete(ctx, "lumen", "k", inspect.WriteOptions{Message: "mcp: delete k"}); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Get(ctx, "lumen", "HEAD", "k", 10); !errors.Is(err, inspect.ErrNotFound) {
		t.Fatalf("deleted key: %v", err)
	}
	u, err := v.Undo(ctx, "lumen")
	if err != nil || u.Entry.New != id {
		t.Fatalf("undo: %+v %v", u, err)
	}
	if _, err := v.Fork(ctx, "lumen", ids["base"].String(), "lumen-2"); err != nil {
		t.Fatal(err)
	}
	agents, _ := v.Agents(ctx)
	if len(agents) != 2 || agents[1].Name != "lumen-2" || agents[1].Head != ids["base"] {
		t.Fatalf("after fork: %+v", agents)
	}
}
