package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// A damaged commit-graph record changes no log; verify names it and says
// that verify --repair rebuilds the graph, which then verifies clean.
func TestVerifyRepairRebuildsTheCommitGraph(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "store")
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		v := objects.NewValue([]byte(fmt.Sprint(i)))
		if _, err := r.Edit(ctx, repo.EditRequest{Agent: "a", Create: true, Message: fmt.Sprint("put ", i), Blocks: []objects.Block{v},
			Edit: func(ctx context.Context, t *objects.Tree) (bool, error) { return t.Put(ctx, "k", v.CID) }}); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	_, before, _ := runCLI(t, "--store", dir, "--agent", "a", "log", "--oneline")
	if r, err = repo.Open(dir, repo.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{3, 17} {
		if err := r.Storage.SetMeta(ctx, dag.GraphRecordName(seq), []byte("not a record")); err != nil {
			t.Fatal(err)
		}
	}
	r.Close()
	if code, after, _ := runCLI(t, "--store", dir, "--agent", "a", "log", "--oneline"); code != 0 || after != before || strings.Count(after, "\n") != 30 {
		t.Fatalf("log over a damaged graph (exit %d):\n%s\nwant\n%s", code, after, before)
	}
	code, out, errs := runCLI(t, "--store", dir, "verify")
	if code == 0 || strings.Count(out, "problem: ") != 2 || !strings.Contains(out, "record 3: bad commit-graph record") ||
		!strings.Contains(out, "record 17: bad commit-graph record") || !strings.Contains(errs, "verify --repair rebuilds it") {
		t.Fatalf("verify of a damaged graph: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "--store", dir, "verify", "--repair")
	if code != 0 || !strings.Contains(out, "rebuilt the commit graph: 30 commits") || !strings.Contains(out, "ok: 1 agents, 30 commits") {
		t.Fatalf("verify --repair: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--store", dir, "verify"); code != 0 {
		t.Fatalf("verify after repair: exit %d\n%s\n%s", code, out, errs)
	}
}
