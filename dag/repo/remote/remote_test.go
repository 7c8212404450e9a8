package remote_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/internal/rpcwire"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcerr"
	"storj.io/drpc/drpcmetadata"
)

// served starts a server over a fresh Badger store and returns the local
// repository, the server and a client on the Unix socket.
func served(t *testing.T, opts remote.Options) (*repo.Repo, *remote.Server, *remote.Client) {
	t.Helper()
	r, err := repo.Init(filepath.Join(t.TempDir(), "s"), repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := remote.Start(r, opts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := remote.Dial(context.Background(), remote.SocketPath(r.Dir), remote.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		srv.Close()
		r.Close()
	})
	return r, srv, c
}

func put(t *testing.T, r *repo.Repo, agent, key, val string) objects.CID {
	t.Helper()
	v := objects.NewValue([]byte(val))
	id, err := r.Edit(context.Background(), repo.EditRequest{Agent: agent, Create: true, Message: "put " + key, Blocks: []objects.Block{v},
		Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, key, v.CID) }})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// The repository through the server: writes from several clients and from
// the server's own process at once all land, and the store verifies clean.
func TestRepoThroughServer(t *testing.T) {
	ctx := context.Background()
	local, _, c := served(t, remote.Options{})
	rr := repo.New(c)
	put(t, rr, "lumen", "a", "1")
	if h, err := local.Refs.Head(ctx, "lumen"); err != nil || h.Seq != 1 {
		t.Fatalf("the server's repository does not see the remote write: %v %v", h, err)
	}
	if _, err := rr.Fork(ctx, "lumen", mustHead(t, rr, "lumen"), "nova"); err != nil {
		t.Fatal(err)
	}
	put(t, rr, "nova", "b", "2")
	if _, err := rr.Undo(ctx, "nova"); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			target := rr
			if w == 0 {
				target = local
			}
			for i := range 10 {
				put(t, target, "lumen", "k/"+string(rune('a'+w))+"/"+string(rune('a'+i)), "v")
			}
		}()
	}
	wg.Wait()
	h, _ := local.Refs.Head(ctx, "lumen")
	_, cm, err := local.ResolveCommit(ctx, "lumen", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := objects.LoadTree(ctx, local.Blocks, cm.Tree)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range tr.Entries(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 41 || h.Seq != 41 {
		t.Fatalf("after 40 concurrent puts: %d keys, %d operations; want 41 and 41", n, h.Seq)
	}
	if rep, err := local.Verify(ctx); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
	// gc of a served store runs in the server.
	if _, err := rr.GC(ctx, true); err == nil || !strings.Contains(err.Error(), "remote client stored blocks") {
		t.Fatalf("gc right after remote writes: %v", err)
	}
}

func mustHead(t *testing.T, r *repo.Repo, agent string) objects.CID {
	h, err := r.Refs.Head(context.Background(), agent)
	if err != nil {
		t.Fatal(err)
	}
	return h.Commit
}

// WatchHead through a client wakes on moves made in the server's process
// and by other clients.
func TestWatchHead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), patience(t))
	defer cancel()
	local, _, c := served(t, remote.Options{})
	put(t, local, "lumen", "a", "0")
	other, err := remote.Dial(ctx, remote.SocketPath(local.Dir), remote.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	seen := make(chan objects.CID, 16)
	go func() {
		for h, err := range repo.New(c).WatchHead(ctx, "lumen") {
			if err != nil {
				return
			}
			seen <- h.Commit
		}
	}()
	first := <-seen
	byServer := put(t, local, "lumen", "b", "1")
	if got := <-seen; got != byServer || got == first {
		t.Fatalf("after a move in the server: %s, want %s", got, byServer)
	}
	byClient := put(t, repo.New(other), "lumen", "c", "2")
	if got := <-seen; got != byClient {
		t.Fatalf("after a move by another client: %s, want %s", got, byClient)
	}
}

// tcp starts a TCP server with a read-write and a read-only token.
func tcp(t *testing.T, tlsCfg *tls.Config) (*repo.Repo, string) {
	t.Helper()
	r, srv, _ := served(t, remote.Options{Listen: "127.0.0.1:0", Tokens: []string{"rw-token-0123456789"},
		ReadTokens: []string{"ro-token-0123456789"}, TLS: tlsCfg})
	addrs := srv.Addrs()
	return r, addrs[len(addrs)-1]
}

func TestTokens(t *testing.T) {
	ctx := context.Background()
	local, addr := tcp(t, nil)
	put(t, local, "lumen", "a", "1")
	put(t, local, "lumen", "a", "2") // something an undo could take back
	for _, tok := range []string{"", "wrong-token-0123456789"} {
		c, err := remote.Dial(ctx, addr, remote.DialOptions{Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.HeadRecord(ctx, "lumen"); !errors.Is(err, remote.ErrUnauthorized) {
			t.Errorf("token %q: %v, want ErrUnauthorized", tok, err)
		}
		c.Close()
	}
	ro, err := remote.Dial(ctx, addr, remote.DialOptions{Token: "ro-token-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, ok, err := ro.HeadRecord(ctx, "lumen"); err != nil || !ok {
		t.Fatalf("read with a read-only token: %v %v", ok, err)
	}
	before, _, _ := local.Storage.HeadRecord(ctx, "lumen")
	v := objects.NewValue([]byte("x"))
	for name, err := range map[string]error{
		"Put":         ro.Put(ctx, v),
		"SetMeta":     ro.SetMeta(ctx, "m", []byte("v")),
		"DeleteMeta":  ro.DeleteMetaPrefix(ctx, ""),
		"SwapHead":    ro.SwapHead(ctx, "lumen", before, 2, []byte("{}"), []byte("{}")),
		"AppendLines": func() error { _, err := ro.AppendLines(ctx, "lumen", [][]byte{[]byte("{}")}); return err }(),
		"Undo":        func() error { _, err := repo.New(ro).Undo(ctx, "lumen"); return err }(),
		"Redo":        func() error { _, err := repo.New(ro).Redo(ctx, "lumen"); return err }(),
	} {
		if !errors.Is(err, remote.ErrReadOnly) {
			t.Errorf("%s with a read-only token: %v, want ErrReadOnly", name, err)
		}
	}
	if ok, _ := local.Blocks.Has(ctx, v.CID); ok {
		t.Error("a read-only Put stored the block")
	}
	if after, _, _ := local.Storage.HeadRecord(ctx, "lumen"); string(after) != string(before) {
		t.Error("a read-only client moved HEAD")
	}
	rw, err := remote.Dial(ctx, addr, remote.DialOptions{Token: "rw-token-0123456789"})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	put(t, repo.New(rw), "lumen", "b", "2")
}

func TestTLS(t *testing.T) {
	ctx := context.Background()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agentstate test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	local, addr := tcp(t, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS13})
	put(t, local, "lumen", "a", "1")
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	c, err := remote.Dial(ctx, addr, remote.DialOptions{Token: "ro-token-0123456789", TLS: &tls.Config{RootCAs: pool}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok, err := c.HeadRecord(ctx, "lumen"); err != nil || !ok {
		t.Fatalf("over TLS: %v %v", ok, err)
	}
	if _, err := remote.Dial(ctx, addr, remote.DialOptions{Token: "ro-token-0123456789", TLS: &tls.Config{}}); err == nil {
		t.Fatal("a client that does not trust the certificate connected")
	}
}

// Hostile requests: each refused, nothing changed, the server serving on.
func TestHostileRequests(t *testing.T) {
	ctx := context.Background()
	local, _, c := served(t, remote.Options{})
	head := put(t, local, "lumen", "a", "1")
	rec, _, _ := local.Storage.HeadRecord(ctx, "lumen")
	good := objects.NewValue([]byte("good"))
	badEntry := `{"seq":2,"prev":"","agent":"lumen","op":"commit","new":"` + head.String() + `","time":1}`
	for name, err := range map[string]error{
		"block bytes not its CID": c.Put(ctx, objects.Block{CID: good.CID, Data: []byte("evil")}),
		"forged HEAD records":     c.SwapHead(ctx, "lumen", rec, 2, []byte("entry"), []byte("head")),
		"unchained entry":         c.SwapHead(ctx, "lumen", rec, 2, []byte(badEntry), []byte(`{}`)),
		"escaping agent":          c.SwapHead(ctx, "../x", nil, 1, []byte("{}"), []byte("{}")),
		"empty agent":             func() error { _, _, err := c.HeadRecord(ctx, ""); return err }(),
		"empty meta name":         c.SetMeta(ctx, "", []byte("v")),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if ok, _ := local.Blocks.Has(ctx, good.CID); ok {
		t.Error("a block with the wrong bytes was stored")
	}
	if after, _, _ := local.Storage.HeadRecord(ctx, "lumen"); string(after) != string(rec) {
		t.Error("a forged swap moved HEAD")
	}
	// A move to a commit the store does not hold.
	ghost := objects.Sum(objects.CodecDagCBOR, []byte("no such commit"))
	e := refs.Entry{Seq: 2, Prev: headHash(t, rec), Agent: "lumen", Op: refs.OpReset, Old: head, New: ghost, Time: 1}
	entry, hd := records(t, e)
	if err := c.SwapHead(ctx, "lumen", rec, 2, entry, hd); err == nil || !strings.Contains(err.Error(), "does not hold") {
		t.Errorf("move to a missing commit: %v", err)
	}
	// Raw garbage on the socket, and an unknown RPC, from a bare connection.
	nc, err := net.Dial("unix", remote.SocketPath(local.Dir))
	if err != nil {
		t.Fatal(err)
	}
	nc.Write([]byte("\xff\xff\xff\xff garbage that is no drpc frame"))
	nc.Close()
	// The server still serves, and the store verifies clean.
	if _, ok, err := c.HeadRecord(ctx, "lumen"); err != nil || !ok {
		t.Fatalf("after hostile requests: %v %v", ok, err)
	}
	if rep, err := local.Verify(ctx); err != nil || len(rep.Problems) > 0 {
		t.Fatalf("verify: %v %v", err, rep.Problems)
	}
}

func headHash(t *testing.T, rec []byte) string {
	h, err := refs.DecodeHead(rec)
	if err != nil {
		t.Fatal(err)
	}
	return h.Hash
}

// records encodes e and its HEAD record as refs.Move would.
func records(t *testing.T, e refs.Entry) ([]byte, []byte) {
	t.Helper()
	entry, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(entry)
	head, err := json.Marshal(refs.Head{Agent: e.Agent, Commit: e.New, Seq: e.Seq, Hash: hex.EncodeToString(sum[:])})
	if err != nil {
		t.Fatal(err)
	}
	return entry, head
}

// A killed server leaves its socket file: a client finds nobody listening
// (ErrNoServer), and the next server replaces the file.
func TestStaleSocket(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A socket file nobody listens on, as a SIGKILLed server leaves.
	l, err := net.Listen("unix", remote.SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Stat(remote.SocketPath(dir)); err != nil {
		t.Fatal(err)
	}
	if _, err := remote.Dial(context.Background(), remote.SocketPath(dir), remote.DialOptions{}); !errors.Is(err, remote.ErrNoServer) {
		t.Fatalf("dial of a dead socket: %v, want ErrNoServer", err)
	}
	srv, err := remote.Start(r, remote.Options{Holder: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := remote.Dial(context.Background(), remote.SocketPath(dir), remote.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Status(context.Background())
	if err != nil || st.Holder != "test" || st.PID != os.Getpid() {
		t.Fatalf("status: %+v %v", st, err)
	}
	fi, _ := os.Stat(remote.SocketPath(dir))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	c.Close()
	srv.Close()
	if _, err := os.Stat(remote.SocketPath(dir)); !os.IsNotExist(err) {
		t.Errorf("Close left the socket file: %v", err)
	}
}

// A store deeper than a socket path may be (108 bytes) is still served.
func TestDeepSocketPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60), "s")
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(remote.SocketPath(dir)) <= 108 {
		t.Fatalf("path too short for the test: %d", len(remote.SocketPath(dir)))
	}
	srv, err := remote.Start(r, remote.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c, err := remote.Dial(context.Background(), remote.SocketPath(dir), remote.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	put(t, repo.New(c), "lumen", "a", "1")
}

// execCode runs an Exec on a bare drpc connection and returns the error code.
func execCode(t *testing.T, network, addr, token string) uint64 {
	t.Helper()
	nc, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	if network == "tcp" {
		nc.Write([]byte(remote.Header))
	}
	conn := drpcconn.New(nc)
	defer conn.Close()
	ctx := context.Background()
	if token != "" {
		ctx = drpcmetadata.Add(ctx, rpcwire.Token, token)
	}
	st, err := conn.NewStream(ctx, rpcwire.RPCExec, rpcwire.Encoding)
	if err != nil {
		t.Fatal(err)
	}
	st.MsgSend(&rpcwire.ExecStart{Args: []string{"agentstate", "log"}, Dir: "/"}, rpcwire.Encoding)
	var out rpcwire.ExecOut
	err = st.MsgRecv(&out, rpcwire.Encoding)
	if err == nil {
		t.Fatalf("Exec answered %+v", out)
	}
	return drpcerr.Code(err)
}

// Exec is refused on TCP (even with a read-write token), and by a server
// that has no command line.
func TestExecRefused(t *testing.T) {
	local, addr := tcp(t, nil)
	if code := execCode(t, "tcp", addr, "rw-token-0123456789"); code != rpcwire.CodeNoExec {
		t.Errorf("Exec over TCP: code %d, want %d", code, rpcwire.CodeNoExec)
	}
	if code := execCode(t, "unix", remote.SocketPath(local.Dir), ""); code != rpcwire.CodeNoExec {
		t.Errorf("Exec on a server without a command line: code %d, want %d", code, rpcwire.CodeNoExec)
	}
	if code := execCode(t, "tcp", addr, ""); code != rpcwire.CodeNoExec && code != rpcwire.CodeUnauthorized {
		t.Errorf("Exec over TCP without a token: code %d", code)
	}
}

// A client that goes away in the middle of a stream ends only its call.
func TestDisconnectMidStream(t *testing.T) {
	ctx := context.Background()
	local, _, c := served(t, remote.Options{})
	for i := range 300 {
		put(t, local, "lumen", "k", string(rune('a'+i%26))+strings.Repeat("x", i))
	}
	nc, err := net.Dial("unix", remote.SocketPath(local.Dir))
	if err != nil {
		t.Fatal(err)
	}
	conn := drpcconn.New(nc)
	st, err := conn.NewStream(ctx, rpcwire.RPCLog, rpcwire.Encoding)
	if err != nil {
		t.Fatal(err)
	}
	st.MsgSend(&rpcwire.Req{Agent: "lumen"}, rpcwire.Encoding)
	st.CloseSend()
	var m rpcwire.Resp
	if err := st.MsgRecv(&m, rpcwire.Encoding); err != nil {
		t.Fatal(err)
	}
	nc.Close() // gone after the first record
	n := 0
	for _, err := range c.LogRecords(ctx, "lumen") {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 300 {
		t.Fatalf("another client read %d log records, want 300", n)
	}
}
