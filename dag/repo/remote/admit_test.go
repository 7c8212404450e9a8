package remote_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentstate/agentstate/dag/repo/remote"
)

// Admit paces a client's connection once, at its first call, however many
// calls follow on it; another connection is admitted again; a refusal
// refuses the call, and the connection is asked again at its next call.
func TestAdmitPerConnection(t *testing.T) {
	var calls atomic.Int64
	var refuse atomic.Bool
	admit := func(ctx context.Context) error {
		calls.Add(1)
		if refuse.Load() {
			return errors.New("busy: try later")
		}
		return nil
	}
	local, _, c := startServed(t, remote.Options{Holder: "test", Admit: admit})
	ctx := context.Background()
	for range 5 {
		if _, err := c.Status(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.HeadRecord(ctx, "main"); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("10 calls on one connection were admitted %d times, want once", n)
	}
	c2, err := remote.Dial(ctx, remote.SocketPath(local.Dir), remote.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	refuse.Store(true)
	if _, err := c2.Status(ctx); err == nil || !strings.Contains(err.Error(), "busy: try later") {
		t.Fatalf("a refused connection's call: %v, want the refusal", err)
	}
	refuse.Store(false)
	if _, err := c2.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("admissions: %d, want 3 (one, a refusal, then the second connection's)", n)
	}
	if _, err := c.Status(ctx); err != nil { // the first connection stays admitted
		t.Fatal(err)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("admissions: %d after the first connection called again, want 3", n)
	}
}
