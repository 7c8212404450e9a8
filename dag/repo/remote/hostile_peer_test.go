package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/storage/memory"
	"github.com/agentstate/agentstate/internal/rpcwire"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"storj.io/drpc"
	"storj.io/drpc/drpcserver"
)

// A lying sync peer: a TCP server that answers as a real store (the calls
// of this package over r) except for the RPCs in lies, which it answers
// with a lie of its own (a stream that never ends, an answer that never
// comes). It takes any token. It listens on 127.0.0.1 and stops with t.
func hostilePeer(t *testing.T, r *repo.Repo, lies map[string]func(ctx context.Context, st drpc.Stream) error) string {
	return hostilePeerB(t, t, r, lies)
}

func hostilePeerB(t testing.TB, _ *testing.T, r *repo.Repo, lies map[string]func(ctx context.Context, st drpc.Stream) error) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	honest := &handler{s: &Server{r: r, started: time.Now()}, local: true}
	srv := drpcserver.NewWithOptions(handlerFunc(func(st drpc.Stream, rpc string) error {
		if lie := lies[rpc]; lie != nil {
			var q rpcwire.Req
			if err := st.MsgRecv(&q, rpcwire.Encoding); err != nil {
				return err
			}
			return lie(ctx, st)
		}
		return honest.HandleRPC(st, rpc)
	}), drpcserver.Options{Manager: ManagerOptions()})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				hdr := make([]byte, len(Header))
				if _, err := io.ReadFull(c, hdr); err != nil || string(hdr) != Header {
					return
				}
				srv.ServeOne(ctx, c)
			}()
		}
	}()
	t.Cleanup(func() { cancel(); l.Close(); wg.Wait() })
	return l.Addr().String()
}

type handlerFunc func(st drpc.Stream, rpc string) error

func (f handlerFunc) HandleRPC(st drpc.Stream, rpc string) error { return f(st, rpc) }

// endless sends m for ever (until the client goes away).
func endless(m func(i int) *rpcwire.Resp) func(ctx context.Context, st drpc.Stream) error {
	return func(ctx context.Context, st drpc.Stream) error {
		for i := 0; ; i++ {
			if err := st.MsgSend(m(i), rpcwire.Encoding); err != nil {
				return err
			}
		}
	}
}

// silent never answers (until the client goes away).
func silent(ctx context.Context, st drpc.Stream) error {
	select {
	case <-st.Context().Done():
	case <-ctx.Done():
	}
	return nil
}

// peerLimits are small bounds for the tests (the defaults are the same
// mechanism with larger figures): an endless list ends at its items or
// bytes long before ListWait; dripLimits' ListWait ends a list that drips
// more often than Wait.
var (
	peerLimits = Limits{Items: 10000, Bytes: 4 << 20, Wait: 2 * time.Second, ListWait: 10 * time.Minute}
	dripLimits = Limits{Items: 10000, Bytes: 4 << 20, Wait: 2 * time.Second, ListWait: 5 * time.Second}
)

// putAgent commits key=val on agent.
func putAgent(t testing.TB, r *repo.Repo, agent, key, val string) objects.CID {
	t.Helper()
	v := objects.NewValue([]byte(val))
	id, err := r.Edit(context.Background(), repo.EditRequest{Agent: agent, Create: true, Message: "put " + key, Blocks: []objects.Block{v},
		Edit: func(ctx context.Context, tr *objects.Tree) (bool, error) { return tr.Put(ctx, key, v.CID) }})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// The peer lies in each way the client must survive: a list of agents, of
// receipt lines, of cut records (checkpoints) or of operation-log records
// that never ends, a list that stops without ending, a call never answered.
// Each is refused with a clear error within the bounds, and a pull from it
// changes nothing here: HEAD, the operation log, the receipts, the keys and
// the checkpoints are as they were.
func TestHostilePeerStreams(t *testing.T) {
	ctx := context.Background()
	// The peer's store: lumen two commits ahead of ours, with receipts.
	src := repo.New(memory.New())
	base := putAgent(t, src, "lumen", "a", "1")
	dst := repo.New(memory.New())
	if _, err := dst.Transfer(ctx, src, "lumen", "lumen", true, refs.OpClone, "clone"); err != nil {
		t.Fatal(err)
	}
	putAgent(t, src, "lumen", "b", "2")
	putAgent(t, src, "lumen", "c", "3")
	if _, err := src.Tape.Append(ctx, "lumen", []byte(`{"task":"t-1"}`)); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		var b bytes.Buffer
		h, err := dst.Refs.Head(ctx, "lumen")
		fmt.Fprintln(&b, h.Commit, err)
		for rec, err := range dst.Storage.LogRecords(ctx, "lumen") {
			fmt.Fprintln(&b, rec.Seq, string(rec.Data), err)
		}
		for l, err := range dst.Tape.Lines(ctx, "lumen") {
			fmt.Fprintln(&b, string(l), err)
		}
		dst.Storage.MetaPrefix(ctx, "", func(name string, v []byte) error {
			if !bytes.HasPrefix([]byte(name), []byte("bundle/")) {
				fmt.Fprintln(&b, name, string(v))
			}
			return nil
		})
		return b.String()
	}
	before := state()
	if h, _ := dst.Refs.Head(ctx, "lumen"); h.Commit != base {
		t.Fatal("the clone is not at the base")
	}

	line := bytes.Repeat([]byte("x"), 1000)
	headRec, _, err := src.Storage.HeadRecord(ctx, "lumen")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		lies map[string]func(context.Context, drpc.Stream) error
		do   func(src *repo.Repo) error
		want error
		lim  *Limits
	}{
		// First: the later cases' transfers leave the blocks here
		// (unreferenced), and then need no block from the peer.
		{"a block never sent", map[string]func(context.Context, drpc.Stream) error{rpcwire.RPCGet: silent}, nil, ErrTimeout, nil},
		{"endless agents", map[string]func(context.Context, drpc.Stream) error{rpcwire.RPCHeads: endless(func(i int) *rpcwire.Resp {
			return &rpcwire.Resp{Agent: fmt.Sprintf("agent-%d", i), Seq: 1, Data: headRec}
		})}, func(src *repo.Repo) error { _, err := src.Refs.Agents(ctx); return err }, repo.ErrTooMuch, nil},
		{"endless receipts", map[string]func(context.Context, drpc.Stream) error{rpcwire.RPCTapeLines: endless(func(i int) *rpcwire.Resp {
			return &rpcwire.Resp{Data: []byte(fmt.Sprintf(`{"task":"t-%d","pad":"%s"}`, i, line))}
		})}, nil, repo.ErrTooMuch, nil},
		{"endless cut records", map[string]func(context.Context, drpc.Stream) error{rpcwire.RPCMetaPrefix: endless(func(i int) *rpcwire.Resp {
			return &rpcwire.Resp{Agent: fmt.Sprintf("checkpoint/a-%d", i), Data: []byte(`{"agent":"a","cuts":[]}`)}
		})}, nil, repo.ErrTooMuch, nil},
		{"endless operation log", map[string]func(context.Context, drpc.Stream) error{rpcwire.RPCLog: endless(func(i int) *rpcwire.Resp {
			return &rpcwire.Resp{Agent: "lumen", Seq: uint64(i), Data: line}
		})}, func(src *repo.Repo) error {
			for _, err := range src.Storage.LogRecords(ctx, "lumen") {
				if err != nil {
					return err
				}
			}
			return nil
		}, repo.ErrTooMuch, nil},
		{"receipts that drip for ever", map[string]func(context.Context, drpc.Stream) error{rpcwire.RPCTapeLines: func(ctx context.Context, st drpc.Stream) error {
			for i := 0; ; i++ {
				select {
				case <-time.After(dripLimits.Wait / 4):
				case <-st.Context().Done():
					return nil
				}
				if err := st.MsgSend(&rpcwire.Resp{Data: []byte(fmt.Sprintf(`{"task":"t-%d"}`, i))}, rpcwire.Encoding); err != nil {
					return err
				}
			}
		}}, nil, ErrTimeout, &dripLimits},
		{"receipts that stop", map[string]func(context.Context, drpc.Stream) error{rpcwire.RPCTapeLines: silent}, nil, ErrTimeout, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			addr := hostilePeer(t, src, c.lies)
			lim := peerLimits
			if c.lim != nil {
				lim = *c.lim
			}
			cl, err := Dial(ctx, addr, DialOptions{Token: "any", Limits: lim})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			peer := repo.New(cl)
			do := c.do
			if do == nil {
				do = func(src *repo.Repo) error {
					_, err := dst.Transfer(ctx, src, "lumen", "lumen", false, refs.OpPull, "pull from "+addr)
					return err
				}
			}
			err = do(peer)
			if !errors.Is(err, c.want) {
				t.Fatalf("%s: %v, want %v", c.name, err, c.want)
			}
			t.Logf("%s: %v", c.name, err)
			if got := state(); got != before {
				t.Fatalf("%s changed this store:\n%s\nwas:\n%s", c.name, got, before)
			}
		})
	}
	// The honest peer: the same pull goes through.
	addr := hostilePeer(t, src, nil)
	cl, err := Dial(ctx, addr, DialOptions{Token: "any", Limits: peerLimits})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	tr, err := dst.Transfer(ctx, repo.New(cl), "lumen", "lumen", false, refs.OpPull, "pull from "+addr)
	if err != nil || tr.HEAD.Outcome != "fast-forward" || tr.Receipts != 1 {
		t.Fatalf("honest pull: %+v %v", tr, err)
	}
}

// BenchmarkEndlessListDefaultLimits: a peer whose list of agents, or of
// receipt lines, never ends, against a client with the default limits; it
// reports the client's peak heap while it refuses (run with
// /usr/bin/time -v for the process's peak RSS).
func BenchmarkEndlessListDefaultLimits(b *testing.B) {
	ctx := context.Background()
	src := repo.New(memory.New())
	putAgent(b, src, "lumen", "a", "1")
	headRec, _, _ := src.Storage.HeadRecord(ctx, "lumen")
	pad := bytes.Repeat([]byte("x"), 1000)
	for _, c := range []struct {
		name string
		rpc  string
		m    func(i int) *rpcwire.Resp
		do   func(src *repo.Repo) error
	}{
		{"agents", rpcwire.RPCHeads, func(i int) *rpcwire.Resp {
			return &rpcwire.Resp{Agent: fmt.Sprintf("agent-%d", i), Seq: 1, Data: headRec}
		}, func(src *repo.Repo) error { _, err := src.Refs.Agents(ctx); return err }},
		{"receipts", rpcwire.RPCTapeLines, func(i int) *rpcwire.Resp {
			return &rpcwire.Resp{Data: []byte(fmt.Sprintf(`{"task":"t-%d","pad":"%s"}`, i, pad))}
		}, func(src *repo.Repo) error { _, err := repo.ReadReceipts(ctx, src, "lumen"); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				addr := hostilePeerB(b, nil, src, map[string]func(context.Context, drpc.Stream) error{c.rpc: endless(c.m)})
				cl, err := Dial(ctx, addr, DialOptions{Token: "any"})
				if err != nil {
					b.Fatal(err)
				}
				var peak atomic.Uint64
				stop := make(chan struct{})
				go func() {
					var ms goruntime.MemStats
					for {
						goruntime.ReadMemStats(&ms)
						if ms.HeapAlloc > peak.Load() {
							peak.Store(ms.HeapAlloc)
						}
						select {
						case <-stop:
							return
						case <-time.After(20 * time.Millisecond):
						}
					}
				}()
				err = c.do(repo.New(cl))
				close(stop)
				cl.Close()
				if !errors.Is(err, repo.ErrTooMuch) {
					b.Fatalf("%s: %v", c.name, err)
				}
				b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
				b.Logf("%s: %v", c.name, err)
			}
		})
	}
}
