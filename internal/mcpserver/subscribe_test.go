package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func complete(t *testing.T, cs *sdk.ClientSession, arg, value string, ctxArgs map[string]string) []string {
	t.Helper()
	p := &sdk.CompleteParams{Ref: &sdk.CompleteReference{Type: "ref/resource", URI: mcpserver.ValueTemplate},
		Argument: sdk.CompleteParamsArgument{Name: arg, Value: value}}
	if ctxArgs != nil {
		p.Context = &sdk.CompleteContext{Arguments: ctxArgs}
	}
	res, err := cs.Complete(context.Background(), p)
	if err != nil {
		t.Fatalf("complete %s %q: %v", arg, value, err)
	}
	return res.Completion.Values
}

func rpcCode(err error) int64 {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je.Code
	}
	return 0
}

// completion/complete offers the store's agents, an agent's revisions
// (HEAD, tags, task:ID) and its keys for the value template's arguments.
func TestComplete(t *testing.T) {
	v := store(t)
	ctx := context.Background()
	head, err := v.Head(ctx, "lumen")
	if err != nil {
		t.Fatal(err)
	}
	if err := v.R.SetTag(ctx, "lumen", "v1", head); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, mcpserver.NewServer(v, mcpserver.Options{Agent: "lumen"}))
	if c := cs.InitializeResult().Capabilities; c.Completions == nil || c.Resources == nil || !c.Resources.Subscribe {
		t.Fatalf("capabilities %+v", c)
	}
	hostile := "notes/it's $(touch pwned) \"x\".md"
	call(t, cs, "put", map[string]any{"agent": "lupin", "key": hostile, "value": "x"})
	call(t, cs, "put", map[string]any{"agent": "lupin", "key": "notes/b.md", "value": "y"})

	for _, c := range []struct {
		arg, value string
		ctx        map[string]string
		want       []string
	}{
		{"agent", "lu", nil, []string{"lumen", "lupin"}},
		{"agent", "lum", nil, []string{"lumen"}},
		{"agent", "x", nil, []string{}},
		{"rev", "", nil, []string{"HEAD", "HEAD~1", "HEAD~2", "HEAD~3", "v1", "task:t3", "task:t2", "task:t1", "task:t0"}},
		{"rev", "H", nil, []string{"HEAD", "HEAD~1", "HEAD~2", "HEAD~3"}},
		{"rev", "task:t1", map[string]string{"agent": "lumen"}, []string{"task:t1"}},
		{"rev", "v", nil, []string{"v1"}},
		{"key", "", nil, []string{"bin", "notes.md", "skills/x.md"}},
		{"key", "sk", map[string]string{"rev": "HEAD~1"}, []string{"skills/x.md"}},
		{"key", "no", map[string]string{"rev": "HEAD~3"}, []string{"notes.md"}},
		{"key", "notes/", map[string]string{"agent": "lupin"}, []string{"notes/b.md", hostile}},
		{"key", "", map[string]string{"agent": "nobody"}, []string{}},
		{"key", "", map[string]string{"rev": "HEAD~99"}, []string{}},
		{"rev", "", map[string]string{"agent": "nobody"}, []string{}},
	} {
		got := complete(t, cs, c.arg, c.value, c.ctx)
		if !slices.Equal(got, c.want) {
			t.Errorf("complete %s %q %v: %q, want %q", c.arg, c.value, c.ctx, got, c.want)
		}
	}
	// Anything else has nothing to complete: no candidates, not an error.
	for _, p := range []*sdk.CompleteParams{
		{Ref: &sdk.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, Argument: sdk.CompleteParamsArgument{Name: "arg1", Value: "l"}},
		{Ref: &sdk.CompleteReference{Type: "ref/resource", URI: "agentstate://{x}"}, Argument: sdk.CompleteParamsArgument{Name: "agent", Value: "l"}},
		{Ref: &sdk.CompleteReference{Type: "ref/resource", URI: mcpserver.ValueTemplate}, Argument: sdk.CompleteParamsArgument{Name: "colour", Value: "l"}},
	} {
		if res, err := cs.Complete(ctx, p); err != nil || res.Completion.Values == nil || len(res.Completion.Values) != 0 {
			t.Errorf("complete %+v: %v %+v, want no candidates", p.Ref, err, res)
		}
	}
	// The SDK's own checks: a request without a ref is invalid params.
	if _, err := cs.Complete(ctx, &sdk.CompleteParams{Argument: sdk.CompleteParamsArgument{Name: "agent"}}); rpcCode(err) != jsonrpc.CodeInvalidParams {
		t.Errorf("complete without ref: %v", err)
	}
}

// resources/subscribe: a subscribed value gets notifications/resources/updated
// when a HEAD move changes it, none once unsubscribed; a session follows at
// most MaxSubscriptions values, and its subscriptions (and the HEAD watchers
// they need) end with it. In memory and over streamable HTTP, with
// resources/subscribe (2025-11-25) and with subscriptions/listen (the
// SDK's newest protocol, whose refusals end the listen stream instead of
// answering the call).
func TestSubscribe(t *testing.T) {
	for _, tc := range []struct{ transport, version string }{{"memory", "2025-11-25"}, {"http", "2025-11-25"}, {"memory", ""}, {"http", ""}, {"per-call", "2025-11-25"}} {
		transport, legacy := tc.transport, tc.version != ""
		t.Run(transport+"/"+tc.version, func(t *testing.T) {
			v := store(t)
			ctx := context.Background()
			o := mcpserver.Options{Agent: "lumen"}
			if transport == "per-call" { // as agentstate mcp on a free store: no view held, HEAD polled
				o.Open = func(ctx context.Context, write bool, fn func(*inspect.View) error) error { return fn(v) }
			}
			srv, count := mcpserver.NewServerCounting(v, o)
			updated := make(chan string, 2*mcpserver.MaxSubscriptions)
			client := sdk.NewClient(&sdk.Implementation{Name: "test", Version: "1"}, &sdk.ClientOptions{
				ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
			})
			var cs *sdk.ClientSession
			var err error
			if transport != "http" {
				ct, st := sdk.NewInMemoryTransports()
				if _, err := srv.Connect(ctx, st, nil); err != nil {
					t.Fatal(err)
				}
				cs, err = client.Connect(ctx, ct, &sdk.ClientSessionOptions{ProtocolVersion: tc.version})
			} else {
				hs := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
				defer hs.Close()
				cs, err = client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: tc.version})
			}
			if err != nil {
				t.Fatal(err)
			}
			next := func() string {
				select {
				case u := <-updated:
					return u
				case <-time.After(time.Minute): // a hang guard, not a speed check
					t.Fatal("no notification")
					return ""
				}
			}
			notes, skill := "agentstate://lumen/HEAD/notes.md", "agentstate://lumen/HEAD/skills/x.md"
			for _, u := range []string{notes, skill} {
				if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: u}); err != nil {
					t.Fatal(err)
				}
			}
			// subscriptions/listen is sent, and cancelled, without waiting
			// for an answer: wait until the server holds what was asked.
			waitSubs := func(n int) {
				for i := 0; ; i++ {
					if s, _ := count(); s == n {
						return
					}
					if i == 6000 {
						t.Fatalf("the server never held %d subscriptions", n)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			waitSubs(2)
			put := func(key, val string) {
				if res, _ := call(t, cs, "put", map[string]any{"key": key, "value": val}); res.IsError {
					t.Fatalf("put: %s", text(res))
				}
			}
			put("notes.md", "three\n")
			if u := next(); u != notes {
				t.Fatalf("after a put of notes.md: %s", u)
			}
			// A move that changes no subscribed value notifies nothing: the
			// next notification is the skill's.
			put("other.md", "x")
			put("skills/x.md", "new\n")
			if u := next(); u != skill {
				t.Fatalf("after puts of other.md and skills/x.md: %s", u)
			}
			if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: notes}); err != nil {
				t.Fatal(err)
			}
			waitSubs(1)
			put("notes.md", "four\n")
			put("skills/x.md", "newer\n")
			if u := next(); u != skill {
				t.Fatalf("after unsubscribing notes.md: %s", u)
			}
			if s, w := count(); s != 1 || w != 1 {
				t.Fatalf("%d subscriptions, %d watchers; want 1, 1", s, w)
			}
			waitDropped := func() {
				for i := 0; ; i++ { // the session's end drops them (asynchronously)
					s, w := count()
					if s == 0 && w == 0 {
						return
					}
					if i == 6000 {
						t.Fatalf("after the session ended: %d subscriptions, %d watchers", s, w)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			if !legacy {
				cs.Close()
				waitDropped()
				return
			}
			// An agentstate URI that can name no value is invalid params.
			for _, u := range []string{"agentstate://lumen/HEAD", "agentstate://lumen/HEAD/../x", "agentstate://-x/HEAD/x", "agentstate:///HEAD/x"} {
				if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: u}); rpcCode(err) != jsonrpc.CodeInvalidParams {
					t.Errorf("subscribe %s: %v, want -32602", u, err)
				}
			}
			// A value that does not exist yet is followed: its agent's
			// first put notifies it. Another scheme's URI is accepted and
			// never notified (the next notification is nova's).
			nova := "agentstate://nova/HEAD/n.md"
			for _, u := range []string{"test://watched-resource", "agentstate://lumen/HEAD~99/x", nova} {
				if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: u}); err != nil {
					t.Fatalf("subscribe %s: %v", u, err)
				}
			}
			if res, _ := call(t, cs, "put", map[string]any{"agent": "nova", "key": "n.md", "value": "born"}); res.IsError {
				t.Fatal(text(res))
			}
			if u := next(); u != nova {
				t.Fatalf("after nova's first put: %s", u)
			}
			for _, u := range []string{"test://watched-resource", "agentstate://lumen/HEAD~99/x", nova} {
				if err := cs.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: u}); err != nil {
					t.Fatalf("unsubscribe %s: %v", u, err)
				}
			}
			if s, w := count(); s != 1 || w != 1 {
				t.Fatalf("%d subscriptions, %d watchers; want 1, 1", s, w)
			}
			// The bound: MaxSubscriptions per session.
			for i := 1; i < mcpserver.MaxSubscriptions; i++ {
				if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: fmt.Sprintf("agentstate://lumen/HEAD/k%d", i)}); err != nil {
					t.Fatalf("subscription %d: %v", i+1, err)
				}
			}
			if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: "agentstate://lumen/HEAD/one-too-many"}); err == nil {
				t.Fatal("a subscription past the bound was accepted")
			}
			if s, _ := count(); s != mcpserver.MaxSubscriptions {
				t.Fatalf("%d subscriptions", s)
			}
			cs.Close()
			waitDropped()
		})
	}
}
