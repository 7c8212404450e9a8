package remote_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/internal/rpcwire"
	"storj.io/drpc/drpcmetadata"
	"storj.io/drpc/drpcwire"
)

const listenTok = "rw-token-0123456789"

// listening starts a TCP server whose log the test reads.
func listening(t *testing.T, opts remote.Options) (*remote.Server, string, func() string) {
	t.Helper()
	var mu sync.Mutex
	var log strings.Builder
	opts.Listen = "127.0.0.1:0"
	opts.Tokens = []string{listenTok}
	opts.Logf = func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		log.WriteString(strings.TrimSpace(fmt.Sprintf(format, a...)) + "\n")
	}
	local, srv, _ := startServed(t, opts)
	putKey(t, local, "lumen", "a", "1")
	return srv, tcpAddr(t, srv), func() string { mu.Lock(); defer mu.Unlock(); return log.String() }
}

// command is a normal served command over TCP: it must answer within a
// generous bound (a dead listener never does).
func command(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience(t))
	defer cancel()
	c, err := remote.Dial(ctx, addr, remote.DialOptions{Token: listenTok})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	if _, ok, err := c.HeadRecord(ctx, "lumen"); err != nil || !ok {
		t.Fatalf("a served command over TCP: %v %v", ok, err)
	}
}

// dialFrom connects to addr from a loopback source address of its own (all
// of 127/8 is the loopback interface), as a client on another host would.
func dialFrom(src, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	return d.Dial("tcp", addr)
}

// Connections are capped per source address and in all: one over a cap is
// closed at once, and a client from elsewhere is still served.
func TestConnectionLimits(t *testing.T) {
	srv, addr, _ := listening(t, remote.Options{MaxConns: 12, MaxConnsPerHost: 8})
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for i := 0; i < 8; i++ {
		c, err := dialFrom("127.0.0.2", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	closedAtOnce := func(src string) {
		t.Helper()
		c, err := dialFrom(src, addr)
		if err != nil {
			return // refused outright: as good
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("a connection from %s over the limit was kept: %v", src, err)
		}
	}
	closedAtOnce("127.0.0.2")
	command(t, addr) // 127.0.0.1: its own allowance
	for i := 0; i < 4; i++ {
		c, err := dialFrom("127.0.0.3", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	closedAtOnce("127.0.0.4") // 12 open in all
	if srv.Refused() < 2 {
		t.Fatalf("refused %d connections, want 2", srv.Refused())
	}
	for _, c := range held {
		c.Close()
	}
	held = nil
	// The server counts the closes as it reads them (bounded wait).
	for i := 0; i < 1000 && srv.Status().Clients > 1; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	command(t, addr)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// A connection that sends its header and then nothing, and an
// authenticated one idle after a call, are closed by the server.
func TestConnectionDeadlines(t *testing.T) {
	defer remote.SetTimeoutsForTest(200*time.Millisecond, 300*time.Millisecond)()
	_, addr, _ := listening(t, remote.Options{})
	closedByServer := func(what string, c net.Conn) {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := io.Copy(io.Discard, c)
		if isTimeout(err) {
			t.Fatalf("%s: the server kept the connection", what)
		}
	}
	for what, send := range map[string]string{
		"nothing":                 "",
		"half a header":           remote.Header[:4],
		"the header":              remote.Header,
		"the header, half a call": remote.Header + "\x0f\x01\x01",
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(send))
		closedByServer(what, c)
		c.Close()
	}
	// Authenticated and idle after a call.
	conn, _ := rawConn(t, addr)
	ctx := drpcmetadata.Add(context.Background(), rpcwire.Token, listenTok)
	var out rpcwire.Resp
	if err := conn.Invoke(ctx, rpcwire.RPCStatus, rpcwire.Encoding, &rpcwire.Req{}, &out); err != nil || out.Status == nil {
		t.Fatalf("status: %v", err)
	}
	select {
	case <-conn.Closed():
	case <-time.After(patience(t)):
		t.Fatal("an idle authenticated connection was kept")
	}
	command(t, addr)
}

// partial opens n connections from src that each send the header and
// then start a frame announcing size bytes, of which they send sent.
func partial(t *testing.T, addr, src string, n int, kind drpcwire.Kind, size, sent int) []net.Conn {
	return partialB(t, addr, src, n, kind, size, sent)
}

func partialB(t testing.TB, addr, src string, n int, kind drpcwire.Kind, size, sent int) []net.Conn {
	t.Helper()
	frame := []byte(remote.Header)
	if kind == drpcwire.KindMessage {
		// An invoke without metadata (no token), then the message.
		frame = drpcwire.AppendFrame(frame, drpcwire.Frame{Data: []byte("/agentstate.v1/Put"), ID: drpcwire.ID{Stream: 1, Message: 1}, Kind: drpcwire.KindInvoke, Done: true})
	}
	frame = append(frame, byte(kind<<1))
	frame = drpcwire.AppendVarint(frame, 1)
	frame = drpcwire.AppendVarint(frame, 2)
	frame = drpcwire.AppendVarint(frame, uint64(size))
	body := make([]byte, sent)
	conns := make([]net.Conn, 0, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := 0; i < n; i++ {
		c, err := dialFrom(src, addr)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, c)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			c.SetWriteDeadline(time.Now().Add(5 * time.Second))
			c.Write(frame)
			c.Write(body) // the server may close first
		}()
	}
	wg.Wait()
	return conns
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// Token-less connections announcing 15 MiB messages, before and after the
// invoke: the server refuses each at the frame's header, so its heap stays
// bounded, and a served command succeeds while they are open and after.
func TestPreAuthMessagesBounded(t *testing.T) {
	_, addr, _ := listening(t, remote.Options{MaxConns: 4096, MaxConnsPerHost: 4096})
	command(t, addr)
	before := heapInUse()
	var all []net.Conn
	all = append(all, partial(t, addr, "127.0.0.2", 100, drpcwire.KindMessage, 15<<20, 1<<20)...)
	all = append(all, partial(t, addr, "127.0.0.3", 100, drpcwire.KindInvokeMetadata, 15<<20, 1<<20)...)
	command(t, addr) // during
	during := heapInUse()
	grew := int64(during) - int64(before)
	t.Logf("server heap: %d MiB before, %d MiB with 200 token-less 15 MiB-announced connections (%+d KiB)", before>>20, during>>20, grew>>10)
	if grew > 32<<20 {
		t.Errorf("the heap grew by %d MiB for 200 token-less connections", grew>>20)
	}
	for _, c := range all {
		c.Close()
	}
	command(t, addr) // after
}

// A first call whose frames before the invoke exceed the pre-auth bound is
// refused, even in small frames: the server closes the connection.
func TestPreAuthBytesBounded(t *testing.T) {
	_, addr, _ := listening(t, remote.Options{})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := []byte(remote.Header)
	for len(msg) < 2*remote.PreAuthMax {
		msg = drpcwire.AppendFrame(msg, drpcwire.Frame{Data: make([]byte, 1000), ID: drpcwire.ID{Stream: 1, Message: 1}, Kind: drpcwire.KindInvokeMetadata})
	}
	c.Write(msg)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, c); isTimeout(err) {
		t.Fatalf("the server kept reading %d bytes sent before a token", len(msg))
	}
}

func rssKiB() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			var n int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(l, "VmRSS:"), "kB")), &n)
			return n
		}
	}
	return 0
}

// BenchmarkPreAuthHold measures the process (server and the idle client
// sockets) with 1000 token-less connections each holding a partial
// message: 15 MiB-announced messages (refused at their header), and
// first calls stalled just under the pre-auth bound (held until
// authTimeout). Run: go test ./dag/repo/remote -run '^$' -bench PreAuthHold -benchtime 1x
func BenchmarkPreAuthHold(b *testing.B) {
	for _, sc := range []struct {
		name       string
		kind       drpcwire.Kind
		size, sent int
	}{
		{"announced-15MiB", drpcwire.KindMessage, 15 << 20, 64 << 10},
		{"stalled-under-bound", drpcwire.KindInvokeMetadata, remote.PreAuthMax - 64, remote.PreAuthMax - 1024},
	} {
		b.Run(sc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				r, srv, _ := startServed(b, remote.Options{Listen: "127.0.0.1:0", Tokens: []string{listenTok}, MaxConns: 4096, MaxConnsPerHost: 4096})
				putKey(b, r, "lumen", "a", "1")
				addr := tcpAddr(b, srv)
				runtime.GC()
				idle, heap0 := rssKiB(), heapInUse()
				var all []net.Conn
				for _, src := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"} {
					all = append(all, partialB(b, addr, src, 250, sc.kind, sc.size, sc.sent)...)
				}
				time.Sleep(500 * time.Millisecond) // let the server read what it will
				held, heap1 := rssKiB(), heapInUse()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				c, err := remote.Dial(ctx, addr, remote.DialOptions{Token: listenTok})
				if err != nil {
					b.Fatal(err)
				}
				if _, ok, err := c.HeadRecord(ctx, "lumen"); err != nil || !ok {
					b.Fatalf("a command during: %v", err)
				}
				c.Close()
				cancel()
				b.ReportMetric(float64(idle)/1024, "MB-rss-idle")
				b.ReportMetric(float64(held-idle)/1024, "MB-rss-added")
				b.ReportMetric(float64(int64(heap1)-int64(heap0))/(1<<20), "MB-heap-added")
				for _, c := range all {
					c.Close()
				}
			}
		})
	}
}
