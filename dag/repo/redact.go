package repo

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/redaction"
)

// Redaction removes the content of values from the store on purpose, with a
// signed record (refs/redaction) that says which raw blocks are gone, so
// that every commit, tree, bundle hash and receipt naming them stays valid:
// a value's CID (or a chunked value's file node, which is kept) carries the
// sha256 of its content. Records are metadata records:
//
//	redaction/AGENT/ID   the record's line (ID: hex sha256 of it)
//	redaction-head/AGENT the ID of the agent's newest record (the next one's prev)
//
// verify accepts a missing raw block exactly when a valid record signed by
// a key the store trusts for the agent (operator, or trusted for that agent:
// the rules of receipts and histories, trust.go) names it under a value it
// names; gc deletes such a block when no unredacted value uses it, so a
// process killed between the record and the deletion leaves a store that
// verifies clean and the next redact or gc finishes the job.
const (
	redactionPrefix     = "redaction/"
	redactionHeadPrefix = "redaction-head/"
)

var (
	// ErrNothingToRedact: the key does not exist where the redaction asks,
	// the value is not in the agent's history, or it is redacted already.
	ErrNothingToRedact = errors.New("repo: nothing to redact")
	// ErrNotInHistory: a commit a redaction names is not in the agent's
	// history.
	ErrNotInHistory = errors.New("repo: the commit is not in the agent's history")
	// ErrBadRedaction: a redaction request or record that breaks a rule
	// (malformed, a forged or unsigned record, a block that is no value
	// content).
	ErrBadRedaction = errors.New("repo: bad redaction")
	// ErrUntrustedRedaction: a record signed by a key the store does not
	// trust for the record's agent.
	ErrUntrustedRedaction = errors.New("repo: redaction signed by a key this store does not trust for the agent")
)

// RedactRequest names what to redact: Key's value at commit At, every
// version of Key in the agent's history (All), or the value Value wherever
// it appears in the agent's history.
type RedactRequest struct {
	Agent  string
	Key    string
	At     objects.CID
	All    bool
	Value  objects.CID
	Reason string
	DryRun bool
	// Blocks, when set, redacts part of Key's values instead of them
	// whole: of each value named (a version of Key in the agent's history),
	// the raw blocks listed (the pages that held a SQLite row), which are
	// removed unless a value that is not redacted uses them; the values'
	// other chunks stay. At, All and Value are then not used.
	Blocks map[objects.CID][]objects.CID
}

// SharedVersion is a version of a redacted key that shares chunks with the
// redacted values and is not redacted: those chunks stay until it is too.
type SharedVersion struct {
	Key    string      `json:"key"`
	Value  objects.CID `json:"value"`
	Commit objects.CID `json:"commit"` // the first commit of the agent's history that holds it at Key
	Chunks int         `json:"chunks"` // chunks of the redacted values it shares
}

// RedactReport says what a redaction removed, or would.
type RedactReport struct {
	ID      string            `json:"id,omitempty"`
	Record  *redaction.Record `json:"record,omitempty"`
	Agent   string            `json:"agent"`
	Keys    []string          `json:"keys"`
	Values  []objects.CID     `json:"values"`
	Commits []objects.CID     `json:"commits"`
	// Removed counts the raw blocks deleted (or that would be), Bytes their size.
	Removed int   `json:"removed"`
	Bytes   int64 `json:"bytes"`
	// Kept counts the redacted values' chunks that stay because a value
	// that is not redacted uses them; Shared names the versions of the
	// redacted keys among those.
	Kept   int             `json:"kept"`
	Shared []SharedVersion `json:"shared,omitempty"`
	DryRun bool            `json:"dryRun,omitempty"`
}

// RedactionInfo is one record a store holds, as verify judges it.
type RedactionInfo struct {
	ID     string            `json:"id"`
	Record *redaction.Record `json:"record"`
	// Problem is why the record is not honoured ("" when it is): malformed,
	// a signature that does not verify, a signer not trusted for the agent,
	// a prev the store does not hold.
	Problem string `json:"problem,omitempty"`
	name    string
}

// redactionSet is every honoured record, indexed by the values it names,
// and the blocks they remove.
type redactionSet struct {
	byValue map[objects.CID][]*RedactionInfo
	blocks  map[objects.CID]bool
	all     []*RedactionInfo
}

// absent is dag.WalkOptions.Absent for the set: a raw block of a redacted
// value that a record removes (one value's redaction may remove a chunk it
// shares with a value redacted before).
func (s *redactionSet) absent(v, c objects.CID) bool {
	if len(s.byValue[v]) == 0 {
		return false
	}
	return c.IsZero() || s.blocks[c]
}

// Redactions lists the records the store holds for agent ("" for every
// agent), oldest first, each judged as verify judges it.
func (r *Repo) Redactions(ctx context.Context, agent string) ([]RedactionInfo, error) {
	set, bad, err := r.readRedactions(ctx)
	if err != nil {
		return nil, err
	}
	var out []RedactionInfo
	for _, ri := range append(set.all, bad...) {
		if agent == "" || ri.Record != nil && ri.Record.Agent == agent || ri.Record == nil && strings.HasPrefix(ri.name, redactionPrefix+agent+"/") {
			out = append(out, *ri)
		}
	}
	// Oldest first: a record after the one it names as prev.
	byID := map[string]*RedactionInfo{}
	for i := range out {
		byID[out[i].ID] = &out[i]
	}
	depth := map[string]int{}
	var depthOf func(ri *RedactionInfo, n int) int
	depthOf = func(ri *RedactionInfo, n int) int {
		if d, ok := depth[ri.ID]; ok {
			return d
		}
		d := 0
		if ri.Record != nil && n < len(out) {
			if p, ok := byID[ri.Record.Prev]; ok && p != ri {
				d = depthOf(p, n+1) + 1
			}
		}
		depth[ri.ID] = d
		return d
	}
	key := func(ri RedactionInfo) (int, int64) {
		t := int64(0)
		if ri.Record != nil {
			t = ri.Record.Time
		}
		return depthOf(&ri, 0), t
	}
	sort.SliceStable(out, func(i, j int) bool {
		di, ti := key(out[i])
		dj, tj := key(out[j])
		if di != dj {
			return di < dj
		}
		return ti < tj
	})
	return out, nil
}

// errStop ends a MetaPrefix walk early.
var errStop = errors.New("stop")

// HasRedactions reports whether the store holds any redaction record: one
// step of a prefix walk, so that readers of a store with none pay nothing.
func (r *Repo) HasRedactions(ctx context.Context) (bool, error) {
	found := false
	err := r.Storage.MetaPrefix(ctx, redactionPrefix, func(string, []byte) error {
		found = true
		return errStop
	})
	if err != nil && !errors.Is(err, errStop) {
		return false, err
	}
	return found, nil
}

// RedactionOf returns an honoured record naming the value v, if any.
func (r *Repo) RedactionOf(ctx context.Context, v objects.CID) (*RedactionInfo, bool, error) {
	if ok, err := r.HasRedactions(ctx); err != nil || !ok {
		return nil, false, err
	}
	set, _, err := r.loadRedactions(ctx)
	if err != nil {
		return nil, false, err
	}
	if ris := set.byValue[v]; len(ris) > 0 {
		ri := *ris[len(ris)-1]
		return &ri, true, nil
	}
	return nil, false, nil
}

// redCache keeps the records as last judged, for as long as no agent's
// redaction head moved and no trusted key changed in this process (the
// writer of a store is one process).
type redCache struct {
	mu  sync.Mutex
	key string
	set *redactionSet
	bad []*RedactionInfo
}

func (c *redCache) forget() {
	c.mu.Lock()
	c.key, c.set, c.bad = "", nil, nil
	c.mu.Unlock()
}

// loadRedactions reads every record: the honoured ones, and the others
// with their problem.
func (r *Repo) loadRedactions(ctx context.Context) (*redactionSet, []*RedactionInfo, error) {
	var key strings.Builder
	err := r.Storage.MetaPrefix(ctx, redactionHeadPrefix, func(name string, v []byte) error {
		key.WriteString(name)
		key.WriteByte(0)
		key.Write(v)
		key.WriteByte(0)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	r.reds.mu.Lock()
	if r.reds.set != nil && r.reds.key == key.String() {
		set, bad := r.reds.set, r.reds.bad
		r.reds.mu.Unlock()
		return set, bad, nil
	}
	r.reds.mu.Unlock()
	set, bad, err := r.readRedactions(ctx)
	if err != nil {
		return nil, nil, err
	}
	r.reds.mu.Lock()
	r.reds.key, r.reds.set, r.reds.bad = key.String(), set, bad
	r.reds.mu.Unlock()
	return set, bad, nil
}

func (r *Repo) readRedactions(ctx context.Context) (*redactionSet, []*RedactionInfo, error) {
	set := &redactionSet{byValue: map[objects.CID][]*RedactionInfo{}, blocks: map[objects.CID]bool{}}
	var bad, parsed []*RedactionInfo
	ids := map[string]string{} // record ID -> agent
	err := r.Storage.MetaPrefix(ctx, redactionPrefix, func(name string, v []byte) error {
		ri := &RedactionInfo{name: name}
		agent, id, _ := strings.Cut(strings.TrimPrefix(name, redactionPrefix), "/")
		rec, err := redaction.Parse(v)
		switch {
		case err != nil:
			ri.ID, ri.Problem = id, err.Error()
		case rec.ID() != id || rec.Agent != agent:
			ri.ID, ri.Record, ri.Problem = id, rec, fmt.Sprintf("record %s is kept under the name %q, not its own", rec.ID(), name)
		default:
			ri.ID, ri.Record = id, rec
			if err := rec.Verify(); err != nil {
				ri.Problem = err.Error()
			}
			ids[id] = agent
		}
		if ri.Problem != "" {
			bad = append(bad, ri)
		} else {
			parsed = append(parsed, ri)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	trusted := map[string]map[string]bool{} // agent -> key hex
	for _, ri := range parsed {
		a := ri.Record.Agent
		if trusted[a] == nil {
			keys, err := r.TrustedKeys(ctx, a, KeySignsHistory)
			if err != nil {
				return nil, nil, err
			}
			trusted[a] = map[string]bool{}
			for _, k := range keys {
				trusted[a][KeyHex(k)] = true
			}
		}
		switch {
		case !trusted[a][KeyHex(ri.Record.Signer)]:
			ri.Problem = fmt.Sprintf("%v: signer %x, agent %s", ErrUntrustedRedaction, []byte(ri.Record.Signer), a)
		case ri.Record.Prev != "" && ids[ri.Record.Prev] != a:
			ri.Problem = fmt.Sprintf("its prev %s is no record of agent %s this store holds", ri.Record.Prev, a)
		}
		if ri.Problem != "" {
			bad = append(bad, ri)
			continue
		}
		set.all = append(set.all, ri)
		for _, v := range ri.Record.Values {
			set.byValue[v] = append(set.byValue[v], ri)
		}
		for _, c := range ri.Record.Blocks {
			set.blocks[c] = true
		}
	}
	return set, bad, nil
}

// redactedBlocks is every block an honoured record removes.
func (r *Repo) redactedBlocks(ctx context.Context) map[objects.CID]bool {
	set, _ := r.RedactedBlocks(ctx)
	return set
}

// RedactedBlocks is every block the store's honoured redaction records
// removed: blocks a value's chunk lists still name that are not stored. A
// writer that counts a value's chunks as stored because its lists are
// (objects.StoredChunks) must not count these.
func (r *Repo) RedactedBlocks(ctx context.Context) (map[objects.CID]bool, error) {
	set, _, err := r.readRedactions(ctx)
	if err != nil {
		return nil, err
	}
	return set.blocks, nil
}

// redactionProblems are verify's findings about the records themselves.
func (r *Repo) redactionProblems(ctx context.Context, bad []*RedactionInfo) ([]string, error) {
	var out []string
	for _, ri := range bad {
		out = append(out, fmt.Sprintf("redaction record %s: %s (the blocks it names are not accepted as absent)", ri.name, ri.Problem))
	}
	err := r.Storage.MetaPrefix(ctx, redactionHeadPrefix, func(name string, v []byte) error {
		agent := strings.TrimPrefix(name, redactionHeadPrefix)
		if _, ok, err := r.Storage.GetMeta(ctx, redactionPrefix+agent+"/"+string(v)); err != nil {
			return err
		} else if !ok {
			out = append(out, fmt.Sprintf("redaction head of %s names record %.70q, which the store does not hold", agent, v))
		}
		return nil
	})
	return out, err
}

// valueLeaves lists the raw blocks of a value: the value itself when it is
// raw, else the chunks its nodes link (the nodes must be there).
func (r *Repo) valueLeaves(ctx context.Context, v objects.CID) ([]objects.CID, error) {
	if v.Codec() == objects.CodecRaw {
		return []objects.CID{v}, nil
	}
	var out []objects.CID
	stack := []objects.ChunkSpot{{CID: v}}
	seen := map[objects.CID]bool{}
	for len(stack) > 0 {
		sp := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[sp.CID] {
			continue
		}
		seen[sp.CID] = true
		if sp.CID.Codec() == objects.CodecRaw {
			out = append(out, sp.CID)
			continue
		}
		data, err := r.Blocks.Get(ctx, sp.CID)
		if err != nil {
			return nil, err
		}
		cn, subs, err := objects.CheckChunkNode(sp, data)
		if err != nil {
			return nil, err
		}
		stack = append(stack, subs...)
		for _, c := range cn.Chunks {
			if c.Codec() == objects.CodecRaw && !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// keyVersions returns the value of key at every commit of hist that holds it.
func (r *Repo) keyVersions(ctx context.Context, hist map[objects.CID]bool, key string) (map[objects.CID]objects.CID, error) {
	out := map[objects.CID]objects.CID{}
	for c := range hist {
		t, err := r.Tree(ctx, c)
		if err != nil {
			return nil, err
		}
		v, ok, err := t.Get(ctx, key)
		if err != nil {
			return nil, err
		}
		if ok {
			out[c] = v
		}
	}
	return out, nil
}

// firstCommits returns the commits of versions whose value is in vals and
// whose parents do not hold the same value (where the value first appears).
func (r *Repo) firstCommits(ctx context.Context, versions map[objects.CID]objects.CID, vals map[objects.CID]bool) ([]objects.CID, error) {
	var out []objects.CID
	for c, v := range versions {
		if !vals[v] {
			continue
		}
		cm, err := r.Commit(ctx, c)
		if err != nil {
			return nil, err
		}
		first := true
		for _, p := range cm.Parents {
			if pv, ok := versions[p]; ok && pv == v {
				first = false
			}
		}
		if first {
			out = append(out, c)
		}
	}
	return out, nil
}

// Redactor is an optional ability of a Storage: a served store's client
// has its server redact (the server holds the blocks and the write gate).
type Redactor interface {
	Redact(ctx context.Context, req RedactRequest, key ed25519.PrivateKey) (RedactReport, error)
}

// redactHook, when set (tests), is called at each step of a redaction.
var redactHook func(step string)

// Redact removes the content of the values req names from the store, with a
// record signed by key, and returns what it removed. The key becomes
// trusted for the agent (an operator's act, as a restore's --pub is), so
// the store honours its own record. Chunks a value that is not redacted
// still uses stay; the report names the versions of the key that hold them.
// It holds the write gate as gc does, so no writer in flight can reuse a
// block it deletes.
func (r *Repo) Redact(ctx context.Context, req RedactRequest, key ed25519.PrivateKey) (RedactReport, error) {
	if rd, ok := r.Storage.(Redactor); ok {
		return rd.Redact(ctx, req, key)
	}
	if _, ok := r.Storage.(Collector); ok {
		return RedactReport{}, fmt.Errorf("%w: a served store redacts in its server", ErrBadRedaction)
	}
	if err := refs.ValidateAgent(req.Agent); err != nil {
		return RedactReport{}, fmt.Errorf("%w: %w", ErrBadRedaction, err)
	}
	if req.Key == "" && req.Value.IsZero() {
		return RedactReport{}, fmt.Errorf("%w: name a key or a value", ErrBadRedaction)
	}
	if req.Key != "" {
		if err := objects.ValidateKey(req.Key); err != nil {
			return RedactReport{}, fmt.Errorf("%w: %w", ErrBadRedaction, err)
		}
	}
	if len(req.Reason) == 0 || len(req.Reason) > redaction.MaxReason {
		return RedactReport{}, fmt.Errorf("%w: a reason of 1 to %d bytes is required", ErrBadRedaction, redaction.MaxReason)
	}
	if len(key) != ed25519.PrivateKeySize {
		return RedactReport{}, fmt.Errorf("%w: no signing key", ErrBadRedaction)
	}
	release, err := r.gate.exclusive(ctx)
	if err != nil {
		return RedactReport{}, err
	}
	defer release()
	return r.redact(ctx, req, key)
}

func (r *Repo) redact(ctx context.Context, req RedactRequest, key ed25519.PrivateKey) (RedactReport, error) {
	rep := RedactReport{Agent: req.Agent, DryRun: req.DryRun}
	if _, err := r.Refs.Head(ctx, req.Agent); err != nil {
		return rep, err
	}
	cp, _, err := r.CheckpointOf(ctx, req.Agent)
	if err != nil {
		return rep, err
	}
	hist, err := r.historyCommits(ctx, req.Agent, cp)
	if err != nil {
		return rep, err
	}
	set, _, err := r.readRedactions(ctx)
	if err != nil {
		return rep, err
	}
	vals := map[objects.CID]bool{}
	keys := map[string]bool{}
	var versions map[objects.CID]objects.CID // of req.Key
	var commits []objects.CID
	switch {
	case req.Key != "":
		if !req.At.IsZero() && !hist[req.At] {
			return rep, fmt.Errorf("%w: %s is not in %s's history", ErrNotInHistory, req.At.Short(), req.Agent)
		}
		if versions, err = r.keyVersions(ctx, hist, req.Key); err != nil {
			return rep, err
		}
		switch {
		case req.Blocks != nil:
			held := map[objects.CID]bool{}
			for _, v := range versions {
				held[v] = true
			}
			for v := range req.Blocks {
				if !held[v] {
					return rep, fmt.Errorf("%w: value %s is never key %q in %s's history", ErrNothingToRedact, v.Short(), req.Key, req.Agent)
				}
				vals[v] = true
			}
		case !req.At.IsZero():
			v, ok := versions[req.At]
			if !ok {
				return rep, fmt.Errorf("%w: key %q does not exist at %s", ErrNothingToRedact, req.Key, req.At.Short())
			}
			vals[v] = true
		case !req.Value.IsZero():
			for _, v := range versions {
				if v == req.Value {
					vals[v] = true
				}
			}
			if len(vals) == 0 {
				return rep, fmt.Errorf("%w: value %s is never key %q in %s's history", ErrNothingToRedact, req.Value.Short(), req.Key, req.Agent)
			}
		default: // All
			for _, v := range versions {
				vals[v] = true
			}
			if len(vals) == 0 {
				return rep, fmt.Errorf("%w: key %q never exists in %s's history", ErrNothingToRedact, req.Key, req.Agent)
			}
		}
		keys[req.Key] = true
	default: // a value, wherever it appears
		for c := range hist {
			cm, err := r.Commit(ctx, c)
			if err != nil {
				return rep, err
			}
			parents := cm.Parents
			if len(parents) == 0 {
				parents = []objects.CID{{}}
			}
			for _, p := range parents {
				base := objects.EmptyTreeCID
				if !p.IsZero() {
					pc, err := r.Commit(ctx, p)
					if err != nil {
						if errors.Is(err, objects.ErrNotFound) || errors.Is(err, dag.ErrUnknown) {
							continue // behind a cut
						}
						return rep, err
					}
					base = pc.Tree
				}
				for ch, err := range objects.DiffTrees(ctx, r.Blocks, base, cm.Tree) {
					if err != nil {
						return rep, err
					}
					if ch.New == req.Value {
						keys[ch.Path] = true
						commits = append(commits, c)
					}
				}
			}
		}
		if len(keys) == 0 {
			return rep, fmt.Errorf("%w: value %s is not in %s's history", ErrNothingToRedact, req.Value.Short(), req.Agent)
		}
		vals[req.Value] = true
	}
	for v := range vals {
		if len(set.byValue[v]) > 0 {
			delete(vals, v) // redacted already
		}
	}
	if len(vals) == 0 {
		return rep, fmt.Errorf("%w: it is redacted already (agentstate redactions lists the records)", ErrNothingToRedact)
	}
	if versions != nil {
		if commits, err = r.firstCommits(ctx, versions, vals); err != nil {
			return rep, err
		}
	}
	// What the store keeps without these values: every block of every
	// other value any root reaches.
	// What to remove: the values' raw blocks, or the blocks asked for.
	cand := map[objects.CID]map[objects.CID]bool{}
	candAll := map[objects.CID]bool{}
	for v := range vals {
		leaves, err := r.valueLeaves(ctx, v)
		if err != nil {
			return rep, fmt.Errorf("redact: value %s: %w", v.Short(), err)
		}
		cand[v] = map[objects.CID]bool{}
		for _, c := range leaves {
			if req.Blocks == nil || slices.Contains(req.Blocks[v], c) {
				cand[v][c] = true
				candAll[c] = true
			}
		}
		if req.Blocks != nil && len(cand[v]) != len(slices.Compact(slices.SortedFunc(slices.Values(req.Blocks[v]), cmpCIDText))) {
			return rep, fmt.Errorf("%w: a block asked for is not a raw block of value %s", ErrBadRedaction, v.Short())
		}
	}
	// A value that is not redacted keeps every block it uses; a redacted
	// one keeps none of these candidates.
	reach, problems, err := r.walkAll(ctx, dag.WalkOptions{Absent: func(v, c objects.CID) bool {
		if c.IsZero() {
			return vals[v] || len(set.byValue[v]) > 0
		}
		if vals[v] {
			return cand[v][c]
		}
		return len(set.byValue[v]) > 0 && (set.blocks[c] || candAll[c])
	}}, nil)
	if err != nil {
		return rep, err
	}
	if len(problems) > 0 {
		return rep, fmt.Errorf("redact: %w: %d, e.g. %v (nothing was changed; see agentstate verify)", ErrDamaged, len(problems), problems[0])
	}
	var remove []objects.CID
	kept := map[objects.CID]bool{}
	for c := range candAll {
		if reach.Has(c) {
			kept[c] = true
		} else {
			remove = append(remove, c)
		}
	}
	rec := &redaction.Record{Agent: req.Agent, Keys: sortedKeys(keys), Values: mapKeys(vals), Blocks: remove,
		Commits: commits, Reason: req.Reason, Time: r.Now()}
	rec.Normalize()
	rep.Keys, rep.Values, rep.Commits, rep.Kept = rec.Keys, rec.Values, rec.Commits, len(kept)
	for _, c := range rec.Blocks {
		if data, err := r.Blocks.Get(ctx, c); err == nil {
			rep.Removed++
			rep.Bytes += int64(len(data))
		}
	}
	if len(kept) > 0 && versions != nil {
		rep.Shared, err = r.sharedVersions(ctx, req.Key, versions, vals, set, kept)
		if err != nil {
			return rep, err
		}
	}
	if req.DryRun {
		return rep, nil
	}
	prev, _, err := r.Storage.GetMeta(ctx, redactionHeadPrefix+req.Agent)
	if err != nil {
		return rep, err
	}
	rec.Prev = string(prev)
	if err := rec.Sign(key); err != nil {
		return rep, fmt.Errorf("%w: %w", ErrBadRedaction, err)
	}
	rep.Record, rep.ID = rec, rec.ID()
	// The signer first, so the record is honoured the moment it exists.
	pub := KeyHex(key.Public().(ed25519.PublicKey))
	signers, err := r.TrustedKeys(ctx, req.Agent, KeySignsHistory)
	if err != nil {
		return rep, err
	}
	if !slices.ContainsFunc(signers, func(k ed25519.PublicKey) bool { return KeyHex(k) == pub }) {
		if _, err := r.ApplyKeyOp(ctx, KeyOp{Op: KeyOpTrust, Agent: req.Agent, Keys: []string{pub}, Source: "redact"}); err != nil {
			return rep, err
		}
	}
	defer r.reds.forget()
	if err := r.Storage.SetMeta(ctx, redactionPrefix+req.Agent+"/"+rep.ID, rec.Line()); err != nil {
		return rep, err
	}
	if err := r.Storage.SetMeta(ctx, redactionHeadPrefix+req.Agent, []byte(rep.ID)); err != nil {
		return rep, err
	}
	if err := r.markHistoryRebuild(ctx, req.Agent); err != nil {
		return rep, err
	}
	if redactHook != nil {
		redactHook("recorded")
	}
	return rep, r.removeBlocks(ctx, rec.Blocks)
}

// removeBlocks deletes blocks a record names (those still there) and gives
// their space back, so their bytes leave the store's files.
func (r *Repo) removeBlocks(ctx context.Context, blocks []objects.CID) error {
	deleter, ok := r.Storage.(objects.BlockDeleter)
	if !ok {
		return fmt.Errorf("redact: this storage cannot delete blocks")
	}
	var there []objects.CID
	for _, c := range blocks {
		if ok, err := r.Blocks.Has(ctx, c); err != nil {
			return err
		} else if ok {
			there = append(there, c)
		}
	}
	if len(there) == 0 {
		return nil
	}
	// Stat caches name values by CID: a checkout must not trust a file
	// against a value that is gone.
	if err := r.StatCache().Clear(); err != nil {
		return fmt.Errorf("redact: dropping stat caches: %w", err)
	}
	if err := deleter.Delete(ctx, there...); err != nil {
		return fmt.Errorf("redact: deleting: %w", err)
	}
	r.scrub()
	return nil
}

// Scrubber is an optional ability of a Storage: after deletions, rewrite
// whatever files still hold the deleted bytes (a redaction's), not only
// what is worth the space (Reclaimer).
type Scrubber interface{ Scrub() }

func (r *Repo) scrub() {
	if sc, ok := r.Storage.(Scrubber); ok {
		sc.Scrub()
	} else if rc, ok := r.Storage.(Reclaimer); ok {
		rc.Reclaim()
	}
}

// sharedVersions names the versions of key, neither redacted nor being
// redacted, that use the kept chunks.
func (r *Repo) sharedVersions(ctx context.Context, key string, versions map[objects.CID]objects.CID, vals map[objects.CID]bool, set *redactionSet, kept map[objects.CID]bool) ([]SharedVersion, error) {
	byValue := map[objects.CID]*SharedVersion{}
	for c, v := range versions {
		if vals[v] || len(set.byValue[v]) > 0 {
			continue
		}
		if sv, ok := byValue[v]; ok {
			if ct, err := r.timeOf(ctx, c); err == nil {
				if st, err := r.timeOf(ctx, sv.Commit); err == nil && ct < st {
					sv.Commit = c
				}
			}
			continue
		}
		leaves, err := r.valueLeaves(ctx, v)
		if err != nil {
			return nil, err
		}
		n := 0
		for _, l := range leaves {
			if kept[l] {
				n++
			}
		}
		if n > 0 {
			byValue[v] = &SharedVersion{Key: key, Value: v, Commit: c, Chunks: n}
		}
	}
	var out []SharedVersion
	for _, sv := range byValue {
		out = append(out, *sv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Commit.String() < out[j].Commit.String() })
	return out, nil
}

func (r *Repo) timeOf(ctx context.Context, c objects.CID) (int64, error) {
	cm, err := r.Commit(ctx, c)
	if err != nil {
		return 0, err
	}
	return cm.Time, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func mapKeys(m map[objects.CID]bool) []objects.CID {
	out := make([]objects.CID, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// RedactionLines returns the lines of agent's honoured records, oldest
// first: what a clone, pull, send, CAR export or history pack carries.
func (r *Repo) RedactionLines(ctx context.Context, agent string) ([][]byte, error) {
	ris, err := r.Redactions(ctx, agent)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, ri := range ris {
		if ri.Problem == "" && ri.Record != nil {
			out = append(out, ri.Record.Line())
		}
	}
	return out, nil
}

// JudgeRedactions checks records that came from elsewhere (a transfer, a
// CAR, a history pack) before anything they cover is taken: each must be
// canonical, signed by the key it names, that key trusted here for the
// record's agent to sign histories (as a history manifest's signer must
// be), and its prev held here or among lines. It returns which raw blocks
// of which values may then be missing (this store's honoured records and
// these), or an error that refuses them all: ErrBadRedaction for a
// malformed, forged or unsigned record, ErrUntrustedRedaction for a signer
// not trusted.
//
// alsoTrusted are keys (64 hex digits) taken as trusted for every record
// beside the store's: the verified signer of a history manifest being
// restored, which the restore then records as trusted for the agent.
func (r *Repo) JudgeRedactions(ctx context.Context, lines [][]byte, alsoTrusted ...string) (func(v, c objects.CID) bool, error) {
	set, _, err := r.readRedactions(ctx)
	if err != nil {
		return nil, err
	}
	recs, err := r.judge(ctx, lines, alsoTrusted)
	if err != nil {
		return nil, err
	}
	merged := &redactionSet{byValue: map[objects.CID][]*RedactionInfo{}, blocks: map[objects.CID]bool{}}
	for v, ris := range set.byValue {
		merged.byValue[v] = ris
	}
	for c := range set.blocks {
		merged.blocks[c] = true
	}
	for _, rec := range recs {
		ri := &RedactionInfo{ID: rec.ID(), Record: rec}
		for _, v := range rec.Values {
			merged.byValue[v] = append(merged.byValue[v], ri)
		}
		for _, c := range rec.Blocks {
			merged.blocks[c] = true
		}
	}
	return merged.absent, nil
}

func (r *Repo) judge(ctx context.Context, lines [][]byte, alsoTrusted []string) ([]*redaction.Record, error) {
	var recs []*redaction.Record
	ids := map[string]string{}
	for _, l := range lines {
		rec, err := redaction.Parse(l)
		if err != nil {
			return nil, fmt.Errorf("%w: a redaction record that came in: %w", ErrBadRedaction, err)
		}
		if err := rec.Verify(); err != nil {
			return nil, fmt.Errorf("%w: a redaction record that came in is forged or unsigned: %w", ErrBadRedaction, err)
		}
		keys, err := r.TrustedKeys(ctx, rec.Agent, KeySignsHistory)
		if err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(keys, func(k ed25519.PublicKey) bool { return KeyHex(k) == KeyHex(rec.Signer) }) && !slices.Contains(alsoTrusted, KeyHex(rec.Signer)) {
			return nil, &UntrustedRedactionError{Agent: rec.Agent, Signer: KeyHex(rec.Signer), What: rec.What()}
		}
		recs = append(recs, rec)
		ids[rec.ID()] = rec.Agent
	}
	for _, rec := range recs {
		if rec.Prev == "" || ids[rec.Prev] == rec.Agent {
			continue
		}
		if _, ok, err := r.Storage.GetMeta(ctx, redactionPrefix+rec.Agent+"/"+rec.Prev); err != nil {
			return nil, err
		} else if !ok {
			return nil, fmt.Errorf("%w: a redaction record of %s that came in names a prev record %.16s… that neither side holds", ErrBadRedaction, rec.Agent, rec.Prev)
		}
	}
	return recs, nil
}

// UntrustedRedactionError is a record signed by a key the store does not
// trust for its agent. It matches ErrUntrustedRedaction.
type UntrustedRedactionError struct {
	Agent, Signer, What string
}

func (e *UntrustedRedactionError) Error() string {
	return fmt.Sprintf("the redaction of %s's %s is signed by %s, a key this store does not trust for %s (nothing was taken)", e.Agent, e.What, e.Signer, e.Agent)
}

func (e *UntrustedRedactionError) Is(t error) bool { return t == ErrUntrustedRedaction }

// AddedRedactions says what AddRedactions did.
type AddedRedactions struct {
	Added   int `json:"added"`   // records new here
	Removed int `json:"removed"` // this store's blocks they removed
	// Pending: writers were in flight, so the blocks were left for the
	// next gc (which removes them: verify accepts them either way).
	Pending bool `json:"pending,omitempty"`
}

// AddRedactions keeps records that came from elsewhere, judged as
// JudgeRedactions judges them, and removes this store's own copies of the
// blocks they name that no unredacted value uses: a store that learns a
// record redacts what it holds. An agent with no record head here takes
// the newest of them as its head.
func (r *Repo) AddRedactions(ctx context.Context, lines [][]byte, alsoTrusted ...string) (AddedRedactions, error) {
	var out AddedRedactions
	if len(lines) == 0 {
		return out, nil
	}
	recs, err := r.judge(ctx, lines, alsoTrusted)
	if err != nil {
		return out, err
	}
	defer r.reds.forget()
	named := map[string]bool{}
	for _, rec := range recs {
		named[rec.Prev] = true
	}
	for _, rec := range recs {
		id := rec.ID()
		name := redactionPrefix + rec.Agent + "/" + id
		if _, ok, err := r.Storage.GetMeta(ctx, name); err != nil {
			return out, err
		} else if ok {
			continue
		}
		if err := r.Storage.SetMeta(ctx, name, rec.Line()); err != nil {
			return out, err
		}
		if err := r.markHistoryRebuild(ctx, rec.Agent); err != nil {
			return out, err
		}
		out.Added++
		if !named[id] { // a tip of the chain that came in
			if _, ok, err := r.Storage.GetMeta(ctx, redactionHeadPrefix+rec.Agent); err != nil {
				return out, err
			} else if !ok {
				if err := r.Storage.SetMeta(ctx, redactionHeadPrefix+rec.Agent, []byte(id)); err != nil {
					return out, err
				}
			}
		}
	}
	if out.Added == 0 {
		return out, nil
	}
	// The local copies: what no unredacted value uses goes now, unless
	// writers are in flight (then gc, which waits for them, takes it).
	if _, ok := r.Storage.(Collector); ok {
		out.Pending = true
		return out, nil
	}
	if !r.gate.mu.TryLock() {
		out.Pending = true
		return out, nil
	}
	defer r.gate.mu.Unlock()
	set, _, err := r.readRedactions(ctx)
	if err != nil {
		return out, err
	}
	reach, problems, err := r.walkAll(ctx, dag.WalkOptions{Absent: set.absent}, nil)
	if err != nil {
		return out, err
	}
	if len(problems) > 0 {
		out.Pending = true // verify names them; gc refuses until they are dealt with
		return out, nil
	}
	var remove []objects.CID
	for _, rec := range recs {
		for _, c := range rec.Blocks {
			if !reach.Has(c) {
				if ok, err := r.Blocks.Has(ctx, c); err == nil && ok {
					remove = append(remove, c)
				}
			}
		}
	}
	out.Removed = len(remove)
	return out, r.removeBlocks(ctx, remove)
}

// historyRebuildPrefix + AGENT marks an agent redacted since its history
// was last pushed: the next push publishes a new history whose packs are
// all written anew, without the redacted content (export/history).
const historyRebuildPrefix = "history-rebuild/"

func (r *Repo) markHistoryRebuild(ctx context.Context, agent string) error {
	return r.Storage.SetMeta(ctx, historyRebuildPrefix+agent, []byte("1"))
}

// HistoryRebuild reports whether agent was redacted since its history was
// last pushed from this store.
func (r *Repo) HistoryRebuild(ctx context.Context, agent string) (bool, error) {
	_, ok, err := r.Storage.GetMeta(ctx, historyRebuildPrefix+agent)
	return ok, err
}

// HistoryRebuilt clears HistoryRebuild once a push published the history
// anew.
func (r *Repo) HistoryRebuilt(ctx context.Context, agent string) error {
	return r.deleteMeta(ctx, historyRebuildPrefix+agent)
}

func cmpCIDText(a, b objects.CID) int { return strings.Compare(a.String(), b.String()) }

// ValueLeaves lists the raw blocks of a value: itself when it is raw, else
// the chunks its nodes link.
func (r *Repo) ValueLeaves(ctx context.Context, v objects.CID) ([]objects.CID, error) {
	return r.valueLeaves(ctx, v)
}

// KeyVersions returns the value of key at every commit of agent's history
// (as forget left it) that holds it.
func (r *Repo) KeyVersions(ctx context.Context, agent, key string) (map[objects.CID]objects.CID, error) {
	cp, _, err := r.CheckpointOf(ctx, agent)
	if err != nil {
		return nil, err
	}
	hist, err := r.historyCommits(ctx, agent, cp)
	if err != nil {
		return nil, err
	}
	return r.keyVersions(ctx, hist, key)
}
