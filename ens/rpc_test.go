package ens

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// fakeRPC is a JSON-RPC endpoint that answers eth_chainId and answers eth_call
// by the called function's selector with canned results or errors, to play a
// misbehaving node.
type fakeRPC struct {
	calls map[string]string // selector (0x…) -> result hex, or "error:<message>"
	delay atomic.Int64      // nanoseconds to wait before answering
}

func (f *fakeRPC) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage   `json:"id"`
		Method string            `json:"method"`
		Params []json.RawMessage `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	if d := time.Duration(f.delay.Load()); d > 0 {
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	reply := func(result any, rpcErr string) {
		resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
		if rpcErr != "" {
			resp["error"] = map[string]any{"code": -32000, "message": rpcErr}
		} else {
			resp["result"] = result
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(resp)
	}
	switch req.Method {
	case "eth_chainId":
		reply("0x1", "")
	case "eth_getCode":
		reply("0x6080", "")
	case "eth_call":
		var arg struct {
			Input hexutil.Bytes `json:"input"`
			Data  hexutil.Bytes `json:"data"`
		}
		if len(req.Params) > 0 {
			_ = json.Unmarshal(req.Params[0], &arg)
		}
		in := arg.Input
		if len(in) == 0 {
			in = arg.Data
		}
		if len(in) < 4 {
			reply(nil, "no selector")
			return
		}
		res, ok := f.calls[hexutil.Encode(in[:4])]
		switch {
		case !ok:
			reply(nil, "unexpected call "+hexutil.Encode(in[:4]))
		case strings.HasPrefix(res, "error:"):
			reply(nil, strings.TrimPrefix(res, "error:"))
		default:
			reply(res, "")
		}
	default:
		reply(nil, "method not supported: "+req.Method)
	}
}

func dialFake(t *testing.T, h http.Handler) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, srv.URL, DefaultRegistry)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// word is an ABI word holding addr.
func word(a common.Address) string {
	return "0x" + strings.Repeat("00", 12) + strings.TrimPrefix(strings.ToLower(a.Hex()), "0x")
}

func TestMisbehavingRPC(t *testing.T) {
	resolver := common.HexToAddress("0x1111111111111111111111111111111111111111")
	const (
		selResolver = "0x0178b8bf"
		selText     = "0x59d1d43c"
	)
	for _, tc := range []struct {
		name  string
		calls map[string]string
		want  error
		parts []string // what the message must mention
	}{
		{"NodeError", map[string]string{selResolver: "error:header not found"},
			ErrRPC, []string{"resolver(bytes32)", "lumen.eth", "header not found"}},
		{"ShortAddress", map[string]string{selResolver: "0x1234"},
			ErrBadResponse, []string{"resolver(bytes32)", "lumen.eth"}},
		{"TextNotAString", map[string]string{selResolver: word(resolver), selText: "0x" + strings.Repeat("ff", 64)},
			ErrBadResponse, []string{"text(bytes32,string)", resolver.Hex(), "lumen.eth"}},
		{"TextEmptyWithCode", map[string]string{selResolver: word(resolver), selText: "0x"},
			ErrBadResponse, []string{"text(bytes32,string)", "empty return data"}},
		{"TextReverts", map[string]string{selResolver: word(resolver), selText: "error:execution reverted"},
			ErrReverted, []string{"text(bytes32,string)", "lumen.eth"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialFake(t, &fakeRPC{calls: tc.calls})
			_, err := c.ReadPointer(context.Background(), "lumen.eth")
			if !errors.Is(err, tc.want) {
				t.Fatalf("ReadPointer: %v, want %v", err, tc.want)
			}
			for _, p := range tc.parts {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q does not mention %q", err, p)
				}
			}
		})
	}

	t.Run("Valid", func(t *testing.T) {
		// The same fake, answering properly, reads the pointer: the failures
		// above come from the answers, not from the fake.
		text := "0x" + strings.Repeat("0", 62) + "20" + strings.Repeat("0", 62) + "03" + "616263" + strings.Repeat("0", 58)
		c := dialFake(t, &fakeRPC{calls: map[string]string{selResolver: word(resolver), selText: text}})
		got, err := c.ReadPointer(context.Background(), "lumen.eth")
		if err != nil || got != "abc" {
			t.Fatalf("ReadPointer = %q, %v; want \"abc\"", got, err)
		}
	})

	t.Run("NotJSON", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte("<html>gateway</html>"))
		}))
		defer srv.Close()
		_, err := Dial(context.Background(), srv.URL, DefaultRegistry)
		if !errors.Is(err, ErrRPC) || !strings.Contains(err.Error(), "eth_chainId") {
			t.Fatalf("Dial of a non-JSON endpoint: %v, want ErrRPC", err)
		}
	})

	t.Run("HTTPError", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "rate limited", http.StatusTooManyRequests)
		}))
		defer srv.Close()
		_, err := Dial(context.Background(), srv.URL, DefaultRegistry)
		if !errors.Is(err, ErrRPC) || !strings.Contains(err.Error(), "429") {
			t.Fatalf("Dial of a 429 endpoint: %v, want ErrRPC mentioning 429", err)
		}
	})

	t.Run("Slow", func(t *testing.T) {
		f := &fakeRPC{calls: map[string]string{selResolver: word(resolver)}}
		c := dialFake(t, f)
		f.delay.Store(int64(10 * time.Second))
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := c.ReadPointer(ctx, "lumen.eth")
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrRPC) {
			t.Fatalf("ReadPointer against a slow node: %v, want ErrRPC and DeadlineExceeded", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("ReadPointer returned after %v, past its deadline", d)
		}
	})
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:8545":            "http://127.0.0.1:8545",
		"https://node.example/v3/0123abcd": "https://node.example/…",
		"wss://user:pass@node.example":     "wss://node.example/…",
		"https://node.example/?key=secret": "https://node.example/…",
		"/var/run/geth.ipc":                "/var/run/geth.ipc",
		"http://[::1]:8545/":               "http://[::1]:8545",
		"ht!tp://%zz":                      "<unparsable endpoint URL>",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
