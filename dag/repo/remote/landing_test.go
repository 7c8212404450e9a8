package remote_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/objects/objectstest"
	"github.com/agentstate/agentstate/refs"
)

// tcpClient is a client of srv's TCP listener presenting token.
func tcpClient(t *testing.T, srv *remote.Server, token string) *remote.Client {
	t.Helper()
	c, err := remote.Dial(context.Background(), tcpAddr(t, srv), remote.DialOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// onTop returns h's blocks with its commit replaced by one of the same
// tree whose parent is parent (none: zero).
func onTop(t *testing.T, h objectstest.Hostile, parent objects.CID, msg string) (objects.CID, []objects.Block) {
	t.Helper()
	blocks := h.Blocks[:len(h.Blocks)-1]
	cm, err := objects.DecodeCommit(h.Blocks[len(h.Blocks)-1].Data)
	if err != nil {
		t.Fatal(err)
	}
	c := &objects.Commit{Tree: cm.Tree, Time: 1_700_000_000, Message: msg}
	if !parent.IsZero() {
		c.Parents = []objects.CID{parent}
	}
	b, err := c.Block()
	if err != nil {
		t.Fatal(err)
	}
	return b.CID, append(append([]objects.Block(nil), blocks...), b)
}

// A client with a read-write token uploads, with raw block puts, a commit
// whose tree the reader refuses and asks to move HEAD onto it (or onto a
// sound commit above it): the server refuses the move (repo.ErrBadLanding),
// HEAD stays where it was and the store verifies clean. Sound moves land.
func TestServedHeadMoveChecksTree(t *testing.T) {
	ctx := context.Background()
	const rw = "rw-token-landing-0123456789"
	local, srv, _ := startServed(t, remote.Options{Listen: "127.0.0.1:0", Tokens: []string{rw}})
	for i := range 40 {
		putKey(t, local, "lumen", string(rune('a'+i%26))+string(rune('0'+i/26)), "v")
	}
	c := tcpClient(t, srv, rw)
	cr := repo.New(c)
	move := func(old, to objects.CID, blocks []objects.Block) error {
		if err := c.Put(ctx, blocks...); err != nil {
			t.Fatal(err)
		}
		_, err := cr.Refs.Move(ctx, refs.Move{Agent: "lumen", Old: old, New: to, Op: refs.OpCommit, Time: 1})
		return err
	}
	for _, h := range []objectstest.Hostile{
		objectstest.MisplacedRange(), objectstest.MisplacedLayer(), objectstest.EmptyRootWithSubtree(),
		objectstest.NestedChunks(objects.MaxChunkDepth + 2), objectstest.DeepChain(400),
	} {
		before, _, err := local.Storage.HeadRecord(ctx, "lumen")
		if err != nil {
			t.Fatal(err)
		}
		head, err := local.Refs.Head(ctx, "lumen")
		if err != nil {
			t.Fatal(err)
		}
		bad, blocks := onTop(t, h, head.Commit, "bad")
		err = move(head.Commit, bad, blocks)
		if !errors.Is(err, repo.ErrBadLanding) {
			t.Errorf("%s: HEAD move onto it: %v, want ErrBadLanding", h.Blocks[len(h.Blocks)-1].CID, err)
		}
		// A sound commit above the refused one brings it in: refused too.
		hc, err := local.Commit(ctx, head.Commit)
		if err != nil {
			t.Fatal(err)
		}
		above, err := (&objects.Commit{Tree: hc.Tree, Parents: []objects.CID{bad}, Time: 1_700_000_001, Message: "above"}).Block()
		if err != nil {
			t.Fatal(err)
		}
		if err := move(head.Commit, above.CID, []objects.Block{above}); !errors.Is(err, repo.ErrBadLanding) {
			t.Errorf("HEAD move onto a sound commit above a refused one: %v, want ErrBadLanding", err)
		}
		after, _, err := local.Storage.HeadRecord(ctx, "lumen")
		if err != nil || !bytes.Equal(before, after) {
			t.Fatalf("HEAD record changed: %s -> %s (%v)", before, after, err)
		}
		verifyClean(t, local)
		if kv := treeOf(t, local, "lumen"); kv["a0"] != "v" {
			t.Fatalf("HEAD's tree after the refusal: %v", kv)
		}
	}
	// Sound moves land: an edit through the client, and a new agent whose
	// history is the client's own.
	if _, err := cr.Edit(ctx, repo.EditRequest{Agent: "lumen", Message: "sound", Blocks: []objects.Block{objects.NewValue([]byte("w"))},
		Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) {
			return tr.Put(ctx, "zz", objects.NewValue([]byte("w")).CID)
		}}); err != nil {
		t.Fatalf("a sound edit through the client: %v", err)
	}
	if _, err := cr.Edit(ctx, repo.EditRequest{Agent: "fresh", Create: true, Message: "new", Blocks: []objects.Block{objects.NewValue([]byte("n"))},
		Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) {
			return tr.Put(ctx, "n", objects.NewValue([]byte("n")).CID)
		}}); err != nil {
		t.Fatalf("a new agent through the client: %v", err)
	}
	verifyClean(t, local)
}
