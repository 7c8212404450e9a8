package repo_test

import (
	"context"
	"fmt"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
)

// A repository over in-memory storage, built from public packages alone:
// commit, fork, undo, and a writer that lands on a HEAD that moved under it
// (a three-way merge).
func Example() {
	ctx := context.Background()
	r := repo.New(memory.New())
	r.Now = func() int64 { return 1700000000 }

	put := func(agent, key, value string) objects.CID {
		v, blocks := objects.NewFileValue([]byte(value))
		id, err := r.Edit(ctx, repo.EditRequest{Agent: agent, Message: "put " + key, Create: true, Blocks: blocks,
			Edit: func(ctx context.Context, t *objects.Tree) (bool, error) { return t.Put(ctx, key, v) }})
		if err != nil {
			panic(err)
		}
		return id
	}
	keys := func(commit objects.CID) []string {
		t, err := r.Tree(ctx, commit)
		if err != nil {
			panic(err)
		}
		var out []string
		for e, err := range t.Entries(ctx, "") {
			if err != nil {
				panic(err)
			}
			v, _ := objects.ReadValue(ctx, r.Blocks, e.Value)
			out = append(out, e.Key+"="+string(v))
		}
		return out
	}
	head := func(agent string) objects.CID {
		h, err := r.Refs.Head(ctx, agent)
		if err != nil {
			panic(err)
		}
		return h.Commit
	}

	put("lumen", "system.md", "be kind")
	seed := put("lumen", "skills/a.md", "v1")

	// Fork: a second lineage at the same commit, O(1).
	if _, err := r.Fork(ctx, "lumen", seed, "nova"); err != nil {
		panic(err)
	}
	put("nova", "skills/a.md", "v2 (nova)")
	fmt.Println("nova:", keys(head("nova")))

	// Undo steps HEAD back along the operation log.
	u, err := r.Undo(ctx, "nova")
	if err != nil {
		panic(err)
	}
	fmt.Println("undid", u.Target.Op, "-> nova:", keys(head("nova")))

	// A writer starts at lumen's HEAD and commits on its own...
	startTree := must(r.Commit(ctx, seed)).Tree
	t := must(objects.LoadTree(ctx, r.Blocks, startTree))
	v, blocks := objects.NewFileValue([]byte("remember me"))
	must(t.Put(ctx, "MEMORY.md", v))
	root, nodes := t.Flush()
	mine, _, err := r.WriteCommit(ctx, repo.CommitSpec{Tree: root, Parents: []objects.CID{seed}, Message: "task", Blocks: append(blocks, nodes...)})
	if err != nil {
		panic(err)
	}
	// ...while another write lands on lumen...
	put("lumen", "USER.md", "alice")
	// ...so landing merges the two (different keys: no conflict).
	l, err := r.Land(ctx, repo.LandRequest{Agent: "lumen", Start: seed, StartTree: startTree, Last: mine, LastTree: root, MergeMessage: "merge task"})
	if err != nil {
		panic(err)
	}
	c := must(r.Commit(ctx, l.Commit))
	fmt.Println("merged:", l.Merged, "parents:", len(c.Parents))
	fmt.Println("lumen:", keys(l.Commit))

	// Output:
	// nova: [skills/a.md=v2 (nova) system.md=be kind]
	// undid commit -> nova: [skills/a.md=v1 system.md=be kind]
	// merged: true parents: 2
	// lumen: [MEMORY.md=remember me USER.md=alice skills/a.md=v1 system.md=be kind]
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
