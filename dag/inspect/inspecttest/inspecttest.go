// Package inspecttest builds the store states the windows' tests read
// (dag/inspect, internal/mcpserver, internal/webui): a history a
// forget cut, a fork that still reaches the cut commits, a fork made on the
// cut history, and an agent with no commits.
package inspecttest

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/runtime"
)

// Cut is a store whose agent A had six commits ("step 1" … "step 6", each
// writing memory.md, each a runtime task with a signed receipt) and was
// then forgotten with --keep-last 2, step 2 tagged "keep-me":
//
//   - A's log is step 6, step 5 (cut: step 4), step 2 (cut: step 1, an
//     island the tag kept);
//   - Fork (forked at step 3 before the forget) still reaches steps 1–3,
//     which the store therefore keeps, but step 4 is gone: A's HEAD~2 and
//     beyond name nothing;
//   - Late (forked at step 5 after the forget) walks into the gone step 4
//     and ends there, cut, with no forget of its own;
//   - Empty is a valid agent name with no commits.
type Cut struct {
	R     *repo.Repo
	Steps []objects.CID // step 1 … step 6
}

// Agent names of a Cut store.
const (
	A     = "lumen"
	Fork  = "old-lumen"
	Late  = "late-lumen"
	Empty = "nobody-yet"
)

// NewCut builds a Cut store in a temporary directory; it is closed when
// the test ends. It sets SOURCE_DATE_EPOCH for the test (the steps are an
// hour apart).
func NewCut(t testing.TB) *Cut {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	seed := sha256.Sum256([]byte("operator"))
	rt, err := runtime.Open(ctx, runtime.Options{Store: dir, Signer: ed25519.NewKeyFromSeed(seed[:]), NoServe: true})
	if err != nil {
		t.Fatal(err)
	}
	c := &Cut{}
	for i := 1; i <= 6; i++ {
		t.Setenv("SOURCE_DATE_EPOCH", fmt.Sprint(1_700_000_000+3600*i)) // one an hour
		rc, err := rt.RunTask(ctx, A, runtime.Task{ID: fmt.Sprintf("step-%d", i)}, func(ctx context.Context, tx *runtime.Tx) error {
			return tx.Put(ctx, "memory.md", fmt.Appendf(nil, "step %d\n", i))
		})
		if err != nil {
			t.Fatal(err)
		}
		c.Steps = append(c.Steps, rc.Commit)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	c.R = r
	t.Setenv("SOURCE_DATE_EPOCH", fmt.Sprint(1_700_000_000+3600*7))
	if _, err := r.Fork(ctx, A, c.Steps[2], Fork); err != nil {
		t.Fatal(err)
	}
	if err := r.SetTag(ctx, A, "keep-me", c.Steps[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Forget(ctx, A, repo.Policy{Last: 2}, false); err != nil {
		t.Fatal(err)
	}
	if has, err := r.Blocks.Has(ctx, c.Steps[3]); err != nil || has {
		t.Fatalf("step 4 still in the store after the forget (%v)", err)
	}
	if _, err := r.Fork(ctx, A, c.Steps[4], Late); err != nil {
		t.Fatal(err)
	}
	return c
}
