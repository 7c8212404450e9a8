package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
)

// A task record that is not what its receipt and commits give changes no
// listing of tasks... once repaired: verify names it and says verify
// --repair rebuilds the caches, which then verify clean, and log --tasks
// prints what it printed before.
func TestVerifyRepairRebuildsTaskRecords(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if code := tasksFixture([]string{dir, "lumen"}); code != 0 {
		t.Fatalf("agentstate-tasks: exit %d", code)
	}
	_, before, _ := runCLI(t, "--store", dir, "--agent", "lumen", "log", "--tasks")
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, ok, err := r.Storage.GetMeta(ctx, repo.TaskRecordName("lumen", 1))
	if err != nil || !ok {
		t.Fatalf("no record of line 1: %v", err)
	}
	if err := r.Storage.SetMeta(ctx, repo.TaskRecordName("lumen", 2), first); err != nil {
		t.Fatal(err)
	}
	r.Close()
	code, out, errs := runCLI(t, "--store", dir, "verify")
	if code == 0 || strings.Count(out, "problem: ") != 1 || !strings.Contains(out, `problem: task records: agent "lumen", line 2: the record says task`) ||
		!strings.Contains(errs, "all in caches (the commit graph, the task records, the list size records)") {
		t.Fatalf("verify of a wrong task record: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCLI(t, "--store", dir, "verify", "--repair")
	if code != 0 || !strings.Contains(out, "rebuilt the task records: 6 tape lines") || !strings.Contains(out, "rebuilt the list size records: ") {
		t.Fatalf("verify --repair: exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "--store", dir, "verify"); code != 0 {
		t.Fatalf("verify after repair: exit %d\n%s\n%s", code, out, errs)
	}
	if code, after, _ := runCLI(t, "--store", dir, "--agent", "lumen", "log", "--tasks"); code != 0 || after != before || strings.Count(after, "\ntask ") != 5 {
		t.Fatalf("log --tasks after repair (exit %d):\n%s\nwant\n%s", code, after, before)
	}
}
