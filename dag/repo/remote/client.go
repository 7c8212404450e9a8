package remote

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/rpcwire"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"storj.io/drpc"
	"storj.io/drpc/drpcconn"
	"storj.io/drpc/drpcerr"
	"storj.io/drpc/drpcmetadata"
)

// Errors a client reports from a server's answer.
var (
	ErrUnauthorized = errors.New("remote: the server refused the token")
	ErrReadOnly     = errors.New("remote: the token may only read")
	ErrNoExec       = errors.New("remote: the server does not run command lines")
	ErrNoServer     = errors.New("remote: no server is listening")
	// ErrTimeout: the server did not answer a call, or send the next
	// message of a list, within Limits.Wait, or all of a list within
	// Limits.ListWait.
	ErrTimeout = errors.New("remote: the server did not answer in time")
)

// Limits bound what a client takes from a server, which is not trusted to
// end what it sends: a list longer than its bound is refused with an error
// matching repo.ErrTooMuch, a server that keeps the client waiting with
// ErrTimeout. The zero value of a field is its default.
type Limits struct {
	// Items and Bytes, when set, bound every list (tests); by default each
	// list has its own bounds (listBounds).
	Items int
	Bytes int64
	// Wait bounds each wait for the server: the answer to a call, the next
	// message of a list (default 2 minutes). Forget and GC, which do their
	// work before they answer, wait for the caller's context alone.
	Wait time.Duration
	// ListWait bounds the time spent waiting for the messages of one list
	// in all (default 30 minutes; the caller's own time between messages
	// is not counted). A watch, which waits for HEAD moves, has no bound.
	ListWait time.Duration
}

// listBound is how much of one list a client takes.
type listBound struct {
	what  string
	items int   // items (records, lines; block ids)
	bytes int64 // bytes of the messages' payloads
	wait  bool  // bounded in time (all but a watch)
}

// listBounds are the default bounds of each list RPC: far above what a real
// store sends (an agent's whole log, a store's every block id), and what a
// process can hold.
var listBounds = map[string]listBound{
	rpcwire.RPCHeads:      {"list of agents", 1 << 18, 64 << 20, true},
	rpcwire.RPCLog:        {"operation log", 1 << 22, 1 << 30, true},
	rpcwire.RPCTapeLines:  {"list of receipt lines", 1 << 22, 1 << 30, true},
	rpcwire.RPCMetaPrefix: {"list of metadata records", 1 << 20, 256 << 20, true},
	rpcwire.RPCAllCIDs:    {"list of blocks", 1 << 28, 16 << 30, true},
	rpcwire.RPCWatch:      {"round of HEAD records", 1 << 18, 64 << 20, false},
}

const (
	defaultWait     = 2 * time.Minute
	defaultListWait = 30 * time.Minute
)

func (c *Client) wait() time.Duration {
	if c.opts.Limits.Wait > 0 {
		return c.opts.Limits.Wait
	}
	return defaultWait
}

func (c *Client) bound(rpc string) listBound {
	b := listBounds[rpc]
	if b.what == "" {
		b = listBound{rpc, 1 << 20, 256 << 20, true}
	}
	if c.opts.Limits.Items > 0 {
		b.items = c.opts.Limits.Items
	}
	if c.opts.Limits.Bytes > 0 {
		b.bytes = c.opts.Limits.Bytes
	}
	return b
}

// respSize is what a message of a list weighs: its payload's bytes.
func respSize(m *rpcwire.Resp) int64 {
	n := int64(len(m.Data) + len(m.Agent) + 16)
	for _, c := range m.CIDs {
		n += int64(len(c)) + 2
	}
	return n
}

// respItems is how many items a message of a list carries.
func respItems(m *rpcwire.Resp) int {
	if len(m.CIDs) > 0 {
		return len(m.CIDs)
	}
	return 1
}

// DialOptions configure a client.
type DialOptions struct {
	Token string      // bearer token (TCP)
	TLS   *tls.Config // TCP with TLS
	// Timeout bounds connecting (default 5s).
	Timeout time.Duration
	// Limits bound what the client takes from the server.
	Limits Limits
}

// Client is a served repository's storage: a repo.Storage whose every call
// goes to the server. It is safe for concurrent use (a pool of connections,
// one call at a time on each).
type Client struct {
	network, addr string
	opts          DialOptions

	mu     sync.Mutex
	idle   []pooled
	closed bool
	access Access // what the server said the token may do (0: not asked yet)
}

// pooled is an idle connection and when it was last used.
type pooled struct {
	cn    *drpcconn.Conn
	since time.Time
}

// maxIdle is how long a pooled connection is reused: a TCP server closes a
// connection idle for two minutes (docs/service.md §4.2), so the pool
// gives one up well before.
const maxIdle = time.Minute

// Dial connects to a server: addr is a Unix socket path (see SocketPath) or
// host:port. It fails with ErrNoServer when nothing listens there (a socket
// file left by a killed server included).
func Dial(ctx context.Context, addr string, opts DialOptions) (*Client, error) {
	network := "tcp"
	if strings.Contains(addr, "/") {
		network = "unix"
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	c := &Client{network: network, addr: addr, opts: opts}
	cn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	c.put(cn)
	return c, nil
}

func (c *Client) dial(ctx context.Context) (*drpcconn.Conn, error) {
	d := net.Dialer{Timeout: c.opts.Timeout}
	addr := c.addr
	if c.network == "unix" {
		a, release, err := rpcwire.SocketAddr(addr)
		if err != nil {
			return nil, fmt.Errorf("%w at %s: %v", ErrNoServer, c.addr, err)
		}
		defer release()
		addr = a
	}
	nc, err := d.DialContext(ctx, c.network, addr)
	if err != nil {
		if c.network == "unix" {
			return nil, fmt.Errorf("%w at %s: %v", ErrNoServer, c.addr, err)
		}
		return nil, fmt.Errorf("remote: connecting to %s: %w", c.addr, err)
	}
	if c.opts.TLS != nil {
		cfg := c.opts.TLS
		if cfg.ServerName == "" { // as tls.Dial does: the host dialled
			cfg = cfg.Clone()
			cfg.ServerName, _, _ = net.SplitHostPort(c.addr)
		}
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("remote: TLS with %s: %w", c.addr, err)
		}
		nc = tc
	}
	if c.network == "tcp" {
		// The TCP listener also speaks HTTP: this says the API follows.
		if _, err := io.WriteString(nc, Header); err != nil {
			nc.Close()
			return nil, fmt.Errorf("remote: connecting to %s: %w", c.addr, err)
		}
	}
	return drpcconn.NewWithOptions(nc, drpcconn.Options{Manager: ManagerOptions()}), nil
}

func (c *Client) get(ctx context.Context) (*drpcconn.Conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errors.New("remote: client closed")
	}
	for len(c.idle) > 0 {
		p := c.idle[len(c.idle)-1]
		c.idle = c.idle[:len(c.idle)-1]
		select {
		case <-p.cn.Closed():
			continue
		default:
		}
		if time.Since(p.since) > maxIdle {
			p.cn.Close()
			continue
		}
		c.mu.Unlock()
		return p.cn, nil
	}
	c.mu.Unlock()
	return c.dial(ctx)
}

func (c *Client) put(cn *drpcconn.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case <-cn.Closed():
		return
	default:
	}
	if c.closed || len(c.idle) >= 8 {
		cn.Close()
		return
	}
	c.idle = append(c.idle, pooled{cn: cn, since: time.Now()})
}

// Close closes the idle connections; calls in flight finish on theirs.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, p := range c.idle {
		p.cn.Close()
	}
	c.idle = nil
	return nil
}

func (c *Client) ctx(ctx context.Context) context.Context {
	if c.opts.Token != "" {
		return drpcmetadata.Add(ctx, rpcwire.Token, c.opts.Token)
	}
	return ctx
}

// invoke makes one unary call.
func (c *Client) invoke(ctx context.Context, rpc string, q *rpcwire.Req) (*rpcwire.Resp, error) {
	cn, err := c.get(ctx)
	if err != nil {
		return nil, err
	}
	var out rpcwire.Resp
	ictx := c.ctx(ctx)
	var timedOut atomic.Bool
	if rpc != rpcwire.RPCForget && rpc != rpcwire.RPCGC {
		var cancel context.CancelFunc
		ictx, cancel = context.WithCancel(ictx)
		t := time.AfterFunc(c.wait(), func() { timedOut.Store(true); cancel() })
		defer func() { t.Stop(); cancel() }()
	}
	err = cn.Invoke(ictx, rpc, rpcwire.Encoding, q, &out)
	if timedOut.Load() && err != nil && ctx.Err() == nil {
		cn.Close()
		return nil, fmt.Errorf("%w: no answer to %s within %s", ErrTimeout, strings.TrimPrefix(rpc, "/agentstate.v1/"), c.wait())
	}
	if err != nil && drpcerr.Code(err) == 0 {
		// Not an answer but (perhaps) a broken connection, which drpc may
		// not have noticed yet: never hand it to the next call.
		cn.Close()
	} else {
		c.put(cn)
	}
	if err != nil {
		return nil, localError(ctx, err)
	}
	return &out, nil
}

// stream makes one streaming call and yields its messages, within the
// list's bounds (Limits): too many items or bytes end it with an error
// matching repo.ErrTooMuch, a server that keeps the client waiting with
// ErrTimeout.
func (c *Client) stream(ctx context.Context, rpc string, q *rpcwire.Req) iter.Seq2[*rpcwire.Resp, error] {
	return func(yield func(*rpcwire.Resp, error) bool) {
		b := c.bound(rpc)
		cn, err := c.get(ctx)
		if err != nil {
			yield(nil, err)
			return
		}
		sctx, cancel := context.WithCancel(c.ctx(ctx))
		defer cancel()
		// The server's time: each wait at most Wait, all of them at most
		// ListWait (the caller's time between messages is not counted).
		wait, listWait := c.wait(), c.opts.Limits.ListWait
		if listWait <= 0 {
			listWait = defaultListWait
		}
		var timedOut atomic.Bool
		timer := time.AfterFunc(time.Hour, func() { timedOut.Store(true); cancel() })
		timer.Stop()
		defer timer.Stop()
		var waited time.Duration
		waitFor := func() time.Time {
			if b.wait {
				timer.Reset(min(wait, max(listWait-waited, time.Millisecond)))
			}
			return time.Now()
		}
		waitedFor := func(since time.Time) {
			timer.Stop()
			waited += time.Since(since)
		}
		failed := func(err error) error {
			if !timedOut.Load() || ctx.Err() != nil {
				return localError(ctx, err)
			}
			if waited >= listWait {
				return fmt.Errorf("%w: the %s did not end within %s", ErrTimeout, b.what, listWait)
			}
			return fmt.Errorf("%w: nothing more of the %s within %s", ErrTimeout, b.what, wait)
		}
		t0 := waitFor()
		st, err := cn.NewStream(sctx, rpc, rpcwire.Encoding)
		if err != nil {
			waitedFor(t0)
			cn.Close()
			yield(nil, failed(err))
			return
		}
		done := false
		defer func() {
			if done {
				st.Close()
				c.put(cn)
			} else {
				cancel() // stopped early: the connection is not reusable
				cn.Close()
			}
		}()
		if err := st.MsgSend(q, rpcwire.Encoding); err != nil {
			waitedFor(t0)
			yield(nil, failed(err))
			return
		}
		if err := st.CloseSend(); err != nil {
			waitedFor(t0)
			yield(nil, failed(err))
			return
		}
		waitedFor(t0)
		items, size := 0, int64(0)
		for {
			var m rpcwire.Resp
			t0 := waitFor()
			err := st.MsgRecv(&m, rpcwire.Encoding)
			waitedFor(t0)
			if errors.Is(err, io.EOF) {
				done = true
				return
			}
			if err != nil {
				yield(nil, failed(err))
				return
			}
			if rpc == rpcwire.RPCWatch && m.OK {
				items, size = 0, 0 // a watch round ends
			} else {
				items += respItems(&m)
				size += respSize(&m)
			}
			if items > b.items || size > b.bytes {
				yield(nil, fmt.Errorf("%w: the server's %s is over %d items or %d bytes", repo.ErrTooMuch, b.what, b.items, b.bytes))
				return
			}
			if !yield(&m, nil) {
				return
			}
		}
	}
}

// localError maps a server's coded error back to the sentinel a local store
// would have returned.
func localError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var sentinel error
	switch drpcerr.Code(err) {
	case rpcwire.CodeNotFound:
		sentinel = objects.ErrNotFound
	case rpcwire.CodeSwapped:
		sentinel = refs.ErrSwapped
	case rpcwire.CodeUnauthorized:
		sentinel = ErrUnauthorized
	case rpcwire.CodeReadOnly:
		sentinel = ErrReadOnly
	case rpcwire.CodeDiskFull:
		sentinel = repo.ErrDiskFull
	case rpcwire.CodeNoExec:
		sentinel = ErrNoExec
	case rpcwire.CodeBadLanding:
		sentinel = repo.ErrBadLanding
	case rpcwire.CodeTagExists:
		sentinel = repo.ErrTagExists
	case rpcwire.CodeCorrupt:
		sentinel = objects.ErrHashMismatch
	case rpcwire.CodeNothingUndo:
		sentinel = refs.ErrNothingUndo
	case rpcwire.CodeNothingRedo:
		sentinel = refs.ErrNothingRedo
	case rpcwire.CodeHorizon:
		sentinel = repo.ErrHorizon
	case rpcwire.CodeNoAgent:
		sentinel = refs.ErrNoAgent
	default:
		if drpc.ClosedError.Has(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			return fmt.Errorf("remote: the server closed the connection (it went away, or it is at its connection limits: its log says which): %w", err)
		}
		return fmt.Errorf("remote: %w", err)
	}
	return &codedError{sentinel: sentinel, msg: err.Error()}
}

// corruptError is a block the server's store found corrupt: its message
// is the server's, and it unwraps to the HashMismatchError naming the
// block.
type corruptError struct {
	msg string
	hm  *objects.HashMismatchError
}

func (e *corruptError) Error() string { return e.msg }
func (e *corruptError) Unwrap() error { return e.hm }

type codedError struct {
	sentinel error
	msg      string
}

func (e *codedError) Error() string   { return e.msg }
func (e *codedError) Unwrap() error   { return e.sentinel }
func (e *codedError) Is(t error) bool { return t == e.sentinel }

// Get returns a block, re-hashed: the server is not trusted with content.
// A block the server's own store found corrupt is an
// *objects.HashMismatchError naming id, as a local store's is; its Actual
// is unset (the message carries the server's account).
func (c *Client) Get(ctx context.Context, id objects.CID) ([]byte, error) {
	r, err := c.invoke(ctx, rpcwire.RPCGet, &rpcwire.Req{CID: id.Bytes()})
	if errors.Is(err, objects.ErrNotFound) {
		return nil, &objects.NotFoundError{CID: id}
	}
	if errors.Is(err, objects.ErrHashMismatch) {
		return nil, &corruptError{msg: err.Error(), hm: &objects.HashMismatchError{Expected: id}}
	}
	if err != nil {
		return nil, err
	}
	if err := objects.Verify(id, r.Data); err != nil {
		return nil, fmt.Errorf("remote: the server sent wrong bytes for %s: %w", id, err)
	}
	return r.Data, nil
}

// Has reports whether the server holds a block.
func (c *Client) Has(ctx context.Context, id objects.CID) (bool, error) {
	r, err := c.invoke(ctx, rpcwire.RPCHas, &rpcwire.Req{CID: id.Bytes()})
	if err != nil {
		return false, err
	}
	return r.OK, nil
}

// Put sends blocks in batches of at most rpcwire.MaxBatch bytes.
func (c *Client) Put(ctx context.Context, blocks ...objects.Block) error {
	var batch []rpcwire.Block
	size := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := c.invoke(ctx, rpcwire.RPCPut, &rpcwire.Req{Blocks: batch})
		batch, size = nil, 0
		return err
	}
	for _, b := range blocks {
		if size > 0 && size+len(b.Data) > rpcwire.MaxBatch {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, rpcwire.Block{CID: b.CID.Bytes(), Data: b.Data})
		size += len(b.Data) + 64
	}
	return flush()
}

// AllCIDs lists every block the server holds.
func (c *Client) AllCIDs(ctx context.Context) iter.Seq2[objects.CID, error] {
	return func(yield func(objects.CID, error) bool) {
		for m, err := range c.stream(ctx, rpcwire.RPCAllCIDs, &rpcwire.Req{}) {
			if err != nil {
				yield(objects.CID{}, err)
				return
			}
			for _, b := range m.CIDs {
				id, err := objects.CIDFromBytes(b)
				if !yield(id, err) || err != nil {
					return
				}
			}
		}
	}
}

// CIDsWithPrefix finds the blocks whose CID bytes start with prefix.
func (c *Client) CIDsWithPrefix(ctx context.Context, prefix []byte) ([]objects.CID, error) {
	r, err := c.invoke(ctx, rpcwire.RPCPrefix, &rpcwire.Req{Prefix: prefix})
	if err != nil {
		return nil, err
	}
	out := make([]objects.CID, 0, len(r.CIDs))
	for _, b := range r.CIDs {
		id, err := objects.CIDFromBytes(b)
		if err != nil {
			return nil, fmt.Errorf("remote: the server sent a bad CID: %w", err)
		}
		out = append(out, id)
	}
	return out, nil
}

// HeadRecord reads an agent's HEAD record.
func (c *Client) HeadRecord(ctx context.Context, agent string) ([]byte, bool, error) {
	r, err := c.invoke(ctx, rpcwire.RPCHead, &rpcwire.Req{Agent: agent})
	if err != nil {
		return nil, false, err
	}
	return r.Data, r.OK, nil
}

// SwapHead moves a HEAD by compare-and-swap on the server.
func (c *Client) SwapHead(ctx context.Context, agent string, old []byte, seq uint64, entry, head []byte) error {
	_, err := c.invoke(ctx, rpcwire.RPCSwapHead, &rpcwire.Req{Agent: agent, Old: old, Seq: seq, Entry: entry, Head: head})
	return err
}

func (c *Client) records(ctx context.Context, rpc, agent string) iter.Seq2[refs.Record, error] {
	return func(yield func(refs.Record, error) bool) {
		for m, err := range c.stream(ctx, rpc, &rpcwire.Req{Agent: agent}) {
			if err != nil {
				yield(refs.Record{}, err)
				return
			}
			if !yield(refs.Record{Agent: m.Agent, Seq: m.Seq, Data: m.Data}, nil) {
				return
			}
		}
	}
}

// HeadRecords lists every agent's HEAD record.
func (c *Client) HeadRecords(ctx context.Context) iter.Seq2[refs.Record, error] {
	return c.records(ctx, rpcwire.RPCHeads, "")
}

// LogRecords lists an agent's operation-log records.
func (c *Client) LogRecords(ctx context.Context, agent string) iter.Seq2[refs.Record, error] {
	return c.records(ctx, rpcwire.RPCLog, agent)
}

// AppendLines appends receipt lines to an agent's tape.
func (c *Client) AppendLines(ctx context.Context, agent string, lines [][]byte) (uint64, error) {
	r, err := c.invoke(ctx, rpcwire.RPCAppendLines, &rpcwire.Req{Agent: agent, Lines: lines})
	if err != nil {
		return 0, err
	}
	return r.N, nil
}

// TapeLines lists an agent's receipt lines.
func (c *Client) TapeLines(ctx context.Context, agent string) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		for m, err := range c.stream(ctx, rpcwire.RPCTapeLines, &rpcwire.Req{Agent: agent}) {
			if !yield(dataOf(m), err) || err != nil {
				return
			}
		}
	}
}

func dataOf(m *rpcwire.Resp) []byte {
	if m == nil {
		return nil
	}
	return m.Data
}

// GetMeta reads a meta value.
func (c *Client) GetMeta(ctx context.Context, name string) ([]byte, bool, error) {
	r, err := c.invoke(ctx, rpcwire.RPCGetMeta, &rpcwire.Req{Name: name})
	if err != nil {
		return nil, false, err
	}
	return r.Data, r.OK, nil
}

// SetMeta writes a meta value.
func (c *Client) SetMeta(ctx context.Context, name string, v []byte) error {
	_, err := c.invoke(ctx, rpcwire.RPCSetMeta, &rpcwire.Req{Name: name, Value: v})
	return err
}

// MetaPrefix calls fn with every meta value whose name starts with prefix.
func (c *Client) MetaPrefix(ctx context.Context, prefix string, fn func(name string, v []byte) error) error {
	for m, err := range c.stream(ctx, rpcwire.RPCMetaPrefix, &rpcwire.Req{Name: prefix}) {
		if err != nil {
			return err
		}
		if err := fn(m.Agent, m.Data); err != nil {
			return err
		}
	}
	return nil
}

// DeleteMetaPrefix deletes every meta value whose name starts with prefix.
func (c *Client) DeleteMetaPrefix(ctx context.Context, prefix string) error {
	_, err := c.invoke(ctx, rpcwire.RPCDeleteMeta, &rpcwire.Req{Name: prefix})
	return err
}

// DeleteMeta removes the one meta record named name (repo.MetaDeleter).
func (c *Client) DeleteMeta(ctx context.Context, name string) error {
	_, err := c.invoke(ctx, rpcwire.RPCDeleteMeta, &rpcwire.Req{Name: name, Exact: true})
	return err
}

// Access asks the server what this client may do (asked once, then
// remembered): AccessOwner on the Unix socket, AccessWrite or AccessRead by
// the token's kind on TCP. A command asks before it writes, publishes or
// uploads anything, so that a token without the right changes nothing.
// ErrUnauthorized: the token is not known. A server too old to say answers
// AccessOwner here, and refuses writes itself as ever.
func (c *Client) Access(ctx context.Context) (Access, error) {
	c.mu.Lock()
	a := c.access
	c.mu.Unlock()
	if a != AccessNone {
		return a, nil
	}
	st, err := c.Status(ctx)
	if err != nil {
		return AccessNone, err
	}
	switch st.Access {
	case "read":
		a = AccessRead
	case "write":
		a = AccessWrite
	default:
		a = AccessOwner
	}
	c.mu.Lock()
	c.access = a
	c.mu.Unlock()
	return a, nil
}

// Status asks the server who holds the store.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	r, err := c.invoke(ctx, rpcwire.RPCStatus, &rpcwire.Req{})
	if err != nil {
		return nil, err
	}
	if r.Status == nil {
		return nil, errors.New("remote: the server sent no status")
	}
	return statusFromWire(r.Status), nil
}

// WatchHeads yields every agent's HEAD record now, and again after every
// HEAD move, in rounds: a round ends with a nil record. It stops when ctx
// ends or the server goes away.
func (c *Client) WatchHeads(ctx context.Context) iter.Seq2[*refs.Record, error] {
	return func(yield func(*refs.Record, error) bool) {
		for m, err := range c.stream(ctx, rpcwire.RPCWatch, &rpcwire.Req{}) {
			if err != nil {
				yield(nil, err)
				return
			}
			if m.OK {
				if !yield(nil, nil) {
					return
				}
				continue
			}
			if !yield(&refs.Record{Agent: m.Agent, Data: m.Data}, nil) {
				return
			}
		}
	}
}

// ForgetAgents runs a forget of agents in the server, beside its writers,
// with one collection (a repo.Forgetter).
func (c *Client) ForgetAgents(ctx context.Context, agents []string, p repo.Policy, dryRun bool) ([]repo.ForgetReport, repo.GCReport, error) {
	pj, err := json.Marshal(p)
	if err != nil {
		return nil, repo.GCReport{}, err
	}
	if len(agents) == 0 {
		return nil, repo.GCReport{}, nil
	}
	r, err := c.invoke(ctx, rpcwire.RPCForget, &rpcwire.Req{Agents: agents, Value: pj, DryRun: dryRun})
	if err != nil {
		return nil, repo.GCReport{}, err
	}
	var res ForgetResult
	if err := json.Unmarshal(r.Data, &res); err != nil {
		return nil, repo.GCReport{}, fmt.Errorf("remote: forget report: %w", err)
	}
	return res.Reports, res.GC, nil
}

// AdoptCuts records received cut links in the server (a repo.CutAdopter).
func (c *Client) AdoptCuts(ctx context.Context, agent string, links []repo.CutLink) error {
	v, err := json.Marshal(links)
	if err != nil {
		return err
	}
	_, err = c.invoke(ctx, rpcwire.RPCAdoptCuts, &rpcwire.Req{Agent: agent, Value: v})
	return err
}

var _ repo.TagWriter = (*Client)(nil)

// WriteTag sets (move: or moves) a tag in the server (a repo.TagWriter:
// repo.SetTag and MoveTag go through it). An existing tag naming another
// commit, without move, is repo.ErrTagExists.
func (c *Client) WriteTag(ctx context.Context, agent, name string, id objects.CID, move bool) error {
	_, err := c.invoke(ctx, rpcwire.RPCSetTag, &rpcwire.Req{Agent: agent, Name: name, CID: id.Bytes(), Force: move})
	return err
}

var _ repo.Undoer = (*Client)(nil)

// UndoRedo undoes (redo: redoes) agent's newest operation in the server
// (a repo.Undoer: repo.Undo and Redo go through it), where it takes turns
// with the server's own writers instead of racing them by compare-and-swap.
func (c *Client) UndoRedo(ctx context.Context, agent string, redo bool) (repo.Undone, error) {
	r, err := c.invoke(ctx, rpcwire.RPCUndo, &rpcwire.Req{Agent: agent, Redo: redo})
	if err != nil {
		return repo.Undone{}, err
	}
	var u repo.Undone
	if err := json.Unmarshal(r.Data, &u); err != nil {
		return repo.Undone{}, fmt.Errorf("remote: the server's undo answer is unreadable: %w", err)
	}
	if u.Entry.Agent != agent || (u.Entry.Op != refs.OpUndo && u.Entry.Op != refs.OpRedo) {
		return repo.Undone{}, fmt.Errorf("remote: the server answered an undo of %q with entry %d (%s) of %q", agent, u.Entry.Seq, u.Entry.Op, u.Entry.Agent)
	}
	return u, nil
}

// RemoveTag deletes a tag record in the server (repo.DeleteTag), and
// reports whether there was one.
func (c *Client) RemoveTag(ctx context.Context, agent, name string) (bool, error) {
	r, err := c.invoke(ctx, rpcwire.RPCDeleteTag, &rpcwire.Req{Agent: agent, Name: name})
	if err != nil {
		return false, err
	}
	return r.OK, nil
}

// ApplyKeyOp changes the keys the server trusts (a repo.KeyRecorder):
// learning keys needs a write token, trusting or untrusting them the Unix
// socket.
func (c *Client) ApplyKeyOp(ctx context.Context, op repo.KeyOp) (int, error) {
	v, err := json.Marshal(op)
	if err != nil {
		return 0, err
	}
	rpc := rpcwire.RPCTrustKeys
	if op.Op == repo.KeyOpLearn {
		rpc = rpcwire.RPCLearnKeys
	}
	r, err := c.invoke(ctx, rpc, &rpcwire.Req{Value: v})
	if err != nil && rpc == rpcwire.RPCTrustKeys && errors.Is(err, ErrReadOnly) {
		return 0, fmt.Errorf("%w: %w", repo.ErrNotOperator, err)
	}
	if err != nil {
		return 0, err
	}
	return int(r.N), nil
}

// GC runs gc in the server, beside its writers (a repo.Collector).
func (c *Client) GC(ctx context.Context, dryRun bool) (repo.GCReport, error) {
	r, err := c.invoke(ctx, rpcwire.RPCGC, &rpcwire.Req{DryRun: dryRun})
	if err != nil {
		return repo.GCReport{}, err
	}
	return repo.GCReport{Kept: int(r.Kept), Deleted: int(r.Deleted), BytesFreed: int64(r.Freed)}, nil
}
