package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/internal/rpcwire"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"storj.io/drpc/drpcerr"
	"storj.io/drpc/drpcmetadata"
)

// invokeRaw makes one unary call with body as the request's bytes on a
// fresh connection and returns the answer's bytes and the error.
func invokeRaw(t testing.TB, addr, rpc, token string, body []byte) ([]byte, error) {
	t.Helper()
	conn, _ := rawConn(t, addr)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), patience(t))
	defer cancel()
	if token != "" {
		ctx = drpcmetadata.Add(ctx, rpcwire.Token, token)
	}
	var out []byte
	err := conn.Invoke(ctx, rpc, rawEncoding{}, &body, &out)
	return out, err
}

func encode(t testing.TB, q *rpcwire.Req) []byte {
	t.Helper()
	b, err := rpcwire.Encoding.Marshal(q)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// wantCode fails t unless err carries the wire error code.
func wantCode(t testing.TB, what string, err error, code uint64) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted, want error code %d", what, code)
		return
	}
	if got := drpcerr.Code(err); got != code {
		t.Errorf("%s: %v (code %d), want code %d", what, err, got, code)
	}
}

// hostileStore is a served store with some history to protect: an agent
// with three commits, a tape and a meta record.
func hostileStore(t *testing.T) (*repo.Repo, *remote.Client) {
	local, _, c := startServed(t, remote.Options{Holder: "hostile"})
	ctx := context.Background()
	for i, v := range []string{"1", "2", "3"} {
		putKey(t, local, "lumen", "k"+v, strings.Repeat(v, i+1))
	}
	if _, err := local.Storage.AppendLines(ctx, "lumen", [][]byte{[]byte(`{"receipt":1}`)}); err != nil {
		t.Fatal(err)
	}
	if err := local.Storage.SetMeta(ctx, "note", []byte("kept")); err != nil {
		t.Fatal(err)
	}
	return local, c
}

// After each hostile request: nothing changed, the server still serves
// (the same client and a fresh one), and the store verifies clean.
func unharmed(t *testing.T, local *repo.Repo, c *remote.Client, before string) {
	t.Helper()
	if after := stateOf(t, local, "lumen"); after != before {
		t.Errorf("the store changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if _, ok, err := c.HeadRecord(context.Background(), "lumen"); err != nil || !ok {
		t.Fatalf("the client no longer reads: %v %v", ok, err)
	}
	alive(t, remote.SocketPath(local.Dir), remote.DialOptions{})
	verifyClean(t, local)
}

// Block requests with malformed CIDs, or bytes that are not their CID's,
// are refused (code 104), whichever call carries them.
func TestHostileBlocks(t *testing.T) {
	ctx := context.Background()
	local, c := hostileStore(t)
	sock := remote.SocketPath(local.Dir)
	before := stateOf(t, local, "lumen")
	good := objects.NewValue([]byte("good bytes"))
	bad := [][]byte{nil, {}, {0x01}, {0x01, 0x55, 0x12, 0x20, 1, 2, 3}, append(good.CID.Bytes(), 0), []byte("QmNotBinary"),
		{0x01, 0x70, 0x12, 0x20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}, // dag-pb: not ours
		{0x01, 0x55, 0x11, 0x14, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20},                                                 // sha1
	}
	for _, id := range bad {
		_, err := invokeRaw(t, sock, rpcwire.RPCGet, "", encode(t, &rpcwire.Req{CID: id}))
		wantCode(t, fmt.Sprintf("Get of a malformed CID %x", id), err, rpcwire.CodeBadRequest)
		_, err = invokeRaw(t, sock, rpcwire.RPCHas, "", encode(t, &rpcwire.Req{CID: id}))
		wantCode(t, "Has of a malformed CID", err, rpcwire.CodeBadRequest)
		_, err = invokeRaw(t, sock, rpcwire.RPCPut, "", encode(t, &rpcwire.Req{Blocks: []rpcwire.Block{{CID: good.CID.Bytes(), Data: good.Data}, {CID: id, Data: []byte("x")}}}))
		wantCode(t, "Put with a malformed CID", err, rpcwire.CodeBadRequest)
	}
	// Bytes that do not hash to the CID, alone or after a good block: the
	// whole request is refused, the good block included.
	for _, blocks := range [][]objects.Block{
		{{CID: good.CID, Data: []byte("evil")}},
		{good, {CID: objects.NewValue([]byte("other")).CID, Data: []byte("evil")}},
		{{CID: good.CID, Data: append(bytes.Clone(good.Data), 0)}},
	} {
		err := c.Put(ctx, blocks...)
		wantCode(t, "Put of wrong bytes", err, rpcwire.CodeBadRequest)
	}
	// A prefix longer than any CID.
	_, err := c.CIDsWithPrefix(ctx, bytes.Repeat([]byte{1}, 65))
	wantCode(t, "CIDsWithPrefix of 65 bytes", err, rpcwire.CodeBadRequest)
	// A Get of a block the server does not hold is objects.ErrNotFound, with
	// the CID named.
	_, err = c.Get(ctx, good.CID)
	var nf *objects.NotFoundError
	if !errors.Is(err, objects.ErrNotFound) || !errors.As(err, &nf) || nf.CID != good.CID {
		t.Errorf("Get of an absent block: %v", err)
	}
	unharmed(t, local, c, before)
}

// HEAD moves that Move would never write are refused and move nothing.
func TestHostileSwaps(t *testing.T) {
	ctx := context.Background()
	local, c := hostileStore(t)
	stale, _, err := local.Storage.HeadRecord(ctx, "lumen")
	if err != nil {
		t.Fatal(err)
	}
	putKey(t, local, "lumen", "k4", "4444")
	cur, _, err := local.Storage.HeadRecord(ctx, "lumen")
	if err != nil {
		t.Fatal(err)
	}
	before := stateOf(t, local, "lumen")
	h, _ := refs.DecodeHead(cur)
	es, err := local.Refs.Entries(ctx, "lumen")
	if err != nil {
		t.Fatal(err)
	}
	first := es[0].New // an older commit the store holds
	seq, entry, head := nextMove(t, "lumen", cur, first)
	if err := refs.CheckSwap("lumen", cur, seq, entry, head); err != nil {
		t.Fatalf("the test's own move is not well formed: %v", err)
	}
	base := refs.Entry{Seq: h.Seq + 1, Prev: h.Hash, Agent: "lumen", Op: refs.OpReset, Old: h.Commit, New: first, Time: 1}
	type swap struct {
		old         []byte
		seq         uint64
		entry, head []byte
	}
	// altered is base changed by f, with records as Move would write them.
	altered := func(f func(e *refs.Entry)) swap {
		e := base
		f(&e)
		en, hd := moveRecords(t, e)
		return swap{cur, e.Seq, en, hd}
	}
	wrongHash := func() []byte {
		var hd refs.Head
		if err := json.Unmarshal(head, &hd); err != nil {
			t.Fatal(err)
		}
		hd.Hash = strings.Repeat("ab", 32)
		b, _ := json.Marshal(hd)
		return b
	}()
	cases := map[string]swap{
		"garbage records":               {cur, seq, []byte("entry"), []byte("head")},
		"empty records":                 {cur, seq, nil, nil},
		"JSON null records":             {cur, seq, []byte("null"), []byte("null")},
		"wrong seq argument":            {cur, seq + 1, entry, head},
		"zero seq argument":             {cur, 0, entry, head},
		"entry skips a sequence number": altered(func(e *refs.Entry) { e.Seq++ }),
		"entry repeats the current seq": altered(func(e *refs.Entry) { e.Seq-- }),
		"entry does not chain":          altered(func(e *refs.Entry) { e.Prev = strings.Repeat("0", 64) }),
		"entry starts elsewhere":        altered(func(e *refs.Entry) { e.Old = first }),
		"entry without an operation":    altered(func(e *refs.Entry) { e.Op = "" }),
		"records of another agent":      altered(func(e *refs.Entry) { e.Agent = "nova" }),
		"a move to the zero commit":     altered(func(e *refs.Entry) { e.New = objects.CID{} }),
		"move to a commit the store does not hold": altered(func(e *refs.Entry) {
			e.New = objects.Sum(objects.CodecDagCBOR, []byte("a commit nobody wrote"))
		}),
		"HEAD record with a wrong hash":   {cur, seq, entry, wrongHash},
		"HEAD record not canonical":       {cur, seq, entry, append(bytes.Clone(head), ' ')},
		"entry not canonical":             {cur, seq, append([]byte(" "), entry...), head},
		"old record that is not a record": {[]byte("{"), seq, entry, head},
	}
	for name, s := range cases {
		wantCode(t, name, c.SwapHead(ctx, "lumen", s.old, s.seq, s.entry, s.head), rpcwire.CodeBadRequest)
	}
	// Well-formed moves from a HEAD record that is not the current one (a
	// writer that lost the race, or one creating an agent that exists) are
	// refs.ErrSwapped, as from a local store.
	s2, en2, hd2 := nextMove(t, "lumen", stale, first)
	if err := c.SwapHead(ctx, "lumen", stale, s2, en2, hd2); !errors.Is(err, refs.ErrSwapped) {
		t.Errorf("a move from a stale HEAD record: %v, want refs.ErrSwapped", err)
	}
	s3, en3, hd3 := nextMove(t, "lumen", nil, first)
	if err := c.SwapHead(ctx, "lumen", nil, s3, en3, hd3); !errors.Is(err, refs.ErrSwapped) {
		t.Errorf("creating an agent that exists: %v, want refs.ErrSwapped", err)
	}
	unharmed(t, local, c, before)
	// The well-formed move itself lands: the refusals above were about
	// their records, not about remote moves.
	if err := c.SwapHead(ctx, "lumen", cur, seq, entry, head); err != nil {
		t.Fatalf("a well-formed move: %v", err)
	}
	if got, _ := local.Refs.Head(ctx, "lumen"); got.Commit != first || got.Seq != h.Seq+1 {
		t.Fatalf("after the move HEAD is %+v, want %s", got, first)
	}
	verifyClean(t, local)
}

// A HEAD move must name a commit: a block the store holds that is not one
// (a value, a tree node) is refused, as is a commit whose tree the store
// does not hold. Either would leave a HEAD that verify reports broken.
func TestSwapToNonCommit(t *testing.T) {
	ctx := context.Background()
	local, c := hostileStore(t)
	value := objects.NewValue([]byte("a value, not a commit"))
	if err := c.Put(ctx, value); err != nil {
		t.Fatal(err)
	}
	tr := objects.NewTree(local.Blocks)
	if _, err := tr.Put(ctx, "k", value.CID); err != nil {
		t.Fatal(err)
	}
	root, nodes := tr.Flush()
	if err := c.Put(ctx, nodes...); err != nil {
		t.Fatal(err)
	}
	orphan := &objects.Commit{Tree: objects.Sum(objects.CodecDagCBOR, []byte("no such tree")), Time: 1, Message: "tree missing"}
	ob, err := orphan.Block()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, ob); err != nil {
		t.Fatal(err)
	}
	// A commit whose tree is there but whose parent is not.
	orphan2 := &objects.Commit{Tree: root, Parents: []objects.CID{objects.Sum(objects.CodecDagCBOR, []byte("no such parent"))}, Time: 1, Message: "parent missing"}
	ob2, err := orphan2.Block()
	if err != nil {
		t.Fatal(err)
	}
	// A dag-cbor block that is no commit at all (its bytes are its CID's).
	junk := objects.Block{CID: objects.Sum(objects.CodecDagCBOR, []byte("not cbor")), Data: []byte("not cbor")}
	if err := c.Put(ctx, ob2, junk); err != nil {
		t.Fatal(err)
	}
	before := stateOf(t, local, "lumen", "nova")
	for name, target := range map[string]objects.CID{"a value": value.CID, "a tree node": root, "a commit without its tree": ob.CID,
		"a commit without its parent": ob2.CID, "a dag-cbor block that is no commit": junk.CID} {
		for _, agent := range []string{"lumen", "nova"} { // an existing agent, a new one
			cur, _, _ := local.Storage.HeadRecord(ctx, agent)
			seq, entry, head := nextMove(t, agent, cur, target)
			err := c.SwapHead(ctx, agent, cur, seq, entry, head)
			wantCode(t, "HEAD of "+agent+" moved to "+name, err, rpcwire.CodeBadRequest)
		}
	}
	unharmed(t, local, c, before)
}

// Every call that names an agent refuses names ValidateAgent refuses.
func TestHostileAgents(t *testing.T) {
	ctx := context.Background()
	local, c := hostileStore(t)
	commit := putKey(t, repo.New(c), "ok", "k", "v") // a commit to point at
	before := stateOf(t, local, "lumen")
	for _, agent := range []string{"", "../x", "..", ".", "a/b", "/abs", "-dash", ".hidden", "a\x00b", "a b", "é", strings.Repeat("a", 65)} {
		_, _, err := c.HeadRecord(ctx, agent)
		wantCode(t, "HeadRecord "+agent, err, rpcwire.CodeBadRequest)
		seq, entry, head := nextMove(t, agent, nil, commit)
		wantCode(t, "SwapHead "+agent, c.SwapHead(ctx, agent, nil, seq, entry, head), rpcwire.CodeBadRequest)
		_, err = c.AppendLines(ctx, agent, [][]byte{[]byte("{}")})
		wantCode(t, "AppendLines "+agent, err, rpcwire.CodeBadRequest)
		var logErr, tapeErr error
		for _, err := range c.LogRecords(ctx, agent) {
			logErr = err
			break
		}
		wantCode(t, "LogRecords "+agent, logErr, rpcwire.CodeBadRequest)
		for _, err := range c.TapeLines(ctx, agent) {
			tapeErr = err
			break
		}
		wantCode(t, "TapeLines "+agent, tapeErr, rpcwire.CodeBadRequest)
		// Through the repository: refused before any request.
		if _, err := repo.New(c).Fork(ctx, "ok", commit, agent); !errors.Is(err, refs.ErrBadAgent) {
			t.Errorf("Fork to %q: %v", agent, err)
		}
	}
	// Meta names: empty (but for a prefix), over 4096 bytes, not UTF-8.
	for _, name := range []string{"", strings.Repeat("m", 4097), "\xff\xfe"} {
		wantCode(t, "SetMeta "+name, c.SetMeta(ctx, name, []byte("v")), rpcwire.CodeBadRequest)
		_, _, err := c.GetMeta(ctx, name)
		wantCode(t, "GetMeta", err, rpcwire.CodeBadRequest)
		wantCode(t, "DeleteMetaPrefix", c.DeleteMetaPrefix(ctx, name), rpcwire.CodeBadRequest)
	}
	unharmed(t, local, c, before)
}

// The store's own meta record (its format) is not a client's to change: a
// client that deleted or overwrote it would leave a store that no longer
// opens.
func TestFormatRecordProtected(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "s")
	local, err := repo.Init(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	putKey(t, local, "lumen", "a", "1")
	srv, err := remote.Start(local, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := remote.Dial(ctx, remote.SocketPath(dir), remote.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := stateOf(t, local, "lumen")
	wantCode(t, "SetMeta format", c.SetMeta(ctx, "format", []byte("0")), rpcwire.CodeBadRequest)
	for _, p := range []string{"f", "fo", "form", "format"} {
		wantCode(t, "DeleteMetaPrefix "+p, c.DeleteMetaPrefix(ctx, p), rpcwire.CodeBadRequest)
	}
	unharmed(t, local, c, before)
	// Nor are names no rule admits (metadata_test.go has the rules).
	for _, name := range []string{"formats/x", "formatx", "fx"} {
		wantCode(t, "SetMeta "+name, c.SetMeta(ctx, name, []byte("v")), rpcwire.CodeBadRequest)
		wantCode(t, "DeleteMetaPrefix "+name, c.DeleteMetaPrefix(ctx, name), rpcwire.CodeBadRequest)
	}
	if after := stateOf(t, local, "lumen"); after != before {
		t.Fatalf("set and deleted meta records remain:\n%s", after)
	}
	c.Close()
	srv.Close()
	local.Close()
	r, err := repo.Open(dir, repo.Options{})
	if err != nil {
		t.Fatalf("the store no longer opens: %v", err)
	}
	defer r.Close()
	if got := treeOf(t, r, "lumen"); got["a"] != "1" {
		t.Fatalf("reopened store: %v", got)
	}
}

// A message over rpcwire.MaxMessage is refused on the connection that sent
// it (the block in it is not stored); one just under it is served; the
// server keeps serving everyone. The client's own Put of a block too big
// for one message fails cleanly and leaves the client usable.
func TestOversizedMessage(t *testing.T) {
	ctx := context.Background()
	local, c := hostileStore(t)
	sock := remote.SocketPath(local.Dir)
	before := stateOf(t, local, "lumen")
	big := objects.NewValue(bytes.Repeat([]byte("0123456789abcdef"), (rpcwire.MaxMessage+(1<<20))/16))
	body := encode(t, &rpcwire.Req{Blocks: []rpcwire.Block{{CID: big.CID.Bytes(), Data: big.Data}}})
	if len(body) <= rpcwire.MaxMessage {
		t.Fatalf("message of %d bytes is not oversized", len(body))
	}
	// A second client holds a connection open meanwhile.
	other, err := remote.Dial(ctx, sock, remote.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := invokeRaw(t, sock, rpcwire.RPCPut, "", body); err == nil {
		t.Fatal("an oversized Put was answered")
	}
	if ok, _ := local.Blocks.Has(ctx, big.CID); ok {
		t.Fatal("the block of an oversized message was stored")
	}
	if _, err := other.Status(ctx); err != nil {
		t.Fatalf("another client's connection after an oversized message: %v", err)
	}
	unharmed(t, local, c, before)
	// Just under the limit is served.
	under := objects.NewValue(bytes.Repeat([]byte("fedcba9876543210"), (rpcwire.MaxMessage-(64<<10))/16))
	if _, err := invokeRaw(t, sock, rpcwire.RPCPut, "", encode(t, &rpcwire.Req{Blocks: []rpcwire.Block{{CID: under.CID.Bytes(), Data: under.Data}}})); err != nil {
		t.Fatalf("a Put of %d bytes: %v", len(under.Data), err)
	}
	if got, err := c.Get(ctx, under.CID); err != nil || !bytes.Equal(got, under.Data) {
		t.Fatalf("Get of the block just under the limit: %d bytes, %v", len(got), err)
	}
	// Through the client: a clean error, then the client works on.
	errc := make(chan error, 1)
	go func() { errc <- c.Put(ctx, big) }()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("the client stored a block larger than a message")
		}
	case <-time.After(patience(t)):
		t.Fatal("a client Put of an oversized block hangs")
	}
	if _, ok, err := c.HeadRecord(ctx, "lumen"); err != nil || !ok {
		t.Fatalf("the client after a failed oversized Put: %v", err)
	}
	verifyClean(t, local)
}

// An unknown RPC is code 107 and changes nothing; on TCP the token is
// checked first.
func TestUnknownRPC(t *testing.T) {
	local, srv, c := startServed(t, remote.Options{Listen: "127.0.0.1:0", Tokens: []string{"rw-token-abcdefghijkl"}})
	putKey(t, local, "lumen", "a", "1")
	before := stateOf(t, local, "lumen")
	sock := remote.SocketPath(local.Dir)
	for _, rpc := range []string{"/agentstate.v1/Nope", "", "/agentstate.v0/Get", rpcwire.RPCGet + "/", "/agentstate.v1/get", strings.Repeat("x", 1<<16)} {
		// A name this long spans frames: the connection may end (EOF)
		// before the refusal reaches the client. Refused either way (and the
		// server serves on: unharmed, below).
		refused := func(err error) bool { return len(rpc) > 1<<10 && err != nil && drpcerr.Code(err) == 0 }
		_, err := invokeRaw(t, sock, rpc, "", encode(t, &rpcwire.Req{Agent: "lumen"}))
		if !refused(err) {
			wantCode(t, "unknown RPC "+rpc[:min(len(rpc), 40)], err, rpcwire.CodeUnknown)
		}
		_, err = invokeRaw(t, tcpAddr(t, srv), rpc, "rw-token-abcdefghijkl", nil)
		if !refused(err) {
			wantCode(t, "unknown RPC on TCP "+rpc[:min(len(rpc), 40)], err, rpcwire.CodeUnknown)
		}
		_, err = invokeRaw(t, tcpAddr(t, srv), rpc, "", nil)
		if !refused(err) {
			wantCode(t, "unknown RPC on TCP without a token "+rpc[:min(len(rpc), 40)], err, rpcwire.CodeUnauthorized)
		}
	}
	// Malformed request bodies of known RPCs: 104.
	for name, body := range map[string][]byte{
		"not CBOR":            []byte("\xff\x00garbage"),
		"an unknown key":      {0xa1, 0x18, 0x63, 0x01},                   // {99: 1}
		"a duplicate key":     {0xa2, 0x01, 0x61, 0x61, 0x01, 0x61, 0x62}, // {1:"a", 1:"b"}
		"a wrong type":        {0xa1, 0x01, 0x01},                         // {1: 1}
		"an indefinite array": {0xa1, 0x03, 0x9f, 0xff},
		"a tag":               {0xa1, 0x02, 0xd8, 0x2a, 0x41, 0x00},
		"a huge declared len": {0xa1, 0x02, 0x5b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"an array":            {0x80},
	} {
		_, err := invokeRaw(t, sock, rpcwire.RPCHead, "", body)
		wantCode(t, "HeadRecord with "+name, err, rpcwire.CodeBadRequest)
		_, err = invokeRaw(t, sock, rpcwire.RPCPut, "", body)
		wantCode(t, "Put with "+name, err, rpcwire.CodeBadRequest)
	}
	unharmed(t, local, c, before)
}

// Bytes that are no drpc traffic, on either listener, end only their own
// connection: a frame the reader cannot parse makes the server hang up, and
// connections that stall mid-frame (or say nothing) hold up nobody else.
func TestGarbageConnections(t *testing.T) {
	ctx := context.Background()
	local, srv, c := startServed(t, remote.Options{Listen: "127.0.0.1:0", Tokens: []string{"rw-token-abcdefghijkl"}})
	putKey(t, local, "lumen", "a", "1")
	before := stateOf(t, local, "lumen")
	for _, addr := range []string{remote.SocketPath(local.Dir), tcpAddr(t, srv)} {
		network, opts := "unix", remote.DialOptions{}
		if !strings.Contains(addr, "/") {
			network, opts = "tcp", remote.DialOptions{Token: "rw-token-abcdefghijkl"}
		}
		type junk struct {
			bytes  []byte
			hangup bool // the server must close the connection
		}
		var conns []net.Conn
		junks := []junk{
			{bytes.Repeat([]byte{0xff}, 1<<16), true},
			{[]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), false},
			{[]byte{0x02, 0x01, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f}, false}, // a frame declaring a huge length, then silence
			{[]byte{0x01}, false},
			{nil, false},
		}
		for _, j := range junks {
			nc, err := net.Dial(network, addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if _, err := nc.Write(j.bytes); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, nc) // left open
		}
		// Others are served while those connections stay open, and the
		// server counts them as clients.
		alive(t, addr, opts)
		if _, ok, err := c.HeadRecord(ctx, "lumen"); err != nil || !ok {
			t.Fatalf("after garbage on %s: %v", network, err)
		}
		if st, err := c.Status(ctx); err != nil || st.Clients < len(junks)-1 {
			t.Fatalf("status with %d junk connections open: %+v %v", len(junks), st, err)
		}
		for i, j := range junks {
			nc := conns[i]
			wait := 50 * time.Millisecond
			if j.hangup {
				wait = 5 * time.Second
			}
			nc.SetReadDeadline(time.Now().Add(wait))
			_, err := io.Copy(io.Discard, nc)
			var ne net.Error
			timedOut := errors.As(err, &ne) && ne.Timeout()
			if j.hangup && timedOut {
				t.Errorf("%s: the server kept a connection that sent %.8x...", network, j.bytes)
			}
			if !j.hangup && !timedOut {
				t.Logf("%s: the server closed a connection that sent %q: %v", network, j.bytes, err)
			}
			nc.Close()
		}
	}
	unharmed(t, local, c, before)
}

// Clients that go away in the middle of every kind of stream end only their
// own call; the server lets their connections go.
func TestDisconnectMidStreams(t *testing.T) {
	ctx := context.Background()
	local, _, c := startServed(t, remote.Options{})
	// Enough blocks for AllCIDs to send several messages (4096 CIDs each),
	// and enough log records, tape lines and meta records for a stream.
	var blocks []objects.Block
	for i := range 10000 {
		blocks = append(blocks, objects.NewValue([]byte{byte(i), byte(i >> 8), 'b'}))
	}
	if err := local.Blocks.Put(ctx, blocks...); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		putKey(t, local, "lumen", "k", strings.Repeat("v", i+1))
		if _, err := local.Storage.AppendLines(ctx, "lumen", [][]byte{[]byte(`{"n":1}`), []byte(`{"n":2}`)}); err != nil {
			t.Fatal(err)
		}
		if err := local.Storage.SetMeta(ctx, "m/"+strings.Repeat("x", i+1), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	before := stateOf(t, local, "lumen")
	sock := remote.SocketPath(local.Dir)
	for _, rpc := range []string{rpcwire.RPCAllCIDs, rpcwire.RPCLog, rpcwire.RPCHeads, rpcwire.RPCTapeLines, rpcwire.RPCMetaPrefix, rpcwire.RPCWatch} {
		for _, how := range []string{"close", "cancel"} {
			conn, nc := rawConn(t, sock)
			sctx, cancel := context.WithCancel(ctx)
			st, err := conn.NewStream(sctx, rpc, rpcwire.Encoding)
			if err != nil {
				t.Fatal(err)
			}
			if err := st.MsgSend(&rpcwire.Req{Agent: "lumen", Name: "m/"}, rpcwire.Encoding); err != nil {
				t.Fatal(err)
			}
			st.CloseSend()
			var m rpcwire.Resp
			if err := st.MsgRecv(&m, rpcwire.Encoding); err != nil {
				t.Fatalf("%s: first message: %v", rpc, err)
			}
			if how == "close" {
				nc.Close() // gone without a word
			} else {
				cancel() // the stream cancelled, the connection dropped by drpc
			}
			cancel()
			conn.Close()
		}
	}
	// Everyone else is served in full.
	n := 0
	for _, err := range c.AllCIDs(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n < 10000 {
		t.Fatalf("AllCIDs after disconnects: %d CIDs, want at least 10000", n)
	}
	logs := 0
	for _, err := range c.LogRecords(ctx, "lumen") {
		if err != nil {
			t.Fatal(err)
		}
		logs++
	}
	if logs != 50 {
		t.Fatalf("LogRecords after disconnects: %d, want 50", logs)
	}
	// The server let the connections go: only this client's remain.
	deadline := time.Now().Add(patience(t))
	for {
		st, err := c.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Clients <= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still counted after their clients went away", st.Clients)
		}
		time.Sleep(20 * time.Millisecond)
	}
	unharmed(t, local, c, before)
}

// AdoptCuts requests that are malformed, too large, name commits the store
// does not hold, or come with a read-only token are refused and change
// nothing; a cut link whose parent the store holds is not recorded (it
// would hide a held commit from walks).
func TestHostileAdoptCuts(t *testing.T) {
	ctx := context.Background()
	local, c := hostileStore(t)
	sock := remote.SocketPath(local.Dir)
	before := stateOf(t, local, "lumen")
	h, err := local.Refs.Head(ctx, "lumen")
	if err != nil {
		t.Fatal(err)
	}
	cm, err := local.Commit(ctx, h.Commit)
	if err != nil {
		t.Fatal(err)
	}
	absent := objects.Sum(objects.CodecDagCBOR, []byte("no such commit"))
	many := make([]repo.CutLink, 1<<16+1)
	for i := range many {
		many[i] = repo.CutLink{Commit: h.Commit, Parents: []objects.CID{absent}}
	}
	manyJSON, _ := json.Marshal(many)
	for name, q := range map[string]*rpcwire.Req{
		"not JSON":         {Agent: "lumen", Value: []byte("{")},
		"unknown member":   {Agent: "lumen", Value: []byte(`[{"commit":null,"parents":[],"x":1}]`)},
		"no parents":       {Agent: "lumen", Value: []byte(`[{"commit":"` + h.Commit.String() + `","parents":[]}]`)},
		"an absent commit": {Agent: "lumen", Value: []byte(`[{"commit":"` + absent.String() + `","parents":["` + absent.String() + `"]}]`)},
		"too many links":   {Agent: "lumen", Value: manyJSON},
		"a bad agent name": {Agent: "../x", Value: []byte(`[]`)},
	} {
		_, err := invokeRaw(t, sock, rpcwire.RPCAdoptCuts, "", encode(t, q))
		wantCode(t, "AdoptCuts with "+name, err, rpcwire.CodeBadRequest)
	}
	// A link whose parent the store holds: accepted, nothing recorded.
	if len(cm.Parents) > 0 {
		if err := c.AdoptCuts(ctx, "lumen", []repo.CutLink{{Commit: h.Commit, Parents: cm.Parents}}); err != nil {
			t.Fatal(err)
		}
	}
	if after := stateOf(t, local, "lumen"); after != before {
		t.Fatalf("refused or empty AdoptCuts changed the store:\n%s\nwant:\n%s", after, before)
	}
	verifyClean(t, local)
}
