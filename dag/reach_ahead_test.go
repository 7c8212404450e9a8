package dag_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/memstore"
	"github.com/agentstate/agentstate/objects/objectstest"
)

// A walk that decodes the nodes ahead on every core (verify's) reaches the
// same blocks and reports the same problems as the walk node by node (the
// order of its batches may list them in another order), over the trees a hostile sender offers: each is found.
func TestWalkAheadFindsWhatTheWalkFinds(t *testing.T) {
	ctx := context.Background()
	for name, h := range map[string]objectstest.Hostile{
		"deep chain":                objectstest.DeepChain(1000),
		"empty root with a subtree": objectstest.EmptyRootWithSubtree(),
		"key at the wrong layer":    objectstest.MisplacedLayer(),
		"key outside its range":     objectstest.MisplacedRange(),
		"nested chunk lists":        objectstest.NestedChunks(objects.MaxChunkDepth + 1),
	} {
		t.Run(name, func(t *testing.T) {
			bs := memstore.New()
			if err := bs.Put(ctx, h.Blocks...); err != nil {
				t.Fatal(err)
			}
			commit := []objects.CID{h.Blocks[len(h.Blocks)-1].CID}
			walk := func(ahead bool) (dag.Reach, []string) {
				reach, problems, err := dag.Walk(ctx, bs, commit, dag.WalkOptions{VerifyValues: true, Ahead: ahead})
				if err != nil {
					t.Fatal(err)
				}
				var ps []string
				for _, p := range problems {
					ps = append(ps, fmt.Sprint(p))
				}
				slices.Sort(ps)
				return reach, ps
			}
			r1, p1 := walk(false)
			r2, p2 := walk(true)
			if len(p1) == 0 {
				t.Fatal("the walk found nothing wrong")
			}
			if !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(r1, r2) {
				t.Fatalf("node by node: %d blocks, %q\nahead: %d blocks, %q", len(r1), p1, len(r2), p2)
			}
		})
	}
}

// The same over a larger history (batches of nodes decoded on every core)
// whose store lost two tree nodes to rot.
func TestWalkAheadOverALargeDamagedHistory(t *testing.T) {
	ctx := context.Background()
	ms := memory.New()
	r := repo.New(ms)
	var commits []objects.CID
	tr := objects.NewTree(r.Blocks)
	for i := range 4 {
		for k := range 1500 {
			v := objects.NewValue(fmt.Appendf(nil, "value %d of %d", k, i))
			if err := r.Blocks.Put(ctx, v); err != nil {
				t.Fatal(err)
			}
			if _, err := tr.Put(ctx, fmt.Sprintf("d%d/k%d", k%7, k*(i+1)), v.CID); err != nil {
				t.Fatal(err)
			}
		}
		root, err := tr.Commit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c, _, err := r.CommitTree(ctx, repo.CommitRequest{Agent: "a", Tree: root, Message: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		commits = append(commits, c)
	}
	var nodes []objects.CID
	if _, _, err := dag.Walk(ctx, r.Blocks, commits[3:], dag.WalkOptions{Visit: func(c objects.CID, data []byte) error {
		if _, err := objects.DecodeTreeNode(data); err == nil && c.Codec() == objects.CodecDagCBOR {
			nodes = append(nodes, c)
		}
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	if len(nodes) < 100 {
		t.Fatalf("%d tree nodes", len(nodes))
	}
	ms.Corrupt(nodes[3], []byte("rot"))
	ms.Corrupt(nodes[len(nodes)/2], []byte("rot"))
	walk := func(ahead bool) (dag.Reach, []string) {
		reach, problems, err := dag.Walk(ctx, r.Blocks, commits[3:], dag.WalkOptions{VerifyValues: true, Ahead: ahead})
		if err != nil {
			t.Fatal(err)
		}
		var ps []string
		for _, p := range problems {
			ps = append(ps, fmt.Sprint(p))
		}
		slices.Sort(ps)
		return reach, ps
	}
	r1, p1 := walk(false)
	r2, p2 := walk(true)
	if len(p1) != 2 {
		t.Fatalf("two rotten nodes, problems %q", p1)
	}
	if !reflect.DeepEqual(p1, p2) || !reflect.DeepEqual(r1, r2) {
		t.Fatalf("node by node: %d blocks, %q\nahead: %d blocks, %q", len(r1), p1, len(r2), p2)
	}
}
