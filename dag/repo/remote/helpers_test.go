package remote_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"storj.io/drpc"
	"storj.io/drpc/drpcconn"
)

// Helpers of the tests in this package's other files (owner_served_test.go,
// hostile_more_test.go, exec_test.go, fuzz_test.go, socket_test.go). They
// carry their own names so that they do not depend on remote_test.go's.

// patience is how long a test waits for what must happen (an answer, a
// close, a server coming up) before it calls it a hang: the time the test
// binary has left (go test -timeout) less a margin to say so. A loaded
// machine or -race makes these waits long, never wrong, so no fixed budget
// decides a test's outcome, and a real hang still fails with its message.
func patience(t testing.TB) time.Duration {
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if end, ok := d.Deadline(); ok {
			left := time.Until(end)
			return max(left-max(left/10, 5*time.Second), time.Second)
		}
	}
	return 10 * time.Minute
}

// startServed serves a fresh Badger store and returns the server's own
// repository, the server, and a client on its Unix socket.
func startServed(t testing.TB, opts remote.Options) (*repo.Repo, *remote.Server, *remote.Client) {
	t.Helper()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := remote.Start(r, opts)
	if err != nil {
		r.Close()
		t.Fatal(err)
	}
	c, err := remote.Dial(context.Background(), remote.SocketPath(r.Dir), remote.DialOptions{})
	if err != nil {
		srv.Close()
		r.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		r.Close()
	})
	return r, srv, c
}

// tcpAddr is the TCP address a server listens on (the last of Addrs).
func tcpAddr(t testing.TB, srv *remote.Server) string {
	t.Helper()
	a := srv.Addrs()
	if len(a) < 2 {
		t.Fatalf("server addresses %v: no TCP listener", a)
	}
	return a[len(a)-1]
}

// putKey sets key to val in agent's HEAD tree (creating the agent) and
// returns the new commit.
func putKey(t testing.TB, r *repo.Repo, agent, key, val string) objects.CID {
	t.Helper()
	v := objects.NewValue([]byte(val))
	id, err := r.Edit(context.Background(), repo.EditRequest{Agent: agent, Create: true, Message: "put " + key, Blocks: []objects.Block{v},
		Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, key, v.CID) }})
	if err != nil {
		t.Fatalf("put %s=%s on %s: %v", key, val, agent, err)
	}
	return id
}

// treeOf reads agent's HEAD tree as key → value bytes.
func treeOf(t testing.TB, r *repo.Repo, agent string) map[string]string {
	t.Helper()
	ctx := context.Background()
	h, err := r.Refs.Head(ctx, agent)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := r.Tree(ctx, h.Commit)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for e, err := range tr.Entries(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		v, err := objects.ReadValue(ctx, r.Blocks, e.Value)
		if err != nil {
			t.Fatal(err)
		}
		out[e.Key] = string(v)
	}
	return out
}

// verifyClean fails t unless r verifies without problems.
func verifyClean(t testing.TB, r *repo.Repo) repo.VerifyReport {
	t.Helper()
	rep, err := r.Verify(context.Background())
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
	return rep
}

// stateOf describes everything a store keeps that a client can change:
// every block, every HEAD record, the operation logs and tapes of agents,
// and every meta record. Two equal descriptions are the same store.
func stateOf(t testing.TB, r *repo.Repo, agents ...string) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	var cids []string
	for c, err := range r.Storage.(objects.BlockLister).AllCIDs(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		cids = append(cids, c.String())
	}
	slices.Sort(cids)
	fmt.Fprintf(&b, "blocks %v\n", cids)
	for rec, err := range r.Storage.HeadRecords(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "head %s %s\n", rec.Agent, rec.Data)
		agents = append(agents, rec.Agent)
	}
	slices.Sort(agents)
	for _, a := range slices.Compact(agents) {
		for rec, err := range r.Storage.LogRecords(ctx, a) {
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "log %s %d %s\n", a, rec.Seq, rec.Data)
		}
		for l, err := range r.Storage.TapeLines(ctx, a) {
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "tape %s %q\n", a, l)
		}
	}
	if err := r.Storage.MetaPrefix(ctx, "", func(name string, v []byte) error {
		fmt.Fprintf(&b, "meta %q %q\n", name, v)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// moveRecords returns the operation-log entry and HEAD record refs.Move
// would write for e.
func moveRecords(t testing.TB, e refs.Entry) (entry, head []byte) {
	t.Helper()
	entry, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(entry)
	head, err = json.Marshal(refs.Head{Agent: e.Agent, Commit: e.New, Seq: e.Seq, Hash: hex.EncodeToString(sum[:])})
	if err != nil {
		t.Fatal(err)
	}
	return entry, head
}

// nextMove returns the records of a well-formed move of agent from its
// current HEAD record (cur, nil for none) to commit: what a remote writer
// sends, and what refs.CheckSwap accepts.
func nextMove(t testing.TB, agent string, cur []byte, to objects.CID) (seq uint64, entry, head []byte) {
	t.Helper()
	h, err := refs.DecodeHead(cur)
	if err != nil {
		t.Fatal(err)
	}
	op := refs.OpReset
	if cur == nil {
		op = refs.OpFork
	}
	e := refs.Entry{Seq: h.Seq + 1, Prev: h.Hash, Agent: agent, Op: op, Old: h.Commit, New: to, Time: 1}
	entry, head = moveRecords(t, e)
	return e.Seq, entry, head
}

// rawEncoding passes bytes through unchanged: a request body of the
// caller's choosing, an answer read as it came.
type rawEncoding struct{}

func (rawEncoding) Marshal(m drpc.Message) ([]byte, error) { return *m.(*[]byte), nil }
func (rawEncoding) Unmarshal(b []byte, m drpc.Message) error {
	*m.(*[]byte) = append([]byte(nil), b...)
	return nil
}

// rawConn is a bare drpc connection to addr ("unix" socket path or TCP).
func rawConn(t testing.TB, addr string) (*drpcconn.Conn, net.Conn) {
	t.Helper()
	network := "tcp"
	if strings.Contains(addr, "/") {
		network = "unix"
	}
	nc, err := net.DialTimeout(network, addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if network == "tcp" {
		nc.Write([]byte(remote.Header))
	}
	conn := drpcconn.NewWithOptions(nc, drpcconn.Options{Manager: remote.ManagerOptions()})
	t.Cleanup(func() { conn.Close() })
	return conn, nc
}

// alive fails t unless the server still answers a fresh client on addr.
func alive(t testing.TB, addr string, opts remote.DialOptions) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience(t))
	defer cancel()
	c, err := remote.Dial(ctx, addr, opts)
	if err != nil {
		t.Fatalf("the server no longer accepts clients: %v", err)
	}
	defer c.Close()
	if _, err := c.Status(ctx); err != nil {
		t.Fatalf("the server no longer answers: %v", err)
	}
}
