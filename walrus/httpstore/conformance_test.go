package httpstore_test

import (
	"sync"
	"testing"
	"time"

	"github.com/agentstate/agentstate/walrus"
	"github.com/agentstate/agentstate/walrus/httpstore"
	"github.com/agentstate/agentstate/walrus/storetest"
	"github.com/agentstate/agentstate/walrus/walrustest"
)

// newClient starts a test server and a client for it with fast retries.
func newClient(t testing.TB, serverOpts []walrustest.Option, opts ...httpstore.Option) (*httpstore.Client, *walrustest.Server) {
	t.Helper()
	srv := walrustest.NewServer(t, serverOpts...)
	opts = append([]httpstore.Option{
		httpstore.WithHTTPClient(srv.Client()),
		httpstore.WithRetry(4, time.Millisecond, 5*time.Millisecond),
		httpstore.WithSpool(t.TempDir(), 64<<10),
	}, opts...)
	c, err := httpstore.New(srv.URL, srv.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c, srv
}

func TestConformance(t *testing.T) {
	var mu sync.Mutex
	servers := map[walrus.Store]*walrustest.Server{}
	storetest.Run(t, storetest.Suite{
		New: func(t *testing.T) walrus.Store {
			c, srv := newClient(t, nil, httpstore.WithPartSize(64<<10), httpstore.WithTimeouts(fastTimeouts))
			mu.Lock()
			servers[c] = srv
			mu.Unlock()
			return c
		},
		LargeSize: 3*64<<10 + 123, // four parts
		Stall: func(t *testing.T, st walrus.Store) {
			mu.Lock()
			srv := servers[st]
			mu.Unlock()
			srv.Inject(walrustest.Fault{Kind: walrustest.Stall, Method: "GET", Count: 1 << 20})
			srv.Inject(walrustest.Fault{Kind: walrustest.Hang, Method: "PUT", Count: 1 << 20})
		},
		StallBound: bound,
	})
}

func TestConformanceSnakeCase(t *testing.T) {
	storetest.Run(t, storetest.Suite{
		New: func(t *testing.T) walrus.Store {
			c, _ := newClient(t, []walrustest.Option{walrustest.WithSnakeCase()}, httpstore.WithPartSize(32<<10))
			return c
		},
		LargeSize: 100 << 10,
	})
}
