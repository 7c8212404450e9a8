package remote_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/dag/repo/remote"
)

// Trusted keys over the API: a write token may record keys learned with an
// agent's receipts (they sign nothing), but only the operator (the Unix
// socket) may trust or untrust a key; a malformed key operation is refused
// and changes nothing.
func TestTrustKeysOnlyByOperator(t *testing.T) {
	ctx := context.Background()
	local, srv, sock := startServed(t, remote.Options{Listen: "127.0.0.1:0", Tokens: []string{"rw-token-abcdefghijkl"}})
	tc, err := remote.Dial(ctx, tcpAddr(t, srv), remote.DialOptions{Token: "rw-token-abcdefghijkl"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	k := func(n int) string { return fmt.Sprintf("%064x", n) }
	signers := func() []string {
		keys, err := local.TrustedKeys(ctx, "lumen", repo.KeySignsHistory)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, k := range keys {
			out = append(out, repo.KeyHex(k))
		}
		return out
	}
	overTCP := repo.New(tc)
	for _, op := range []repo.KeyOp{
		{Op: repo.KeyOpTrust, Keys: []string{k(1)}},
		{Op: repo.KeyOpTrust, Agent: "lumen", Keys: []string{k(1)}},
		{Op: repo.KeyOpUntrust, Keys: []string{k(1)}},
	} {
		if _, err := overTCP.ApplyKeyOp(ctx, op); !errors.Is(err, remote.ErrReadOnly) {
			t.Fatalf("%+v with a write token: %v, want refused", op, err)
		}
	}
	// A raw request the client would not send is refused by the server.
	if _, err := tc.ApplyKeyOp(ctx, repo.KeyOp{Op: repo.KeyOpLearn, Agent: "lumen", Keys: []string{"not-hex"}}); err == nil {
		t.Fatal("a malformed key was learned")
	}
	if n, err := overTCP.ApplyKeyOp(ctx, repo.KeyOp{Op: repo.KeyOpLearn, Agent: "lumen", Keys: []string{k(2)}, Source: "a pull"}); err != nil || n != 1 {
		t.Fatalf("learn with a write token: %d %v", n, err)
	}
	if got := signers(); len(got) != 0 {
		t.Fatalf("keys signing lumen's history after a write token's calls: %v", got)
	}
	if keys, _ := local.TrustedKeys(ctx, "lumen", repo.KeyVerifiesReceipts); len(keys) != 1 || repo.KeyHex(keys[0]) != k(2) {
		t.Fatalf("keys verifying lumen's receipts: %x", keys)
	}
	// The operator, over the socket.
	overSock := repo.New(sock)
	if n, err := overSock.ApplyKeyOp(ctx, repo.KeyOp{Op: repo.KeyOpTrust, Agent: "lumen", Keys: []string{k(1)}}); err != nil || n != 1 {
		t.Fatalf("trust over the socket: %d %v", n, err)
	}
	if got := signers(); !slices.Equal(got, []string{k(1)}) {
		t.Fatalf("keys signing lumen's history: %v", got)
	}
	if n, err := overSock.ApplyKeyOp(ctx, repo.KeyOp{Op: repo.KeyOpUntrust, Agent: "lumen", Keys: []string{k(1), k(2)}}); err != nil || n != 2 {
		t.Fatalf("untrust over the socket: %d %v", n, err)
	}
	if recs, _ := local.Keys(ctx); len(recs) != 0 {
		t.Fatalf("records left: %+v", recs)
	}
}

// The record of the newest history manifest seen (export/history) is one a
// client writes when it restores or pushes a history through a served
// store: it is checked, and its seq never goes down.
func TestHistorySeenRecordChecked(t *testing.T) {
	ctx := context.Background()
	_, srv, _ := startServed(t, remote.Options{Listen: "127.0.0.1:0", Tokens: []string{"rw-token-abcdefghijkl"}})
	tc, err := remote.Dial(ctx, tcpAddr(t, srv), remote.DialOptions{Token: "rw-token-abcdefghijkl"})
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	rec := func(seq int) []byte {
		return []byte(fmt.Sprintf(`{"seq":%d,"sha256":"%064x","blob":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","time":1}`, seq, seq))
	}
	if err := tc.SetMeta(ctx, "history/lumen", rec(3)); err != nil {
		t.Fatal(err)
	}
	if err := tc.SetMeta(ctx, "history/lumen", rec(4)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ name, v string }{
		{"history/lumen", string(rec(2))},
		{"history/lumen", `{"seq":9}`},
		{"history/lumen", `not json`},
		{"history/bad name", string(rec(5))},
	} {
		if err := tc.SetMeta(ctx, bad.name, []byte(bad.v)); err == nil {
			t.Fatalf("%s = %s was written", bad.name, bad.v)
		}
	}
	if v, _, _ := tc.GetMeta(ctx, "history/lumen"); string(v) != string(rec(4)) {
		t.Fatalf("history/lumen = %s", v)
	}
}
