package remote_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

// commitOn writes (without moving HEAD) a commit of parent's tree with
// key=val, through r, and returns it with its tree and time.
func commitOn(t testing.TB, r *repo.Repo, parent objects.CID, key, val string) (objects.CID, objects.CID, int64) {
	t.Helper()
	id, root, tm, err := writeOn(r, parent, key, val)
	if err != nil {
		t.Fatal(err)
	}
	return id, root, tm
}

// writeOn is commitOn for goroutines: it returns its error.
func writeOn(r *repo.Repo, parent objects.CID, key, val string) (objects.CID, objects.CID, int64, error) {
	ctx := context.Background()
	var tr *objects.Tree
	var parents []objects.CID
	if parent.IsZero() {
		tr = objects.NewTree(r.Blocks)
	} else {
		var err error
		if tr, err = r.Tree(ctx, parent); err != nil {
			return objects.CID{}, objects.CID{}, 0, err
		}
		parents = []objects.CID{parent}
	}
	v := objects.NewValue([]byte(val))
	if _, err := tr.Put(ctx, key, v.CID); err != nil {
		return objects.CID{}, objects.CID{}, 0, err
	}
	root, nodes := tr.Flush()
	id, c, err := r.WriteCommit(ctx, repo.CommitSpec{Tree: root, Parents: parents, Message: key + "=" + val, Blocks: append(nodes, v)})
	if err != nil {
		return objects.CID{}, objects.CID{}, 0, err
	}
	return id, root, c.Time, nil
}

func opsOf(t testing.TB, r *repo.Repo, agent string) []refs.Op {
	t.Helper()
	es, err := r.Refs.Entries(context.Background(), agent)
	if err != nil {
		t.Fatal(err)
	}
	var out []refs.Op
	for _, e := range es {
		out = append(out, e.Op)
	}
	return out
}

func headIs(t testing.TB, r *repo.Repo, agent string, want objects.CID) {
	t.Helper()
	h, err := r.Refs.Head(context.Background(), agent)
	if err != nil || h.Commit != want {
		t.Fatalf("HEAD of %s = %s (%v), want %s", agent, h.Commit, err, want)
	}
}

// Every write of the repository's one writer (owner.go), made through a
// client, is what the server's own repository reads back, and what the
// client reads back; both verify clean.
func TestOwnerThroughServer(t *testing.T) {
	ctx := context.Background()
	local, _, c := startServed(t, remote.Options{})
	rr := repo.New(c)

	c1 := putKey(t, rr, "lumen", "a", "1")
	c2 := putKey(t, rr, "lumen", "b", "2")
	headIs(t, local, "lumen", c2)
	if got := treeOf(t, local, "lumen"); !maps.Equal(got, map[string]string{"a": "1", "b": "2"}) {
		t.Fatalf("the server reads %v", got)
	}
	// An edit that changes nothing is ErrNoChange with HEAD's CID.
	if id, err := rr.Edit(ctx, repo.EditRequest{Agent: "lumen", Edit: func(context.Context, *objects.Tree) (bool, error) { return false, nil }}); !errors.Is(err, repo.ErrNoChange) || id != c2 {
		t.Fatalf("an empty edit: %s %v", id, err)
	}

	// WriteCommit stores a commit and moves nothing.
	w, wtree, _ := commitOn(t, rr, c2, "w", "x")
	if cm, err := local.Commit(ctx, w); err != nil || cm.Tree != wtree || !slices.Equal(cm.Parents, []objects.CID{c2}) {
		t.Fatalf("the server reads the written commit as %+v, %v", cm, err)
	}
	headIs(t, local, "lumen", c2)

	// CommitTree moves HEAD by compare-and-swap: from the right parent it
	// lands, from a stale one it is a conflict, the same tree is no change.
	c3, e3, err := rr.CommitTree(ctx, repo.CommitRequest{Agent: "lumen", Tree: wtree, Parent: c2, Message: "tree", Task: "t-1"})
	if err != nil || e3.Seq != 3 || e3.Task != "t-1" {
		t.Fatalf("CommitTree: %v %+v", err, e3)
	}
	headIs(t, local, "lumen", c3)
	if _, _, err := rr.CommitTree(ctx, repo.CommitRequest{Agent: "lumen", Tree: wtree, Parent: c1, AllowEmpty: true}); !errors.Is(err, refs.ErrConflict) {
		t.Fatalf("CommitTree from a stale parent: %v, want refs.ErrConflict", err)
	}
	if _, _, err := rr.CommitTree(ctx, repo.CommitRequest{Agent: "lumen", Tree: wtree}); !errors.Is(err, repo.ErrNoChange) {
		t.Fatalf("CommitTree of HEAD's tree: %v, want ErrNoChange", err)
	}

	// Reset, Undo, Redo.
	if _, err := rr.Reset(ctx, "lumen", c1); err != nil {
		t.Fatal(err)
	}
	headIs(t, local, "lumen", c1)
	if _, err := rr.Reset(ctx, "lumen", c1); !errors.Is(err, repo.ErrNoChange) {
		t.Fatalf("reset to HEAD: %v", err)
	}
	u, err := rr.Undo(ctx, "lumen")
	if err != nil || u.Target.Op != refs.OpReset {
		t.Fatalf("undo: %+v %v", u, err)
	}
	headIs(t, local, "lumen", c3)
	if _, err := rr.Redo(ctx, "lumen"); err != nil {
		t.Fatal(err)
	}
	headIs(t, local, "lumen", c1)
	if _, err := rr.Redo(ctx, "lumen"); !errors.Is(err, refs.ErrNothingRedo) {
		t.Fatalf("a second redo: %v", err)
	}
	want := []refs.Op{refs.OpCommit, refs.OpCommit, refs.OpCommit, refs.OpReset, refs.OpUndo, refs.OpRedo}
	if got := opsOf(t, local, "lumen"); !slices.Equal(got, want) {
		t.Fatalf("the server's log: %v, want %v", got, want)
	}

	// Fork: O(1), shares objects; an existing name is refused.
	if _, err := rr.Fork(ctx, "lumen", c2, "nova"); err != nil {
		t.Fatal(err)
	}
	headIs(t, local, "nova", c2)
	if _, err := rr.Fork(ctx, "lumen", c2, "nova"); !errors.Is(err, refs.ErrAgentExists) {
		t.Fatalf("fork onto an existing agent: %v", err)
	}

	// Land: a writer starts at nova's HEAD; the server's own process moves
	// nova meanwhile; the landing merges.
	startTree := mustTree(t, local, c2)
	last, lastTree, lastTime := commitOn(t, rr, c2, "n", "from the client")
	moved := putKey(t, local, "nova", "m", "from the server")
	l, err := rr.Land(ctx, repo.LandRequest{Agent: "nova", Start: c2, StartTree: startTree, Last: last, LastTree: lastTree, LastTime: lastTime, MergeMessage: "merge"})
	if err != nil || !l.Merged || l.From != moved {
		t.Fatalf("Land over a moved HEAD: %+v %v", l, err)
	}
	if cm, _ := local.Commit(ctx, l.Commit); !slices.Equal(cm.Parents, []objects.CID{moved, last}) {
		t.Fatalf("merge parents %v, want [%s %s]", cm.Parents, moved, last)
	}
	if got := treeOf(t, local, "nova"); !maps.Equal(got, map[string]string{"a": "1", "b": "2", "m": "from the server", "n": "from the client"}) {
		t.Fatalf("nova after the merge: %v", got)
	}
	// A landing from HEAD fast-forwards.
	ff, ffTree, ffTime := commitOn(t, rr, l.Commit, "o", "ff")
	if l2, err := rr.Land(ctx, repo.LandRequest{Agent: "nova", Start: l.Commit, StartTree: l.Tree, Last: ff, LastTree: ffTree, LastTime: ffTime}); err != nil || l2.Merged || l2.Commit != ff {
		t.Fatalf("a fast-forward landing: %+v %v", l2, err)
	}
	// Both sides changed a key differently: a conflict, HEAD stays.
	clash, clashTree, clashTime := commitOn(t, rr, l.Commit, "m", "clash")
	if _, err := rr.Land(ctx, repo.LandRequest{Agent: "nova", Start: c2, StartTree: startTree, Last: clash, LastTree: clashTree, LastTime: clashTime}); !errors.Is(err, repo.ErrMergeConflict) {
		t.Fatalf("a conflicting landing: %v", err)
	}
	headIs(t, local, "nova", ff)

	// What the client reads equals what the server reads.
	for _, agent := range []string{"lumen", "nova"} {
		le, err := local.Refs.Entries(ctx, agent)
		if err != nil {
			t.Fatal(err)
		}
		re, err := rr.Refs.Entries(ctx, agent)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(le, re) {
			t.Fatalf("log of %s: the client reads %+v, the server %+v", agent, re, le)
		}
		if !maps.Equal(treeOf(t, rr, agent), treeOf(t, local, agent)) {
			t.Fatalf("tree of %s differs between client and server", agent)
		}
	}
	la, _ := local.Refs.Agents(ctx)
	ra, _ := rr.Refs.Agents(ctx)
	if !reflect.DeepEqual(la, ra) || len(la) != 2 {
		t.Fatalf("agents: client %v, server %v", ra, la)
	}
	// Revisions resolve the same through the client, abbreviations
	// (CIDsWithPrefix) included.
	for _, rev := range []string{"HEAD", "HEAD~1", "HEAD~1^2", "HEAD~2", c2.String(), c2.Short()} {
		lc, lerr := local.Resolve(ctx, "nova", rev)
		rc, rerr := rr.Resolve(ctx, "nova", rev)
		if lerr != nil || rerr != nil || lc != rc {
			t.Fatalf("revision %s: server %s %v, client %s %v", rev, lc, lerr, rc, rerr)
		}
	}
	// The bundle-hash cache written through the client is the server's.
	bh, err := rr.CommitBundleHash(ctx, ff)
	if err != nil {
		t.Fatal(err)
	}
	if lh, err := local.CommitBundleHash(ctx, ff); err != nil || lh != bh {
		t.Fatalf("bundle hash: client %x, server %x %v", bh, lh, err)
	}
	verifyClean(t, local)
	if rep, err := rr.Verify(ctx); err != nil || len(rep.Problems) > 0 || rep.Agents != 2 {
		t.Fatalf("verify through the client: %+v %v", rep, err)
	}
}

func mustTree(t testing.TB, r *repo.Repo, commit objects.CID) objects.CID {
	t.Helper()
	cm, err := r.Commit(context.Background(), commit)
	if err != nil {
		t.Fatal(err)
	}
	return cm.Tree
}

// Several clients and the server's own process land on one agent at once,
// round after round: each writer commits on the HEAD of the round, then all
// land together. The first to swap fast-forwards, every other finds HEAD
// moved and merges onto it (compare-and-swap through the server); no
// landing is lost, and the store verifies clean.
func TestConcurrentLandings(t *testing.T) {
	ctx := context.Background()
	local, _, _ := startServed(t, remote.Options{})
	putKey(t, local, "lumen", "base", "0")
	writers := []*repo.Repo{local}
	for range 3 {
		c, err := remote.Dial(ctx, remote.SocketPath(local.Dir), remote.DialOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		writers = append(writers, repo.New(c))
	}
	const rounds = 6
	for round := range rounds {
		h, err := local.Refs.Head(ctx, "lumen")
		if err != nil {
			t.Fatal(err)
		}
		startTree := mustTree(t, local, h.Commit)
		reqs := make([]repo.LandRequest, len(writers))
		for w, r := range writers {
			last, lastTree, lastTime := commitOn(t, r, h.Commit, fmt.Sprintf("w%d/%d", w, round), "v")
			reqs[w] = repo.LandRequest{Agent: "lumen", Start: h.Commit, StartTree: startTree, Last: last, LastTree: lastTree, LastTime: lastTime, MergeMessage: "merge"}
		}
		var merged, fast atomic.Int32
		var wg sync.WaitGroup
		gun := make(chan struct{})
		for w, r := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gun
				l, err := r.Land(ctx, reqs[w])
				switch {
				case err != nil:
					t.Errorf("round %d, writer %d: %v", round, w, err)
				case l.Merged:
					merged.Add(1)
				default:
					fast.Add(1)
				}
			}()
		}
		close(gun)
		wg.Wait()
		if t.Failed() {
			return
		}
		if fast.Load() != 1 || merged.Load() != int32(len(writers)-1) {
			t.Fatalf("round %d: %d fast-forwards and %d merges, want 1 and %d", round, fast.Load(), merged.Load(), len(writers)-1)
		}
	}
	got := treeOf(t, local, "lumen")
	if len(got) != 1+len(writers)*rounds {
		t.Fatalf("%d keys after %d landings, want %d", len(got), len(writers)*rounds, 1+len(writers)*rounds)
	}
	for w := range writers {
		for i := range rounds {
			if got[fmt.Sprintf("w%d/%d", w, i)] != "v" {
				t.Fatalf("landing %d of writer %d is lost", i, w)
			}
		}
	}
	if h, _ := local.Refs.Head(ctx, "lumen"); h.Seq != uint64(1+len(writers)*rounds) {
		t.Fatalf("%d operations, want %d (one per landing)", h.Seq, 1+len(writers)*rounds)
	}
	verifyClean(t, local)
}

// Well-formed swaps racing from the same HEAD record, from several clients:
// exactly one wins, the others are refs.ErrSwapped (no lost update).
func TestConcurrentSwaps(t *testing.T) {
	ctx := context.Background()
	local, _, _ := startServed(t, remote.Options{})
	putKey(t, local, "lumen", "a", "0")
	var targets []objects.CID
	for i := range 8 {
		targets = append(targets, putKey(t, local, "pool", "k", fmt.Sprint(i))) // commits to move to
	}
	for round := range 5 {
		cur, _, err := local.Storage.HeadRecord(ctx, "lumen")
		if err != nil {
			t.Fatal(err)
		}
		var wins atomic.Int32
		var won atomic.Value
		var wg sync.WaitGroup
		for i, target := range targets {
			c, err := remote.Dial(ctx, remote.SocketPath(local.Dir), remote.DialOptions{})
			if err != nil {
				t.Fatal(err)
			}
			seq, entry, head := nextMove(t, "lumen", cur, target)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				switch err := c.SwapHead(ctx, "lumen", cur, seq, entry, head); {
				case err == nil:
					wins.Add(1)
					won.Store(targets[i])
				case !errors.Is(err, refs.ErrSwapped):
					t.Errorf("round %d: swap %d: %v", round, i, err)
				}
			}()
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d of %d racing swaps won, want 1", round, wins.Load(), len(targets))
		}
		headIs(t, local, "lumen", won.Load().(objects.CID))
	}
	verifyClean(t, local)
}

// WatchHead through a client wakes for every kind of move: one the server's
// process makes, one another client makes (a raw SwapHead included), and a
// new agent's first HEAD.
func TestWatchHeadMoves(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), patience(t))
	defer cancel()
	local, _, c := startServed(t, remote.Options{})
	other, err := remote.Dial(ctx, remote.SocketPath(local.Dir), remote.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	seen := make(chan refs.Head, 16)
	go func() {
		for h, err := range repo.New(c).WatchHead(ctx, "nova") {
			if err != nil {
				return
			}
			seen <- h
		}
	}()
	next := func(what string) refs.Head {
		t.Helper()
		select {
		case h := <-seen:
			return h
		case <-ctx.Done():
			t.Fatalf("%s: no wake-up", what)
			return refs.Head{}
		}
	}
	if h := next("start"); !h.Commit.IsZero() {
		t.Fatalf("an agent without HEAD watched: %+v", h)
	}
	c1 := putKey(t, local, "lumen", "a", "1")
	putKey(t, local, "lumen", "b", "2") // another agent's moves wake no one watching nova
	if _, err := repo.New(other).Fork(ctx, "lumen", c1, "nova"); err != nil {
		t.Fatal(err)
	}
	if h := next("fork by another client"); h.Commit != c1 || h.Seq != 1 {
		t.Fatalf("after the fork: %+v", h)
	}
	c2 := putKey(t, local, "nova", "c", "3")
	if h := next("move in the server's process"); h.Commit != c2 {
		t.Fatalf("after a local move: %+v, want %s", h, c2)
	}
	cur, _, _ := local.Storage.HeadRecord(ctx, "nova")
	seq, entry, head := nextMove(t, "nova", cur, c1)
	if err := other.SwapHead(ctx, "nova", cur, seq, entry, head); err != nil {
		t.Fatal(err)
	}
	if h := next("raw swap by another client"); h.Commit != c1 || h.Seq != seq {
		t.Fatalf("after a raw swap: %+v", h)
	}
	select {
	case h := <-seen:
		t.Fatalf("a wake-up with nothing moved: %+v", h)
	case <-time.After(100 * time.Millisecond):
	}
}

// Status says who holds the store and where it listens; Close ends
// connections and streams in flight, removes the socket, and leaves
// nothing listening.
func TestStatusAndClose(t *testing.T) {
	ctx := context.Background()
	r, err := repo.Init(t.TempDir()+"/s", repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	started := time.Now().Unix()
	srv, err := remote.Start(r, remote.Options{Holder: "runtime", Listen: "127.0.0.1:0", Tokens: []string{"rw-token-abcdefghijkl"}, ReadTokens: []string{"ro-token-abcdefghijkl"},
		Exec: func(context.Context, *repo.Repo, remote.ExecRequest, io.Reader, io.Writer, io.Writer) int { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	sock := remote.SocketPath(r.Dir)
	addrs := srv.Addrs()
	if len(addrs) != 2 || addrs[0] != sock {
		t.Fatalf("Addrs = %v, want the socket then the TCP address", addrs)
	}
	unix, err := remote.Dial(ctx, sock, remote.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close()
	ro, err := remote.Dial(ctx, addrs[1], remote.DialOptions{Token: "ro-token-abcdefghijkl"})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	for name, c := range map[string]*remote.Client{"unix": unix, "tcp": ro} {
		st, err := c.Status(ctx)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if st.Holder != "runtime" || st.PID != os.Getpid() || st.Store != r.Dir || !slices.Equal(st.Listen, addrs) || !st.Exec ||
			st.Since < started-1 || st.Since > time.Now().Unix() || st.Clients < 1 {
			t.Fatalf("%s: status %+v", name, st)
		}
	}
	// A stream in flight when the server closes.
	watchErr := make(chan error, 1)
	rounds := make(chan struct{}, 8)
	go func() {
		for rec, err := range unix.WatchHeads(ctx) {
			if err != nil {
				watchErr <- err
				return
			}
			if rec == nil {
				rounds <- struct{}{}
			}
		}
		watchErr <- nil
	}()
	select {
	case <-rounds:
	case err := <-watchErr:
		t.Fatalf("the watch ended before its first round: %v", err)
	case <-time.After(patience(t)):
		t.Fatal("no first round of the watch")
	}
	closed := make(chan struct{})
	go func() { srv.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(patience(t)):
		t.Fatal("Close hangs with a stream in flight")
	}
	select {
	case err := <-watchErr:
		if err == nil {
			t.Error("a watch ended by the server's close reported no error")
		}
	case <-time.After(patience(t)):
		t.Fatal("a watch outlived the server")
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Fatalf("the socket file after Close: %v", err)
	}
	if _, err := remote.Dial(ctx, sock, remote.DialOptions{}); !errors.Is(err, remote.ErrNoServer) {
		t.Fatalf("dialling a closed server's socket: %v, want ErrNoServer", err)
	}
	if _, err := remote.Dial(ctx, addrs[1], remote.DialOptions{Token: "ro-token-abcdefghijkl"}); err == nil {
		t.Fatal("the TCP listener outlived Close")
	}
	if _, err := unix.Status(ctx); err == nil {
		t.Fatal("a client's call after Close answered")
	}
	srv.Close() // again: harmless
	// The store is the caller's, untouched: a new server serves it.
	srv2, err := remote.Start(r, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	alive(t, sock, remote.DialOptions{})
}

// Start refuses what it cannot serve safely; storage that is not on disk is
// served on TCP alone.
func TestStartOptions(t *testing.T) {
	ctx := context.Background()
	mem := repo.New(memory.New())
	if _, err := remote.Start(mem, remote.Options{}); err == nil {
		t.Error("a store in memory was given a socket")
	}
	r, err := repo.Init(t.TempDir()+"/s", repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := remote.Start(r, remote.Options{Listen: "127.0.0.1:0"}); err == nil {
		t.Error("a TCP listener without tokens was started")
	}
	if _, err := os.Lstat(remote.SocketPath(r.Dir)); !os.IsNotExist(err) {
		t.Errorf("a refused Start left a socket: %v", err)
	}
	if _, err := remote.Start(r, remote.Options{Listen: "256.0.0.1:0", Tokens: []string{"rw-token-abcdefghijkl"}}); err == nil {
		t.Error("an impossible TCP address was accepted")
	}
	if _, err := os.Lstat(remote.SocketPath(r.Dir)); !os.IsNotExist(err) {
		t.Errorf("a failed Start left its socket: %v", err)
	}
	srv, err := remote.Start(mem, remote.Options{NoSocket: true, Listen: "127.0.0.1:0", Tokens: []string{"rw-token-abcdefghijkl"}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := remote.Dial(ctx, tcpAddr2(t, srv), remote.DialOptions{Token: "rw-token-abcdefghijkl"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id := putKey(t, repo.New(c), "lumen", "a", "1")
	headIs(t, mem, "lumen", id)
}

// tcpAddr2 is the only address of a server without a socket.
func tcpAddr2(t testing.TB, srv *remote.Server) string {
	a := srv.Addrs()
	if len(a) != 1 {
		t.Fatalf("addresses %v, want one", a)
	}
	return a[0]
}
