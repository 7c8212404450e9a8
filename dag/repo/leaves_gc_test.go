package repo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
)

// A tree whose leaf set is cached and that a forget then deletes (a page
// showed an old commit; a retention policy collected it) does not break
// the bundle hash of the next tree: the shortcut through the cached set
// is skipped, not failed.
func TestBundleHashAfterCachedTreeCollected(t *testing.T) {
	owners(t, func(t *testing.T, r *repo.Repo) {
		ctx := context.Background()
		first := mustPut(t, r, "a", "memory.md", "state 0")
		for i := 1; i <= 4; i++ {
			mustPut(t, r, "a", "memory.md", fmt.Sprintf("state %d", i))
		}
		old, err := r.Commit(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.BundleHash(ctx, old.Tree); err != nil { // the newest set cached
			t.Fatal(err)
		}
		if _, err := r.Forget(ctx, "a", repo.Policy{Last: 1}, false); err != nil {
			t.Fatal(err)
		}
		if has, _ := r.Blocks.Has(ctx, old.Tree); has {
			t.Fatal("the old tree survived the forget")
		}
		c := mustPut(t, r, "a", "memory.md", "after the forget")
		if _, err := r.CommitBundleHash(ctx, c); err != nil {
			t.Fatalf("bundle hash after a cached tree was collected: %v", err)
		}
	})
}
