package remote_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
	"github.com/agentstate/agentstate/internal/rpcwire"
)

// A client forgets several agents in the server with one collection, as a
// local repository does; a request naming an agent badly, or both one agent
// and several, is refused and changes nothing.
func TestForgetAgentsServed(t *testing.T) {
	ctx := context.Background()
	local, _, c := startServed(t, remote.Options{})
	client := repo.New(c)
	for _, a := range []string{"a", "b"} {
		for i := range 6 {
			putKey(t, local, a, "k", fmt.Sprint(strings.Repeat("v", 500), i)) // blocks a client stored hold gc off a while
		}
	}
	sock := remote.SocketPath(local.Dir)
	policy := []byte(`{"last":1}`)
	before := stateOf(t, local, "a", "b")
	for name, q := range map[string]*rpcwire.Req{
		"a bad agent name":   {Agents: []string{"a", "../b"}, Value: policy},
		"Agent and Agents":   {Agent: "a", Agents: []string{"b"}, Value: policy},
		"an empty agent":     {Agents: []string{""}, Value: policy},
		"a malformed policy": {Agents: []string{"a"}, Value: []byte(`{"last":"x"}`)},
		"too many agents":    {Agents: slices.Repeat([]string{"a"}, 1<<16+1), Value: policy},
	} {
		_, err := invokeRaw(t, sock, rpcwire.RPCForget, "", encode(t, q))
		wantCode(t, name, err, rpcwire.CodeBadRequest)
	}
	if after := stateOf(t, local, "a", "b"); after != before {
		t.Fatal("a refused forget changed the store")
	}
	reps, gc, err := client.ForgetAgents(ctx, []string{"a", "b"}, repo.Policy{Last: 1}, false)
	if err != nil || len(reps) != 2 || reps[0].Agent != "a" || reps[1].Agent != "b" || reps[0].CutOps != 5 || gc.Deleted == 0 {
		t.Fatalf("forget through the server: %v %+v %+v", err, reps, gc)
	}
	if more, err := client.GC(ctx, true); err != nil || more.Deleted != 0 {
		t.Fatalf("gc after it would free %+v (%v)", more, err)
	}
	// One agent, as before: its report carries the collection.
	putKey(t, local, "a", "k", "new")
	rep, err := client.Forget(ctx, "a", repo.Policy{Last: 1}, false)
	if err != nil || rep.Agent != "a" || rep.CutOps != 1 || rep.GC.Kept == 0 {
		t.Fatalf("forget of one agent through the server: %v %+v", err, rep)
	}
	verifyClean(t, local)
}
