package httpstore_test

import (
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
	storetest.Run(t, storetest.Suite{
		New: func(t *testing.T) walrus.Store {
			c, _ := newClient(t, nil, httpstore.WithPartSize(64<<10))
			return c
		},
		LargeSize: 3*64<<10 + 123, // four parts
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
