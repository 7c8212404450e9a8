package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/internal/rpcwire"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

type call func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error

// calls are the repository RPCs: each checks its request (anything a client
// sends is hostile until checked), then does what the Storage method of the
// same name does.
var calls = map[string]call{
	rpcwire.RPCStatus: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		st := s.Status().wire()
		st.Access = accessOf(ctx).String()
		return send(&rpcwire.Resp{Status: st})
	},
	rpcwire.RPCGet: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		c, err := cidArg(q.CID)
		if err != nil {
			return err
		}
		data, err := s.r.Blocks.Get(ctx, c)
		if err != nil {
			return err
		}
		return send(&rpcwire.Resp{Data: data, OK: true})
	},
	rpcwire.RPCHas: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		c, err := cidArg(q.CID)
		if err != nil {
			return err
		}
		ok, err := s.r.Blocks.Has(ctx, c)
		if err != nil {
			return err
		}
		return send(&rpcwire.Resp{OK: ok})
	},
	rpcwire.RPCPut: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		blocks := make([]objects.Block, 0, len(q.Blocks))
		for _, b := range q.Blocks {
			c, err := cidArg(b.CID)
			if err != nil {
				return err
			}
			if err := objects.Verify(c, b.Data); err != nil {
				return badRequest("%v", err)
			}
			blocks = append(blocks, objects.Block{CID: c, Data: b.Data})
		}
		s.r.NoteRemoteWrite() // before the blocks land: gc keeps off them
		if err := s.r.Blocks.Put(ctx, blocks...); err != nil {
			return err
		}
		return send(&rpcwire.Resp{OK: true})
	},
	rpcwire.RPCAllCIDs: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		l, ok := s.r.Storage.(objects.BlockLister)
		if !ok {
			return fmt.Errorf("this store cannot list its blocks")
		}
		var batch [][]byte
		for c, err := range l.AllCIDs(ctx) {
			if err != nil {
				return err
			}
			batch = append(batch, c.Bytes())
			if len(batch) == 4096 {
				if err := send(&rpcwire.Resp{CIDs: batch}); err != nil {
					return err
				}
				batch = nil
			}
		}
		if len(batch) > 0 {
			return send(&rpcwire.Resp{CIDs: batch})
		}
		return nil
	},
	rpcwire.RPCPrefix: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		f, ok := s.r.Storage.(repo.PrefixFinder)
		if !ok {
			return fmt.Errorf("this store cannot search CID prefixes")
		}
		if len(q.Prefix) > 64 {
			return badRequest("prefix longer than a CID")
		}
		cs, err := f.CIDsWithPrefix(ctx, q.Prefix)
		if err != nil {
			return err
		}
		out := make([][]byte, len(cs))
		for i, c := range cs {
			out[i] = c.Bytes()
		}
		return send(&rpcwire.Resp{CIDs: out})
	},
	rpcwire.RPCHead: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		if err := agentArg(q.Agent); err != nil {
			return err
		}
		rec, ok, err := s.r.Storage.HeadRecord(ctx, q.Agent)
		if err != nil {
			return err
		}
		return send(&rpcwire.Resp{Data: rec, OK: ok})
	},
	rpcwire.RPCSwapHead: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		if err := agentArg(q.Agent); err != nil {
			return err
		}
		if err := refs.CheckSwap(q.Agent, q.Old, q.Seq, q.Entry, q.Head); err != nil {
			return badRequest("%v", err)
		}
		// The commit the move names must be in the store: blocks first.
		var h refs.Head
		if err := json.Unmarshal(q.Head, &h); err != nil {
			return badRequest("%v", err)
		}
		if err := commitArg(ctx, s.r, q.Agent, h.Commit); err != nil {
			return err
		}
		// Every commit the move brings into the history must read as the
		// reader reads it: its tree checked where it differs from its
		// parent's (repo.CheckLanding; refused: repo.ErrBadLanding).
		var e refs.Entry
		if err := json.Unmarshal(q.Entry, &e); err != nil {
			return badRequest("%v", err)
		}
		if err := s.r.CheckLanding(ctx, q.Agent, e.Old, h.Commit); err != nil {
			return err
		}
		if err := s.r.Storage.SwapHead(ctx, q.Agent, q.Old, q.Seq, q.Entry, q.Head); err != nil {
			return err
		}
		s.r.Refs.Notify()
		return send(&rpcwire.Resp{OK: true})
	},
	rpcwire.RPCHeads: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		for rec, err := range s.r.Storage.HeadRecords(ctx) {
			if err != nil {
				return err
			}
			if err := send(&rpcwire.Resp{Agent: rec.Agent, Seq: rec.Seq, Data: rec.Data}); err != nil {
				return err
			}
		}
		return nil
	},
	rpcwire.RPCLog: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		if err := agentArg(q.Agent); err != nil {
			return err
		}
		for rec, err := range s.r.Storage.LogRecords(ctx, q.Agent) {
			if err != nil {
				return err
			}
			if err := send(&rpcwire.Resp{Agent: rec.Agent, Seq: rec.Seq, Data: rec.Data}); err != nil {
				return err
			}
		}
		return nil
	},
	rpcwire.RPCAppendLines: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		if err := agentArg(q.Agent); err != nil {
			return err
		}
		n, err := s.r.Storage.AppendLines(ctx, q.Agent, q.Lines)
		if err != nil {
			return err
		}
		return send(&rpcwire.Resp{N: n})
	},
	rpcwire.RPCTapeLines: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		if err := agentArg(q.Agent); err != nil {
			return err
		}
		for line, err := range s.r.Storage.TapeLines(ctx, q.Agent) {
			if err != nil {
				return err
			}
			if err := send(&rpcwire.Resp{Data: line}); err != nil {
				return err
			}
		}
		return nil
	},
	rpcwire.RPCGetMeta: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		if err := metaArg(q.Name, false); err != nil {
			return err
		}
		v, ok, err := s.r.Storage.GetMeta(ctx, q.Name)
		if err != nil {
			return err
		}
		return send(&rpcwire.Resp{Data: v, OK: ok})
	},
	// SetMeta writes only the records clients may write, each checked
	// (repo.CheckClientMeta): a bundle hash is the tree's, and so on;
	// DeleteMetaPrefix deletes none. Tags, checkpoints and keys change only
	// through their own calls; the store's format never.
	rpcwire.RPCSetMeta: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		if err := metaArg(q.Name, false); err != nil {
			return err
		}
		if err := s.r.CheckClientMeta(ctx, q.Name, q.Value); err != nil {
			return badRequest("%v", err)
		}
		if err := s.r.Storage.SetMeta(ctx, q.Name, q.Value); err != nil {
			return err
		}
		return send(&rpcwire.Resp{OK: true})
	},
	// SetTag and DeleteTag change tags, in the server, with SetTag's rule:
	// an existing tag naming another commit moves only with force
	// (repo.MoveTag), else code 109 (repo.ErrTagExists). Raw tag records
	// are refused by SetMeta, so the check and the write are one step.
	rpcwire.RPCSetTag: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		if err := agentArg(q.Agent); err != nil {
			return err
		}
		if err := refs.ValidateAgent(q.Name); err != nil {
			return badRequest("tag name: %v", err)
		}
		c, err := cidArg(q.CID)
		if err != nil {
			return err
		}
		if _, err := s.r.Commit(ctx, c); err != nil {
			return badRequest("tag %s of %s: %s is not a commit this store holds: %v", q.Name, q.Agent, c, err)
		}
		set := s.r.SetTag
		if q.Force {
			set = s.r.MoveTag
		}
		if err := set(ctx, q.Agent, q.Name, c); err != nil {
			return err
		}
		return send(&rpcwire.Resp{OK: true})
	},
	// DeleteTag removes one tag record, named whole, whatever it holds (so
	// a damaged one can go); ok says whether there was one.
	rpcwire.RPCDeleteTag: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		if err := agentArg(q.Agent); err != nil {
			return err
		}
		if err := metaArg(q.Name, false); err != nil {
			return err
		}
		ok, err := s.r.DeleteTag(ctx, q.Agent, q.Name)
		if errors.Is(err, refs.ErrBadAgent) {
			return badRequest("%v", err)
		} else if err != nil {
			return err
		}
		return send(&rpcwire.Resp{OK: ok})
	},
	// Undo undoes (Redo: redoes) the agent's newest operation in the
	// server, taking turns with the server's own writers of the agent.
	rpcwire.RPCUndo: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		if err := agentArg(q.Agent); err != nil {
			return err
		}
		do := s.r.Undo
		if q.Redo {
			do = s.r.Redo
		}
		u, err := do(ctx, q.Agent)
		if err != nil {
			return err
		}
		data, err := json.Marshal(u)
		if err != nil {
			return err
		}
		return send(&rpcwire.Resp{Data: data})
	},
	rpcwire.RPCMetaPrefix: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		if err := metaArg(q.Name, true); err != nil {
			return err
		}
		return s.r.Storage.MetaPrefix(ctx, q.Name, func(name string, v []byte) error {
			return send(&rpcwire.Resp{Agent: name, Data: v})
		})
	},
	rpcwire.RPCDeleteMeta: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		if err := metaArg(q.Name, false); err != nil {
			return err
		}
		if err := repo.CheckClientMetaDelete(q.Name, q.Exact); err != nil {
			return badRequest("%v", err)
		}
		d, ok := s.r.Storage.(repo.MetaDeleter)
		if !ok {
			return fmt.Errorf("this store cannot delete one meta record")
		}
		if err := d.DeleteMeta(ctx, q.Name); err != nil {
			return err
		}
		return send(&rpcwire.Resp{OK: true})
	},
	// Forget runs in the server, beside its writers: Value is the policy
	// (JSON of repo.Policy). With Agents, those agents are forgotten with
	// one collection and the answer's Data is JSON of ForgetResult; with
	// Agent alone, the answer's Data is that agent's report (JSON of
	// repo.ForgetReport, the collection's report in it).
	rpcwire.RPCForget: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		agents := q.Agents
		if len(agents) == 0 {
			agents = []string{q.Agent}
		} else if q.Agent != "" || len(agents) > maxForgetAgents {
			return badRequest("forget: Agent and Agents together, or more than %d agents", maxForgetAgents)
		}
		for _, a := range agents {
			if err := agentArg(a); err != nil {
				return err
			}
		}
		var p repo.Policy
		dec := json.NewDecoder(bytes.NewReader(q.Value))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return badRequest("forget policy: %v", err)
		}
		var res any
		if len(q.Agents) == 0 {
			rep, err := s.r.Forget(ctx, q.Agent, p, q.DryRun)
			if err != nil {
				return err
			}
			res = rep
		} else {
			reps, gc, err := s.r.ForgetAgents(ctx, agents, p, q.DryRun)
			if err != nil {
				return err
			}
			res = ForgetResult{Reports: reps, GC: gc}
		}
		data, err := json.Marshal(res)
		if err != nil {
			return err
		}
		return send(&rpcwire.Resp{Data: data})
	},
	// AdoptCuts records cut links a sync received (Value: JSON of
	// []repo.CutLink, at most maxCutLinks) in the agent's checkpoint, in
	// the server: only links whose parent this store lacks are recorded.
	rpcwire.RPCAdoptCuts: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		if err := agentArg(q.Agent); err != nil {
			return err
		}
		var links []repo.CutLink
		dec := json.NewDecoder(bytes.NewReader(q.Value))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&links); err != nil {
			return badRequest("cut links: %v", err)
		}
		if len(links) > maxCutLinks {
			return badRequest("%d cut links, over %d", len(links), maxCutLinks)
		}
		for _, l := range links {
			if l.Commit.IsZero() || len(l.Parents) == 0 || len(l.Parents) > 64 {
				return badRequest("a malformed cut link")
			}
			if ok, err := s.r.Blocks.Has(ctx, l.Commit); err != nil {
				return err
			} else if !ok {
				return badRequest("cut link of commit %s, which this store does not hold", l.Commit.Short())
			}
		}
		if err := s.r.AdoptCuts(ctx, q.Agent, links); err != nil {
			return err
		}
		return send(&rpcwire.Resp{OK: true})
	},
	// LearnKeys and TrustKeys change the keys the store trusts (Value: JSON
	// of repo.KeyOp, checked): LearnKeys records keys that came with an
	// agent's receipts (a write token may: they verify that agent's
	// receipts and sign nothing); TrustKeys trusts or untrusts keys, for the
	// operator only (rpcwire.OperatorOnly).
	rpcwire.RPCLearnKeys: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		return keyOp(ctx, s, q, send, true)
	},
	rpcwire.RPCTrustKeys: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		return keyOp(ctx, s, q, send, false)
	},
	rpcwire.RPCGC: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		rep, err := s.r.GC(ctx, q.DryRun)
		if err != nil {
			return err
		}
		return send(&rpcwire.Resp{Kept: uint64(rep.Kept), Deleted: uint64(rep.Deleted), Freed: uint64(rep.BytesFreed)})
	},
	// WatchHeads sends every agent's HEAD record now, then again each time
	// any HEAD moves, until the client goes away.
	rpcwire.RPCWatch: func(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error) error {
		for {
			changed := s.r.Refs.Changed()
			for rec, err := range s.r.Storage.HeadRecords(ctx) {
				if err != nil {
					return err
				}
				if err := send(&rpcwire.Resp{Agent: rec.Agent, Data: rec.Data}); err != nil {
					return err
				}
			}
			if err := send(&rpcwire.Resp{OK: true}); err != nil { // end of this round
				return err
			}
			select {
			case <-changed:
			case <-ctx.Done():
				return nil
			}
		}
	},
}

func keyOp(ctx context.Context, s *Server, q *rpcwire.Req, send func(*rpcwire.Resp) error, learn bool) error {
	var op repo.KeyOp
	dec := json.NewDecoder(bytes.NewReader(q.Value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&op); err != nil {
		return badRequest("key operation: %v", err)
	}
	if (op.Op == repo.KeyOpLearn) != learn {
		return badRequest("key operation %.20q on the wrong call", op.Op)
	}
	if err := op.Check(); err != nil {
		return badRequest("%v", err)
	}
	n, err := s.r.ApplyKeyOp(ctx, op)
	if err != nil {
		return err
	}
	return send(&rpcwire.Resp{N: uint64(n)})
}

func cidArg(b []byte) (objects.CID, error) {
	c, err := objects.CIDFromBytes(b)
	if err != nil {
		return objects.CID{}, badRequest("%v", err)
	}
	return c, nil
}

// maxCutLinks bounds one AdoptCuts request.
const maxCutLinks = 1 << 16

// commitArg checks the commit a remote HEAD move names: a commit this store
// holds (not a value or a tree node), whose tree root and parents it holds
// too. Anything less would leave a HEAD that verify reports broken. (The
// trees are checked next, by repo.CheckLanding, where they changed.)
func commitArg(ctx context.Context, r *repo.Repo, agent string, id objects.CID) error {
	if ok, err := r.Blocks.Has(ctx, id); err != nil {
		return err
	} else if !ok {
		return badRequest("HEAD move to %s, a commit this store does not hold", id)
	}
	c, err := r.Commit(ctx, id)
	if err != nil {
		return badRequest("HEAD move to %s: %v", id, err)
	}
	if ok, err := r.Blocks.Has(ctx, c.Tree); err != nil {
		return err
	} else if !ok {
		return badRequest("HEAD move to %s, whose tree %s this store does not hold", id, c.Tree)
	}
	gone, err := r.Gone(ctx)
	if err != nil {
		return err
	}
	for _, p := range c.Parents {
		if gone(id, p) {
			continue // a forget cut this link: the parent may be gone by design
		}
		if ok, err := r.Blocks.Has(ctx, p); err != nil {
			return err
		} else if !ok {
			return badRequest("HEAD move to %s, whose parent %s this store does not hold", id, p)
		}
	}
	return nil
}

// ForgetResult is a Forget call's answer for several agents.
type ForgetResult struct {
	Reports []repo.ForgetReport `json:"reports"`
	GC      repo.GCReport       `json:"gc"` // the one collection after them
}

// maxForgetAgents bounds the agents of one Forget call.
const maxForgetAgents = 1 << 16

func agentArg(a string) error {
	if err := refs.ValidateAgent(a); err != nil {
		return badRequest("%v", err)
	}
	return nil
}

// metaArg checks a meta name (a prefix may be empty).
func metaArg(name string, prefix bool) error {
	if (name == "" && !prefix) || len(name) > 4096 || !utf8.ValidString(name) {
		return badRequest("meta name %.40q: want 1 to 4096 bytes of UTF-8", name)
	}
	return nil
}
