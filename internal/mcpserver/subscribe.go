package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/url"
	"sync"
	"time"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Subscriptions (resources/subscribe): a session may follow at most
// MaxSubscriptions value resources at once; the rest are refused until it
// unsubscribes. They end with the session.
const MaxSubscriptions = 64

// PollInterval is how often a server that holds no store between calls
// (agentstate mcp on a store nothing serves) reads a followed agent's
// HEAD; a server that holds the store is told of each move instead.
const PollInterval = 2 * time.Second

// subs follows the HEADs of the agents whose values sessions subscribed
// to: one watcher per agent while any subscription names it. When HEAD
// moves, each subscribed value is read again at its revision, and those
// whose value changed (or came or went) get notifications/resources/updated.
type subs struct {
	h   *handlers
	srv *sdk.Server

	mu       sync.Mutex
	sessions map[*sdk.ServerSession]map[string]bool // session → its URIs
	uris     map[string]*followed
	watchers map[string]context.CancelFunc // agent → its watcher
}

// followed is one subscribed value and what it was when last read.
type followed struct {
	agent, rev, key string
	sessions        int
	cid             objects.CID // zero: absent
}

func newSubs(h *handlers) *subs {
	return &subs{h: h, sessions: map[*sdk.ServerSession]map[string]bool{},
		uris: map[string]*followed{}, watchers: map[string]context.CancelFunc{}}
}

// state reads what uri's value is now: its CID, zero when the key is absent.
func (s *subs) state(ctx context.Context, f *followed) (objects.CID, error) {
	var cid objects.CID
	err := s.h.with(ctx, false, func(v *inspect.View) error {
		val, err := v.Get(ctx, f.agent, f.rev, f.key, 0)
		if errors.Is(err, inspect.ErrNotFound) || errors.Is(err, inspect.ErrBadRequest) {
			return nil // absent: no agent, revision or key (yet)
		}
		cid = val.CID
		return err
	})
	return cid, err
}

// subscribe follows req's URI. Any URI may be followed (the specification
// does not ask that a resource exist when it is subscribed to): a value URI
// agentstate://AGENT/REV/KEY is followed even before its agent, revision or
// key exists (a put or fork may make it), and notified when it changes; a
// URI of another scheme names nothing this server has or will have, and is
// never notified. An agentstate URI that cannot name a value (no key, an
// invalid agent name or key) is invalid params.
func (s *subs) subscribe(ctx context.Context, req *sdk.SubscribeRequest) error {
	uri := req.Params.URI
	var f *followed
	if u, err := url.Parse(uri); err != nil || u.Scheme == "agentstate" {
		agent, rev, key, ok := parseValueURI(uri)
		if ok && refs.ValidateAgent(agent) == nil && objects.ValidateKey(key) == nil {
			f = &followed{agent: agent, rev: rev, key: key}
		} else {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: fmt.Sprintf("%q names no value: a value is agentstate://AGENT/REV/KEY with a valid agent name and key", uri)}
		}
		cid, err := s.state(ctx, f)
		if err != nil {
			return err
		}
		f.cid = cid
	}
	ss := req.Session
	s.mu.Lock()
	defer s.mu.Unlock()
	mine := s.sessions[ss]
	if mine[uri] {
		return nil
	}
	if len(mine) >= MaxSubscriptions {
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
			Message: fmt.Sprintf("this session already follows %d resources, the most one may; resources/unsubscribe one first", MaxSubscriptions)}
	}
	if mine == nil {
		mine = map[string]bool{}
		s.sessions[ss] = mine
		go func() { // the session's subscriptions end with it
			ss.Wait()
			s.drop(ss)
		}()
	}
	mine[uri] = true
	if f == nil {
		return nil // never notified
	}
	if g := s.uris[uri]; g != nil {
		g.sessions++
	} else {
		f.sessions = 1
		s.uris[uri] = f
	}
	if s.watchers[f.agent] == nil {
		wctx, cancel := context.WithCancel(context.Background())
		s.watchers[f.agent] = cancel
		go s.watch(wctx, f.agent)
	}
	return nil
}

func (s *subs) unsubscribe(_ context.Context, req *sdk.UnsubscribeRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.release(req.Session, req.Params.URI)
	return nil
}

// drop ends every subscription of a session that ended.
func (s *subs) drop(ss *sdk.ServerSession) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for uri := range s.sessions[ss] {
		s.release(ss, uri)
	}
	delete(s.sessions, ss)
}

// release ends one subscription (s.mu held), and the agent's watcher
// with the last one that names it.
func (s *subs) release(ss *sdk.ServerSession, uri string) {
	mine := s.sessions[ss]
	if !mine[uri] {
		return
	}
	delete(mine, uri)
	f := s.uris[uri]
	if f == nil {
		return // a URI never notified
	}
	if f.sessions--; f.sessions > 0 {
		return
	}
	delete(s.uris, uri)
	for _, g := range s.uris {
		if g.agent == f.agent {
			return
		}
	}
	s.watchers[f.agent]()
	delete(s.watchers, f.agent)
}

// count reports the live subscriptions and watchers (for tests).
func (s *subs) count() (subscriptions, watchers int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.sessions {
		subscriptions += len(m)
	}
	return subscriptions, len(s.watchers)
}

// watch notifies the subscribers of agent's values each time its HEAD
// moves, until ctx ends.
func (s *subs) watch(ctx context.Context, agent string) {
	for range s.heads(ctx, agent) {
		s.mu.Lock()
		var fs []*followed
		var uris []string
		for uri, f := range s.uris {
			if f.agent == agent {
				fs, uris = append(fs, f), append(uris, uri)
			}
		}
		s.mu.Unlock()
		for i, f := range fs {
			cid, err := s.state(ctx, f)
			if err != nil || cid == f.cid {
				continue
			}
			s.mu.Lock()
			f.cid = cid
			s.mu.Unlock()
			s.srv.ResourceUpdated(ctx, &sdk.ResourceUpdatedNotificationParams{URI: uris[i]})
		}
	}
}

// heads yields agent's HEAD each time it moves: told by the store when the
// server holds one, read every PollInterval otherwise. It ends with ctx (or
// when the store fails).
func (s *subs) heads(ctx context.Context, agent string) iter.Seq[objects.CID] {
	return func(yield func(objects.CID) bool) {
		if s.h.o.Open == nil {
			for h, err := range s.h.v.R.WatchHead(ctx, agent) {
				if err != nil || !yield(h.Commit) {
					return
				}
			}
			return
		}
		var last objects.CID
		t := time.NewTicker(PollInterval)
		defer t.Stop()
		for {
			var cur objects.CID
			err := s.h.with(ctx, false, func(v *inspect.View) (err error) {
				cur, err = v.Head(ctx, agent)
				return err
			})
			if err == nil && cur != last {
				last = cur
				if !yield(cur) {
					return
				}
			}
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
	}
}
