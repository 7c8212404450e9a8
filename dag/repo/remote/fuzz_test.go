package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/internal/rpcwire"
	"github.com/agentstate/agentstate/objects"
	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcmetadata"
)

// fuzzRPCs are the calls FuzzRequest aims at: every RPC, and one that does
// not exist.
var fuzzRPCs = []string{
	rpcwire.RPCStatus, rpcwire.RPCGet, rpcwire.RPCHas, rpcwire.RPCPut, rpcwire.RPCAllCIDs, rpcwire.RPCPrefix,
	rpcwire.RPCHead, rpcwire.RPCSwapHead, rpcwire.RPCHeads, rpcwire.RPCLog, rpcwire.RPCAppendLines, rpcwire.RPCTapeLines,
	rpcwire.RPCGetMeta, rpcwire.RPCSetMeta, rpcwire.RPCMetaPrefix, rpcwire.RPCDeleteMeta, rpcwire.RPCWatch, rpcwire.RPCGC,
	rpcwire.RPCExec, rpcwire.RPCForget, rpcwire.RPCAdoptCuts, "/agentstate.v1/NoSuchCall",
}

// fuzzTransports: the Unix socket, TCP with a read-write token, TCP with a
// read-only one.
const fuzzTransports = 3

// fuzzTarget is the served store every input of FuzzRequest goes to, with
// one reused connection per transport (dialled again when the server hangs
// up: fuzzing dials thousands of times a second, and TCP would run out of
// ports).
type fuzzTarget struct {
	local *repo.Repo
	c     *remote.Client
	addrs [fuzzTransports]string
	toks  [fuzzTransports]string
	conns [fuzzTransports]*drpcconn.Conn
}

func (ft *fuzzTarget) conn(t *testing.T, i int) *drpcconn.Conn {
	if cn := ft.conns[i]; cn != nil {
		select {
		case <-cn.Closed():
		default:
			return cn
		}
		cn.Close()
	}
	network := "unix"
	if i > 0 {
		network = "tcp"
	}
	nc, err := net.DialTimeout(network, ft.addrs[i], 5*time.Second)
	if err != nil {
		t.Fatalf("the server no longer accepts connections on %s: %v", ft.addrs[i], err)
	}
	if network == "tcp" {
		nc.Write([]byte(remote.Header))
	}
	ft.conns[i] = drpcconn.NewWithOptions(nc, drpcconn.Options{Manager: remote.ManagerOptions()})
	return ft.conns[i]
}

// fuzzExec is the command line the fuzzed server runs: it echoes its
// request and reads its stdin.
func fuzzExec(ctx context.Context, r *repo.Repo, req remote.ExecRequest, stdin io.Reader, stdout, stderr io.Writer) int {
	fmt.Fprintf(stdout, "%q %q %q %v %d\n", req.Args, req.Dir, req.Env, req.StdoutTTY, req.Width)
	n, err := io.Copy(stdout, io.LimitReader(stdin, 1<<20))
	fmt.Fprintln(stderr, n, err)
	return len(req.Args)
}

// FuzzRequest sends arbitrary bytes as the request of every RPC, on every
// transport, to a served Badger store. Whatever comes, the server must not
// panic (a panic in a handler would come back as "internal error serving";
// one elsewhere would crash the fuzzing process), must keep serving, must
// keep the store's format record, and the store must verify clean.
func FuzzRequest(f *testing.F) {
	ctx := context.Background()
	local, srv, c := startServed(f, remote.Options{Holder: "fuzz", Exec: fuzzExec, Listen: "127.0.0.1:0",
		Tokens: []string{"rw-token-fuzz-0123456789"}, ReadTokens: []string{"ro-token-fuzz-0123456789"}})
	c0 := putKey(f, local, "lumen", "a", "1")
	putKey(f, local, "lumen", "b", "2")
	if _, err := local.Storage.AppendLines(ctx, "lumen", [][]byte{[]byte(`{"n":1}`)}); err != nil {
		f.Fatal(err)
	}
	if err := local.Storage.SetMeta(ctx, "note", []byte("v")); err != nil {
		f.Fatal(err)
	}
	format, ok, err := local.Storage.GetMeta(ctx, "format")
	if err != nil || !ok {
		f.Fatal("no format record", err)
	}
	ft := &fuzzTarget{local: local, c: c}
	ft.addrs = [fuzzTransports]string{remote.SocketPath(local.Dir), tcpAddr(f, srv), tcpAddr(f, srv)}
	ft.toks = [fuzzTransports]string{"", "rw-token-fuzz-0123456789", "ro-token-fuzz-0123456789"}
	f.Cleanup(func() {
		for _, cn := range ft.conns {
			if cn != nil {
				cn.Close()
			}
		}
	})

	// Seeds: a well-formed request of every call, on every transport, and
	// a few shapes of nonsense.
	cur, _, _ := local.Storage.HeadRecord(ctx, "lumen")
	seq, entry, head := nextMove(f, "lumen", cur, c0)
	v := objects.NewValue([]byte("seed value"))
	good := map[string]any{
		rpcwire.RPCStatus:         &rpcwire.Req{},
		rpcwire.RPCGet:            &rpcwire.Req{CID: c0.Bytes()},
		rpcwire.RPCHas:            &rpcwire.Req{CID: c0.Bytes()},
		rpcwire.RPCPut:            &rpcwire.Req{Blocks: []rpcwire.Block{{CID: v.CID.Bytes(), Data: v.Data}}},
		rpcwire.RPCAllCIDs:        &rpcwire.Req{},
		rpcwire.RPCPrefix:         &rpcwire.Req{Prefix: c0.Bytes()[:6]},
		rpcwire.RPCHead:           &rpcwire.Req{Agent: "lumen"},
		rpcwire.RPCSwapHead:       &rpcwire.Req{Agent: "lumen", Old: cur, Seq: seq, Entry: entry, Head: head},
		rpcwire.RPCHeads:          &rpcwire.Req{},
		rpcwire.RPCLog:            &rpcwire.Req{Agent: "lumen"},
		rpcwire.RPCAppendLines:    &rpcwire.Req{Agent: "lumen", Lines: [][]byte{[]byte(`{"n":2}`)}},
		rpcwire.RPCTapeLines:      &rpcwire.Req{Agent: "lumen"},
		rpcwire.RPCGetMeta:        &rpcwire.Req{Name: "note"},
		rpcwire.RPCSetMeta:        &rpcwire.Req{Name: "note", Value: []byte("w")},
		rpcwire.RPCMetaPrefix:     &rpcwire.Req{Name: ""},
		rpcwire.RPCDeleteMeta:     &rpcwire.Req{Name: "no"},
		rpcwire.RPCWatch:          &rpcwire.Req{},
		rpcwire.RPCGC:             &rpcwire.Req{DryRun: true},
		rpcwire.RPCExec:           &rpcwire.ExecStart{Args: []string{"agentstate", "log"}, Dir: "/w", Env: []string{"A=1"}, Width: 80},
		rpcwire.RPCForget:         &rpcwire.Req{Agents: []string{"lumen"}, Value: []byte(`{"last":5}`), DryRun: true},
		rpcwire.RPCAdoptCuts:      &rpcwire.Req{Agent: "lumen", Value: []byte(`[]`)},
		fuzzRPCs[len(fuzzRPCs)-1]: &rpcwire.Req{Agent: "lumen"},
	}
	for i, rpc := range fuzzRPCs {
		b, err := rpcwire.Encoding.Marshal(good[rpc])
		if err != nil {
			f.Fatal(err)
		}
		for tr := range fuzzTransports {
			f.Add(byte(i+tr*len(fuzzRPCs)), b)
		}
		f.Add(byte(i), []byte{})
		f.Add(byte(i), []byte{0xa1, 0x01, 0x62, 0x2e, 0x2e})                   // {1: ".."}
		f.Add(byte(i), []byte{0xa1, 0x0a, 0x66, 'f', 'o', 'r', 'm', 'a', 't'}) // {10: "format"}
		f.Add(byte(i), []byte{0xa1, 0x03, 0x81, 0x43, 0x01, 0x55, 0x12})       // {3: [h'015512']}
	}

	f.Fuzz(func(t *testing.T, which byte, body []byte) {
		rpc := fuzzRPCs[int(which)%len(fuzzRPCs)]
		tr := int(which) / len(fuzzRPCs) % fuzzTransports
		cn := ft.conn(t, tr)
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if ft.toks[tr] != "" {
			cctx = drpcmetadata.Add(cctx, rpcwire.Token, ft.toks[tr])
		}
		err := func() error {
			st, err := cn.NewStream(cctx, rpc, rawEncoding{})
			if err != nil {
				return err
			}
			defer st.Close()
			if err := st.MsgSend(&body, rawEncoding{}); err != nil {
				return err
			}
			if err := st.CloseSend(); err != nil {
				return err
			}
			for n := 0; ; n++ {
				var out []byte
				if err := st.MsgRecv(&out, rawEncoding{}); err != nil {
					if errors.Is(err, io.EOF) {
						return nil
					}
					return err
				}
				if rpc == rpcwire.RPCWatch || n > 100000 {
					return nil // a watch never ends by itself
				}
			}
		}()
		if err != nil && strings.Contains(err.Error(), "internal error") {
			t.Fatalf("%s: the server panicked: %v", rpc, err)
		}
		if cctx.Err() != nil {
			t.Fatalf("%s: no answer in 10s (%v)", rpc, err)
		}
		// The server serves on, its store intact.
		if _, err := ft.c.Status(ctx); err != nil {
			t.Fatalf("after %s: the server no longer answers: %v", rpc, err)
		}
		if v, ok, err := local.Storage.GetMeta(ctx, "format"); err != nil || !ok || !bytes.Equal(v, format) {
			t.Fatalf("after %s: format record %q %v %v", rpc, v, ok, err)
		}
		if rep, err := local.Verify(ctx); err != nil || len(rep.Problems) > 0 {
			t.Fatalf("after %s: verify: %v %v", rpc, err, rep.Problems)
		}
	})
}
