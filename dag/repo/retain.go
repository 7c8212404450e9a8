package repo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/internal/progress"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

// Retention. An agent's states are the places its operation log moved HEAD
// to, each with the time it got there (restic's snapshots). A forget keeps
// the states a Policy selects, HEAD and every tagged commit, and cuts the
// rest:
//
//   - the horizon is the oldest state of the newest run of kept states;
//     everything newer (every commit a kept operation reaches whose time is
//     not before the horizon commit's) stays whole, so the recent history
//     reads, diffs and undoes as before;
//   - kept states older than the horizon (a daily, a monthly, a tag) stay
//     as islands: their trees whole, their parents cut;
//   - the operation log is cut before the horizon's operation, and a
//     checkpoint records what was cut, so verify proves the chain from the
//     cut on, undo stops at the horizon, log says where history was cut, and
//     gc walks no further than the cuts.
//
// The checkpoint (meta record checkpoint/<agent>) is written first, in one
// write; trimming the log and deleting blocks follow and may be killed at
// any instant: entries at or before the cut are ignored wherever they still
// are, and gc deletes only what the checkpoint leaves unreachable.

// ErrHorizon: an undo (or reset) would reach a state a forget cut.
var ErrHorizon = errors.New("history horizon")

// Policy selects the states a forget keeps, in restic's vocabulary. Times
// are bucketed in UTC. HEAD and tagged commits are always kept.
type Policy struct {
	Last    int           `json:"last,omitempty"`    // the newest N states
	Hourly  int           `json:"hourly,omitempty"`  // the newest state of each of the last N hours that have one
	Daily   int           `json:"daily,omitempty"`   // ... days
	Weekly  int           `json:"weekly,omitempty"`  // ... ISO weeks
	Monthly int           `json:"monthly,omitempty"` // ... months
	Yearly  int           `json:"yearly,omitempty"`  // ... years
	Within  time.Duration `json:"within,omitempty"`  // every state within this of the newest
}

// IsZero says the policy keeps nothing but HEAD and tags.
func (p Policy) IsZero() bool {
	return p.Last == 0 && p.Hourly == 0 && p.Daily == 0 && p.Weekly == 0 && p.Monthly == 0 && p.Yearly == 0 && p.Within == 0
}

// String is the policy's recorded spelling: a checkpoint's "policy" member
// and a ForgetReport's Policy (docs/format.md §7.1). The format spells it in
// forget's words ("--keep-last 2", "HEAD and tags only"), so stores written
// before and after read the same; it is a description, never parsed.
func (p Policy) String() string {
	var parts []string
	for _, f := range []struct {
		name string
		n    int
	}{{"last", p.Last}, {"hourly", p.Hourly}, {"daily", p.Daily}, {"weekly", p.Weekly}, {"monthly", p.Monthly}, {"yearly", p.Yearly}} {
		if f.n != 0 {
			parts = append(parts, fmt.Sprintf("--keep-%s %d", f.name, f.n))
		}
	}
	if p.Within != 0 {
		parts = append(parts, "--keep-within "+p.Within.String())
	}
	if len(parts) == 0 {
		return "HEAD and tags only"
	}
	return strings.Join(parts, " ")
}

// State is one place an agent's HEAD was: an operation (Seq; 0 for an
// island kept from an earlier forget or a tag) and when.
type State struct {
	Seq    uint64      `json:"seq,omitempty"`
	Commit objects.CID `json:"commit"`
	Time   int64       `json:"time"`
	Tag    string      `json:"tag,omitempty"`
}

// selectStates returns, for states newest first, which the policy keeps
// (restic's rules: each --keep-X N keeps the newest state of each of the N
// newest X-buckets that have one; -1 means every bucket).
func selectStates(states []State, p Policy) []bool {
	keep := make([]bool, len(states))
	if len(states) == 0 {
		return keep
	}
	for i := range states {
		if p.Last < 0 || i < p.Last {
			keep[i] = true
		}
		if p.Within > 0 && states[0].Time-states[i].Time <= int64(p.Within/time.Second) {
			keep[i] = true
		}
	}
	buckets := []struct {
		n   int
		key func(t time.Time) string
	}{
		{p.Hourly, func(t time.Time) string { return t.Format("2006-01-02T15") }},
		{p.Daily, func(t time.Time) string { return t.Format("2006-01-02") }},
		{p.Weekly, func(t time.Time) string { y, w := t.ISOWeek(); return fmt.Sprintf("%d-W%02d", y, w) }},
		{p.Monthly, func(t time.Time) string { return t.Format("2006-01") }},
		{p.Yearly, func(t time.Time) string { return t.Format("2006") }},
	}
	for _, b := range buckets {
		if b.n == 0 {
			continue
		}
		last, n := "", 0
		for i, s := range states {
			k := b.key(time.Unix(s.Time, 0).UTC())
			if k == last {
				continue
			}
			if b.n > 0 && n >= b.n {
				break
			}
			last, n = k, n+1
			keep[i] = true
		}
	}
	return keep
}

// CutLink is a commit whose parents a forget cut.
type CutLink struct {
	Commit  objects.CID   `json:"commit"`
	Parents []objects.CID `json:"parents"`
}

// Checkpoint records an agent's last forget: what was kept, where the log
// was cut and which parent links lead into what is gone.
type Checkpoint struct {
	Agent       string      `json:"agent"`
	Time        int64       `json:"time"`
	Policy      string      `json:"policy"`
	Cut         refs.Cut    `json:"cut"`
	At          uint64      `json:"at"`      // the newest operation when the forget ran
	Horizon     objects.CID `json:"horizon"` // the oldest state of the kept run
	HorizonTime int64       `json:"horizonTime"`
	Islands     []State     `json:"islands"` // kept states older than the horizon
	Cuts        []CutLink   `json:"cuts"`
	// Forgotten counts, over every forget so far, the operations and commits
	// cut.
	ForgottenOps     uint64 `json:"forgottenOps"`
	ForgottenCommits uint64 `json:"forgottenCommits"`

	cut map[objects.CID]map[objects.CID]bool
}

func checkpointName(agent string) string { return "checkpoint/" + agent }

// CheckpointOf returns agent's checkpoint; ok is false when it was never
// forgotten.
func (r *Repo) CheckpointOf(ctx context.Context, agent string) (*Checkpoint, bool, error) {
	data, ok, err := r.Storage.GetMeta(ctx, checkpointName(agent))
	if err != nil || !ok {
		return nil, false, err
	}
	var cp Checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return nil, false, fmt.Errorf("repo: checkpoint of %q unreadable: %w", agent, err)
	}
	if cp.Agent != agent {
		return nil, false, fmt.Errorf("repo: checkpoint of %q names agent %q", agent, cp.Agent)
	}
	cp.index()
	return &cp, true, nil
}

func (cp *Checkpoint) index() {
	cp.cut = map[objects.CID]map[objects.CID]bool{}
	for _, l := range cp.Cuts {
		m := cp.cut[l.Commit]
		if m == nil {
			m = map[objects.CID]bool{}
			cp.cut[l.Commit] = m
		}
		for _, p := range l.Parents {
			m[p] = true
		}
	}
}

// IsCut reports whether the link from child to parent was cut.
func (cp *Checkpoint) IsCut(child, parent objects.CID) bool {
	if cp == nil {
		return false
	}
	return cp.cut[child][parent]
}

// cutSource gives Refs the cuts checkpoints record.
type cutSource struct{ r *Repo }

func (s cutSource) Cut(ctx context.Context, agent string) (refs.Cut, bool, error) {
	cp, ok, err := s.r.CheckpointOf(ctx, agent)
	if err != nil || !ok {
		return refs.Cut{}, false, err
	}
	return cp.Cut, true, nil
}

// Gone returns whether any agent's forget cut the link from child to
// parent: a walk that finds such a parent missing stops there (a fork or a
// reset of another agent may share a history that was cut).
func (r *Repo) Gone(ctx context.Context) (func(child, parent objects.CID) bool, error) {
	all := map[objects.CID]map[objects.CID]bool{}
	err := r.Storage.MetaPrefix(ctx, "checkpoint/", func(name string, v []byte) error {
		var cp Checkpoint
		if err := json.Unmarshal(v, &cp); err != nil {
			return fmt.Errorf("repo: checkpoint %s unreadable: %w", name, err)
		}
		for _, l := range cp.Cuts {
			m := all[l.Commit]
			if m == nil {
				m = map[objects.CID]bool{}
				all[l.Commit] = m
			}
			for _, p := range l.Parents {
				m[p] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return func(child, parent objects.CID) bool { return all[child][parent] }, nil
}

// LogOptions returns how dag.LogWith walks agent's history: around its
// cuts, with its islands, and past other agents' cuts where what they cut
// is gone.
func (r *Repo) LogOptions(ctx context.Context, agent string) (dag.LogOptions, *Checkpoint, error) {
	gone, err := r.Gone(ctx)
	if err != nil {
		return dag.LogOptions{}, nil, err
	}
	cp, ok, err := r.CheckpointOf(ctx, agent)
	if err != nil || !ok {
		return dag.LogOptions{Gone: gone}, nil, err
	}
	o := dag.LogOptions{Cut: cp.IsCut, Gone: gone}
	for _, s := range cp.Islands {
		o.Islands = append(o.Islands, s.Commit)
	}
	return o, cp, nil
}

// Tags. A tag names a commit of an agent to keep: forget keeps it, gc
// keeps what it reaches. Meta record tag/<agent>/<name> holds the CID.

func tagName(agent, name string) string { return "tag/" + agent + "/" + name }

// ErrTagExists: SetTag was asked to name a commit with a tag that already
// names another one (a *TagExistsError says which).
var ErrTagExists = errors.New("repo: tag already exists")

// TagExistsError is SetTag's refusal to move a tag.
type TagExistsError struct {
	Agent, Name string
	Commit      objects.CID // the commit the tag names now
	Want        objects.CID // the commit it was asked to name
}

func (e *TagExistsError) Error() string {
	return fmt.Sprintf("repo: agent %s already has a tag %q, on %s; it was not moved to %s", e.Agent, e.Name, e.Commit.Short(), e.Want.Short())
}

func (e *TagExistsError) Unwrap() error { return ErrTagExists }

// TagWriter is an optional ability of a Storage that changes tags in its
// own process: a served store's client, whose server keeps SetTag's rule
// (clients write no raw tag record, so that the check and the write are
// one step there). WriteTag is SetTag (MoveTag with move), RemoveTag is
// DeleteTag.
type TagWriter interface {
	WriteTag(ctx context.Context, agent, name string, c objects.CID, move bool) error
	RemoveTag(ctx context.Context, agent, name string) (bool, error)
}

// SetTag names commit c of agent's history name. A tag is what keeps a
// commit from forget, so an existing tag is never moved silently: naming
// the commit it already names succeeds and changes nothing, and naming
// another one is refused with a *TagExistsError (ErrTagExists). MoveTag
// moves a tag.
func (r *Repo) SetTag(ctx context.Context, agent, name string, c objects.CID) error {
	return r.setTag(ctx, agent, name, c, false)
}

// MoveTag is SetTag that also moves an existing tag of that name to c.
func (r *Repo) MoveTag(ctx context.Context, agent, name string, c objects.CID) error {
	return r.setTag(ctx, agent, name, c, true)
}

func (r *Repo) setTag(ctx context.Context, agent, name string, c objects.CID, move bool) error {
	if err := refs.ValidateAgent(agent); err != nil {
		return err
	}
	if err := refs.ValidateAgent(name); err != nil {
		return fmt.Errorf("tag name: %w", err)
	}
	if tw, ok := r.Storage.(TagWriter); ok {
		return tw.WriteTag(ctx, agent, name, c, move) // a served store: the rule is kept in its server
	}
	if _, err := r.Commit(ctx, c); err != nil {
		return err
	}
	// Tag changes of one agent take turns with each other and with its
	// forget in this process, so the check below holds until the write.
	defer r.moves.lock(agent)()
	old, ok, err := r.Storage.GetMeta(ctx, tagName(agent, name))
	if err != nil {
		return err
	}
	if ok {
		cur, perr := objects.ParseCID(string(old))
		switch {
		case perr == nil && cur == c:
			return nil
		case perr == nil && !move:
			return &TagExistsError{Agent: agent, Name: name, Commit: cur, Want: c}
		case perr != nil && !move:
			// A damaged record is replaced only on request, like any tag.
			return fmt.Errorf("%w: agent %s has a tag %q whose record is unreadable (%v); it was not replaced", ErrTagExists, agent, name, perr)
		}
	}
	return r.Storage.SetMeta(ctx, tagName(agent, name), []byte(c.String()))
}

// DeleteTag removes a tag, and only it; it is not an error if there is
// none. A damaged record (BadTags: a name no tag may have, a value that is
// no CID) is removed by its name as well.
func (r *Repo) DeleteTag(ctx context.Context, agent, name string) (bool, error) {
	nameErr := refs.ValidateAgent(name)
	if name == "" || agent == "" {
		return false, fmt.Errorf("tag name: %w", nameErr)
	}
	if tw, ok := r.Storage.(TagWriter); ok {
		return tw.RemoveTag(ctx, agent, name)
	}
	defer r.moves.lock(agent)()
	_, ok, err := r.Storage.GetMeta(ctx, tagName(agent, name))
	if err != nil {
		return false, err
	}
	if !ok {
		if nameErr != nil {
			return false, fmt.Errorf("tag name: %w", nameErr)
		}
		return false, nil
	}
	return true, r.deleteMeta(ctx, tagName(agent, name))
}

// Tag is a named commit.
type Tag struct {
	Name   string      `json:"name"`
	Commit objects.CID `json:"commit"`
}

// Tags returns agent's tags ("" for every agent's), in name order. A record
// under tag/ that names no tag is left out (BadTags).
func (r *Repo) Tags(ctx context.Context, agent string) (map[string][]Tag, error) {
	prefix := "tag/"
	if agent != "" {
		prefix += agent + "/"
	}
	out := map[string][]Tag{}
	err := r.Storage.MetaPrefix(ctx, prefix, func(name string, v []byte) error {
		a, t, bad := parseTag(name, v)
		if bad != nil || (agent != "" && a != agent) {
			return nil // no tag (BadTags lists it): it protects nothing and breaks nothing
		}
		out[a] = append(out[a], t)
		return nil
	})
	return out, err
}

// agentRoots is one agent's part of the roots: the commits gc keeps and
// verify checks for it, and the cuts to honour when walking from them.
type agentRoots struct {
	agent   string
	commits []objects.CID
	cp      *Checkpoint
}

// rootsByAgent returns, per agent, HEAD, the commits its kept operations
// name (those after its cut, but not the state before the horizon), its
// islands and tags.
func (r *Repo) rootsByAgent(ctx context.Context, overrides map[string]*Checkpoint) ([]agentRoots, error) {
	heads, err := r.Refs.Agents(ctx)
	if err != nil {
		return nil, err
	}
	tags, err := r.Tags(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []agentRoots
	for _, h := range heads {
		ar := agentRoots{agent: h.Agent}
		cp, _, err := r.CheckpointOf(ctx, h.Agent)
		if err != nil {
			return nil, err
		}
		if o, ok := overrides[h.Agent]; ok {
			cp = o
		}
		ar.cp = cp
		seen := map[objects.CID]bool{}
		add := func(c objects.CID) {
			if !c.IsZero() && !seen[c] {
				seen[c] = true
				ar.commits = append(ar.commits, c)
			}
		}
		add(h.Commit)
		for e, err := range r.Refs.Log(ctx, h.Agent) {
			if err != nil {
				return nil, err
			}
			if cp != nil && e.Seq <= cp.Cut.Seq {
				continue
			}
			if cp == nil || e.Seq != cp.Cut.Seq+1 {
				add(e.Old) // the horizon operation's Old is the state before it: cut
			}
			add(e.New)
		}
		if cp != nil {
			for _, s := range cp.Islands {
				add(s.Commit)
			}
		}
		for _, t := range tags[h.Agent] {
			add(t.Commit)
		}
		out = append(out, ar)
	}
	return out, nil
}

// walkAll walks every agent's roots with its cuts and returns the union.
func (r *Repo) walkAll(ctx context.Context, opts dag.WalkOptions, overrides map[string]*Checkpoint) (dag.Reach, []dag.Problem, error) {
	return r.walkAllIn(ctx, r.Blocks, opts, overrides)
}

// walkAllIn is walkAll reading blocks from bs (a scanned view of the store).
func (r *Repo) walkAllIn(ctx context.Context, bs objects.BlockStore, opts dag.WalkOptions, overrides map[string]*Checkpoint) (dag.Reach, []dag.Problem, error) {
	byAgent, err := r.rootsByAgent(ctx, overrides)
	if err != nil {
		return nil, nil, err
	}
	gone, err := r.Gone(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, cp := range overrides {
		prev := gone
		gone = func(child, parent objects.CID) bool { return prev(child, parent) || cp.IsCut(child, parent) }
	}
	opts.Gone = gone
	if opts.Absent == nil { // what redactions removed on purpose (redact.go)
		set, _, err := r.readRedactions(ctx) // not the readers' cache: verify and gc judge afresh
		if err != nil {
			return nil, nil, err
		}
		opts.Absent = set.absent
	}
	// One progress count over every walk below.
	ctx, _ = progress.Begin(ctx, -1)
	// Agents never forgotten walk together.
	var plain []objects.CID
	reach := dag.Reach{}
	var problems []dag.Problem
	merge := func(rc dag.Reach, ps []dag.Problem) {
		if len(reach) == 0 && rc != nil { // the first (often the only) walk's set is the union so far
			reach = rc
			problems = append(problems, ps...)
			return
		}
		for c := range rc {
			reach[c] = struct{}{}
		}
		problems = append(problems, ps...)
	}
	// A scanSet given as opts.Reached is what every walk starts from (a
	// walk does not go below a block its set holds): each walk marks a
	// copy of it, and it ends as their union. One set shared by the walks
	// would be wrong: a commit one agent's walk marked without following a
	// parent its forget cut would stop another's walk there.
	base, _ := opts.Reached.(*scanSet)
	var union *scanSet
	walk := func(commits []objects.CID, o dag.WalkOptions) error {
		var own *scanSet
		if base != nil {
			own = base.clone()
			o.Reached = own
		}
		rc, ps, err := dag.Walk(ctx, bs, commits, o)
		if err != nil {
			return err
		}
		merge(rc, ps)
		if own != nil {
			if union == nil {
				union = own
			} else {
				union.union(own)
			}
		}
		return nil
	}
	for _, ar := range byAgent {
		if ar.cp == nil {
			plain = append(plain, ar.commits...)
			continue
		}
		o := opts
		o.Cut = ar.cp.IsCut
		if err := walk(ar.commits, o); err != nil {
			return nil, nil, err
		}
	}
	if err := walk(plain, opts); err != nil {
		return nil, nil, err
	}
	if base != nil {
		*base = *union
	}
	return reach, problems, nil
}

// ForgetReport says what a forget kept and cut.
type ForgetReport struct {
	Agent      string      `json:"agent"`
	Policy     string      `json:"policy"`
	States     int         `json:"states"`     // states considered (operations after the last cut, islands, tags)
	KeptStates int         `json:"keptStates"` // kept (HEAD, policy, tags)
	Horizon    objects.CID `json:"horizon"`    // the oldest state of the kept run
	Islands    int         `json:"islands"`    // kept states older than the horizon
	CutOps     uint64      `json:"cutOps"`     // operations cut from the log now
	CutCommits int         `json:"cutCommits"` // commits no longer in the kept history
	Unchanged  bool        `json:"unchanged"`  // nothing to cut
	DryRun     bool        `json:"dryRun"`
	Forgotten  []State     `json:"forgotten"` // the states cut, newest first
	GC         GCReport    `json:"gc"`        // what the prune freed (or would)
}

// Forget applies policy p to agent: it writes the agent's checkpoint, trims
// its operation log and deletes the blocks nothing kept reaches (all
// agents' garbage, as gc does). With dryRun it changes nothing and reports
// what would go and the bytes that would be freed.
//
// Like gc it waits for the writers in flight and holds new ones back while
// it runs, so a task landing beside it never loses a block it is about to
// make reachable; the caller must not hold the write gate.
func (r *Repo) Forget(ctx context.Context, agent string, p Policy, dryRun bool) (ForgetReport, error) {
	if f, ok := r.Storage.(Forgetter); ok {
		reps, gc, err := f.ForgetAgents(ctx, []string{agent}, p, dryRun) // in the server
		if err != nil {
			return ForgetReport{}, err
		}
		if len(reps) != 1 {
			return ForgetReport{}, fmt.Errorf("forget: the server reported %d agents for one", len(reps))
		}
		reps[0].GC = gc
		return reps[0], nil
	}
	release, err := r.gate.exclusive(ctx)
	if err != nil {
		return ForgetReport{}, err
	}
	defer release()
	planned := map[string]*Checkpoint{}
	rep, err := r.forgetOne(ctx, agent, p, dryRun, planned)
	if err != nil {
		return rep, err
	}
	if dryRun {
		rep.GC, err = r.collect(ctx, true, planned)
	} else {
		rep.GC, err = r.collect(ctx, false, nil)
	}
	return rep, err
}

// ForgetAgents is Forget of several agents, one after the other, with one
// collection at the end instead of one per agent (a collection walks the
// whole store). The reports say what each agent's policy cut; the
// collection's report, for all of them, is returned beside them. An agent
// that fails is reported in the error, which names it, and the others go
// on: one broken agent does not hold back the retention of the rest.
func (r *Repo) ForgetAgents(ctx context.Context, agents []string, p Policy, dryRun bool) ([]ForgetReport, GCReport, error) {
	if len(agents) == 0 {
		return nil, GCReport{}, nil
	}
	if f, ok := r.Storage.(Forgetter); ok {
		return f.ForgetAgents(ctx, agents, p, dryRun) // a served store forgets in its server
	}
	release, err := r.gate.exclusive(ctx)
	if err != nil {
		return nil, GCReport{}, err
	}
	defer release()
	var reps []ForgetReport
	var errs []error
	planned := map[string]*Checkpoint{}
	for _, agent := range agents {
		if err := ctx.Err(); err != nil {
			return reps, GCReport{}, err
		}
		rep, err := r.forgetOne(ctx, agent, p, dryRun, planned)
		if err != nil {
			errs = append(errs, fmt.Errorf("forget %s: %w", agent, err))
			delete(planned, agent)
			continue
		}
		reps = append(reps, rep)
	}
	if len(reps) == 0 {
		return nil, GCReport{}, errors.Join(errs...)
	}
	var gc GCReport
	if dryRun {
		gc, err = r.collect(ctx, true, planned)
	} else {
		gc, err = r.collect(ctx, false, nil)
	}
	return reps, gc, errors.Join(append(errs, err)...)
}

// forgetOne plans agent's checkpoint under p and, unless dryRun, writes it
// and trims the log; the plan is added to planned. The caller holds the
// write gate exclusively.
func (r *Repo) forgetOne(ctx context.Context, agent string, p Policy, dryRun bool, planned map[string]*Checkpoint) (ForgetReport, error) {
	defer r.moves.lock(agent)()
	rep, cp, err := r.planForget(ctx, agent, p)
	if err != nil {
		return rep, err
	}
	rep.DryRun = dryRun
	planned[agent] = cp
	if dryRun || rep.Unchanged {
		return rep, nil
	}
	data, err := json.Marshal(cp)
	if err != nil {
		return rep, err
	}
	if err := r.Storage.SetMeta(ctx, checkpointName(agent), data); err != nil {
		return rep, fmt.Errorf("forget: writing the checkpoint of %q (nothing was cut): %w", agent, err)
	}
	if t, ok := r.Storage.(refs.LogTrimmer); ok && cp.Cut.Seq > 0 {
		if err := t.TrimLog(ctx, agent, cp.Cut.Seq); err != nil {
			return rep, fmt.Errorf("forget: trimming the log of %q (the checkpoint is written; run forget again): %w", agent, err)
		}
	}
	return rep, nil
}

// Forgetter is an optional ability of a Storage that forgets in its own
// process: a served store's client.
type Forgetter interface {
	ForgetAgents(ctx context.Context, agents []string, p Policy, dryRun bool) ([]ForgetReport, GCReport, error)
}

// planForget computes agent's new checkpoint under p.
func (r *Repo) planForget(ctx context.Context, agent string, p Policy) (ForgetReport, *Checkpoint, error) {
	rep := ForgetReport{Agent: agent, Policy: p.String()}
	h, err := r.Refs.Head(ctx, agent)
	if err != nil {
		return rep, nil, err
	}
	old, _, err := r.CheckpointOf(ctx, agent)
	if err != nil {
		return rep, nil, err
	}
	entries, err := r.Refs.Entries(ctx, agent)
	if err != nil {
		return rep, nil, err
	}
	if len(entries) == 0 {
		return rep, nil, fmt.Errorf("forget: agent %s has no operations", agent)
	}
	tagged, err := r.Tags(ctx, agent)
	if err != nil {
		return rep, nil, err
	}
	// The states, newest first: the operations, then earlier islands.
	var states []State
	for i := len(entries) - 1; i >= 0; i-- {
		states = append(states, State{Seq: entries[i].Seq, Commit: entries[i].New, Time: entries[i].Time})
	}
	if old != nil {
		for _, s := range old.Islands {
			if s.Tag == "" {
				states = append(states, s)
			}
		}
	}
	keep := selectStates(states, p)
	keep[0] = true // HEAD's operation
	rep.States = len(states)
	// The horizon: the oldest operation of the newest run of kept ones.
	j := 0
	for j+1 < len(entries) && keep[j+1] {
		j++
	}
	hz := entries[len(entries)-1-j]
	hc, err := r.Commit(ctx, hz.New)
	if err != nil {
		return rep, nil, err
	}
	cp := &Checkpoint{Agent: agent, Time: r.Now(), Policy: p.String(), At: entries[len(entries)-1].Seq,
		Horizon: hz.New, HorizonTime: hc.Time}
	if old != nil {
		cp.Cut, cp.ForgottenOps, cp.ForgottenCommits = old.Cut, old.ForgottenOps, old.ForgottenCommits
	}
	if hz.Seq > cp.Cut.Seq+1 {
		cp.Cut = refs.Cut{Seq: hz.Seq - 1, Hash: hz.Prev, New: hz.Old}
		rep.CutOps = hz.Seq - 1 - (func() uint64 {
			if old != nil {
				return old.Cut.Seq
			}
			return 0
		})()
	}
	cp.ForgottenOps += rep.CutOps
	// Islands: kept states older than the horizon, and tags.
	islandSeen := map[objects.CID]bool{}
	for i, s := range states {
		if i <= j {
			continue
		}
		if keep[i] && !islandSeen[s.Commit] {
			islandSeen[s.Commit] = true
			cp.Islands = append(cp.Islands, s)
		}
	}
	for _, t := range tagged[agent] {
		if !islandSeen[t.Commit] {
			tc, err := r.Commit(ctx, t.Commit)
			if err != nil {
				return rep, nil, fmt.Errorf("forget: tag %s: %w", t.Name, err)
			}
			islandSeen[t.Commit] = true
			cp.Islands = append(cp.Islands, State{Commit: t.Commit, Time: tc.Time, Tag: t.Name})
		}
	}
	rep.KeptStates = j + 1 + len(cp.Islands)
	rep.Horizon, rep.Islands = cp.Horizon, len(cp.Islands)
	// Behind the horizon: the state before it and all its ancestors (within
	// earlier cuts).
	behind := map[objects.CID]bool{}
	if !hz.Old.IsZero() {
		stack := []objects.CID{hz.Old}
		for len(stack) > 0 {
			c := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if behind[c] {
				continue
			}
			behind[c] = true
			cm, err := r.Commit(ctx, c)
			if errors.Is(err, objects.ErrNotFound) || errors.Is(err, dag.ErrUnknown) {
				continue // cut by an earlier forget, with what is behind it
			}
			if err != nil {
				return rep, nil, err
			}
			for _, pc := range cm.Parents {
				if !old.IsCut(c, pc) {
					stack = append(stack, pc)
				}
			}
		}
	}
	// The kept commits: from every root of the kept run, every commit not
	// behind the horizon (a task that began before it and landed after keeps
	// its commits); from the islands, themselves. Every other parent link of
	// a kept commit is cut.
	roots := []objects.CID{h.Commit}
	for _, e := range entries[len(entries)-1-j:] {
		if e.Seq != hz.Seq {
			roots = append(roots, e.Old)
		}
		roots = append(roots, e.New)
	}
	kept := map[objects.CID]bool{}
	for _, s := range cp.Islands {
		kept[s.Commit] = true
	}
	cuts := map[objects.CID][]objects.CID{}
	var stack []objects.CID
	for _, c := range roots {
		if !c.IsZero() && !kept[c] {
			kept[c] = true
			stack = append(stack, c)
		}
	}
	gone, err := r.Gone(ctx)
	if err != nil {
		return rep, nil, err
	}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		cm, err := r.Commit(ctx, c)
		if err != nil {
			return rep, nil, err
		}
		for _, pc := range cm.Parents {
			if kept[pc] {
				continue
			}
			if old.IsCut(c, pc) || behind[pc] {
				cuts[c] = append(cuts[c], pc)
				continue
			}
			if gone(c, pc) {
				if ok, err := r.Blocks.Has(ctx, pc); err != nil {
					return rep, nil, err
				} else if !ok {
					cuts[c] = append(cuts[c], pc)
					continue
				}
			}
			kept[pc] = true
			stack = append(stack, pc)
		}
	}
	for _, s := range cp.Islands {
		cm, err := r.Commit(ctx, s.Commit)
		if err != nil {
			return rep, nil, err
		}
		for _, pc := range cm.Parents {
			if !kept[pc] {
				cuts[s.Commit] = append(cuts[s.Commit], pc)
			}
		}
	}
	// Earlier cuts stay recorded while their child commit is in the store:
	// another agent (a fork, a reset) may walk through it, and must stop
	// where the parent is gone.
	if old != nil {
		for _, l := range old.Cuts {
			if kept[l.Commit] {
				continue // recomputed above
			}
			if ok, err := r.Blocks.Has(ctx, l.Commit); err != nil {
				return rep, nil, err
			} else if ok {
				cuts[l.Commit] = append(cuts[l.Commit], l.Parents...)
			}
		}
	}
	// The states cut: those whose commit nothing kept holds.
	for i, s := range states {
		if i > j && !keep[i] && !kept[s.Commit] {
			rep.Forgotten = append(rep.Forgotten, s)
		}
	}
	for c, ps := range cuts {
		slices.SortFunc(ps, func(a, b objects.CID) int { return a.Compare(b) })
		cp.Cuts = append(cp.Cuts, CutLink{Commit: c, Parents: slices.Compact(ps)})
	}
	slices.SortFunc(cp.Cuts, func(a, b CutLink) int { return a.Commit.Compare(b.Commit) })
	slices.SortFunc(cp.Islands, func(a, b State) int { return int(b.Time - a.Time) })
	// Commits cut now: those the agent's history held before and not after.
	before, err := r.historyCommits(ctx, agent, old)
	if err != nil {
		return rep, nil, err
	}
	for c := range before {
		if !kept[c] {
			rep.CutCommits++
		}
	}
	cp.ForgottenCommits += uint64(rep.CutCommits)
	rep.Unchanged = rep.CutOps == 0 && rep.CutCommits == 0 && old != nil && len(old.Islands) == len(cp.Islands)
	if old == nil && rep.CutOps == 0 && rep.CutCommits == 0 {
		rep.Unchanged = true
	}
	cp.index()
	return rep, cp, nil
}

// historyCommits returns the commits agent's history holds under cp.
func (r *Repo) historyCommits(ctx context.Context, agent string, cp *Checkpoint) (map[objects.CID]bool, error) {
	byAgent, err := r.rootsByAgent(ctx, map[string]*Checkpoint{agent: cp})
	if err != nil {
		return nil, err
	}
	out := map[objects.CID]bool{}
	for _, ar := range byAgent {
		if ar.agent != agent {
			continue
		}
		stack := slices.Clone(ar.commits)
		for len(stack) > 0 {
			c := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if out[c] {
				continue
			}
			out[c] = true
			cm, err := r.Commit(ctx, c)
			if errors.Is(err, objects.ErrNotFound) || errors.Is(err, dag.ErrUnknown) {
				delete(out, c) // behind another agent's cut, and gone
				continue
			}
			if err != nil {
				return nil, err
			}
			for _, p := range cm.Parents {
				if !cp.IsCut(c, p) {
					stack = append(stack, p)
				}
			}
		}
	}
	return out, nil
}
