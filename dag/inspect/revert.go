package inspect

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/objects"
)

// RevertAction is what a revert does to one key.
type RevertAction string

const (
	// RevertRestore puts back the value the key had before.
	RevertRestore RevertAction = "restore"
	// RevertDelete deletes a key the reverted change added.
	RevertDelete RevertAction = "delete"
	// RevertDone: HEAD already holds the value the key had before; nothing
	// to do for it.
	RevertDone RevertAction = "done"
	// RevertConflict: a later commit changed the key to a third value;
	// the revert is refused.
	RevertConflict RevertAction = "conflict"
)

// RevertKey is one key of a revert: its value before the change reverted,
// after it, and at HEAD (zero: absent), and what the revert does to it.
type RevertKey struct {
	Key    string       `json:"key"`
	Before objects.CID  `json:"before,omitzero"`
	After  objects.CID  `json:"after,omitzero"`
	Head   objects.CID  `json:"head,omitzero"`
	Action RevertAction `json:"action"`
}

// RevertPlan is what reverting a commit's (or a task's) change to some
// keys does at an agent's HEAD. The change reverted is the commit's
// against its first parent (a merge's too; a root commit's against the
// empty tree), or, for a task revision (task:ID), the task's whole change,
// from the commit it started from to its own last commit.
type RevertPlan struct {
	Rev    string      `json:"rev"`
	Commit objects.CID `json:"commit"`         // the commit whose change is reverted
	Base   objects.CID `json:"base,omitzero"`  // what it is reverted against (zero: the empty tree)
	Task   string      `json:"task,omitempty"` // the task, for a task revision
	Head   objects.CID `json:"head"`           // HEAD as the plan was judged
	Keys   []RevertKey `json:"keys"`
	// New is the revert's commit (Revert only).
	New objects.CID `json:"new,omitzero"`
}

// Conflicts lists the keys a later commit changed to a third value.
func (p RevertPlan) Conflicts() []string {
	var out []string
	for _, k := range p.Keys {
		if k.Action == RevertConflict {
			out = append(out, k.Key)
		}
	}
	return out
}

// ErrRevertConflict: a revert whose keys later commits changed too.
var ErrRevertConflict = errors.New("revert conflict")

// RevertConflictError is a refused revert: later commits changed Keys to
// values other than the reverted change's. Nothing was written.
type RevertConflictError struct {
	Rev  string
	Keys []string
}

func (e *RevertConflictError) Error() string {
	return fmt.Sprintf("revert %s: refused: later commits changed %s too (HEAD holds neither the value %s set nor the one before it); nothing was reverted",
		e.Rev, quoteKeys(e.Keys), e.Rev)
}

// Is makes the error ErrRevertConflict to errors.Is.
func (e *RevertConflictError) Is(target error) bool { return target == ErrRevertConflict }

func quoteKeys(keys []string) string {
	q := make([]string, 0, min(len(keys), 10))
	for _, k := range keys[:min(len(keys), 10)] {
		q = append(q, fmt.Sprintf("%q", k))
	}
	s := strings.Join(q, ", ")
	if len(keys) > 10 {
		s += fmt.Sprintf(" and %d more", len(keys)-10)
	}
	if len(keys) == 1 {
		return "key " + s
	}
	return "keys " + s
}

// PlanRevert returns what reverting rev's change to keys (every key it
// changed when none are named) would do at agent's HEAD, conflicts
// included; it writes nothing. A named key the change did not touch, and
// a change whose base a forget cut, are ErrBadRequest.
func (v *View) PlanRevert(ctx context.Context, agent, rev string, keys []string) (RevertPlan, error) {
	p, err := v.revertChange(ctx, agent, rev, keys)
	if err != nil {
		return RevertPlan{}, err
	}
	head, t, err := v.headTree(ctx, agent)
	if err != nil {
		return RevertPlan{}, err
	}
	p.Head = head
	return p, judgeRevert(ctx, t, &p)
}

// headTree returns agent's HEAD and its tree.
func (v *View) headTree(ctx context.Context, agent string) (objects.CID, *objects.Tree, error) {
	head, hc, err := v.R.HeadCommit(ctx, agent)
	if err != nil {
		return objects.CID{}, nil, classify(err)
	}
	t, err := objects.LoadTree(ctx, v.R.Blocks, hc.Tree)
	if err != nil {
		return objects.CID{}, nil, classify(err)
	}
	return head, t, nil
}

// Revert makes one commit on agent's HEAD (by compare-and-swap, as every
// edit: HEAD moving meanwhile makes it judge again against the new HEAD)
// that undoes rev's change to keys, as PlanRevert plans it. It is refused
// with a *RevertConflictError, naming the keys, when a later commit
// changed any of them to a third value (a key whose value at HEAD is the
// one rev's change set is reverted, however often it changed in between);
// a plan with nothing to do is ErrNoChange. The commit's message is
// o.Message, or "revert task:ID" for a task, or "revert SHORTCID" and the
// reverted commit's first message line quoted; its metadata is o.Metadata
// with "op": "revert"
// and "revert": the commit reverted. It holds the store's write gate.
func (v *View) Revert(ctx context.Context, agent, rev string, keys []string, o WriteOptions) (RevertPlan, error) {
	p, err := v.revertChange(ctx, agent, rev, keys)
	if err != nil {
		return RevertPlan{}, err
	}
	msg := o.Message
	switch {
	case msg != "":
	case p.Task != "":
		msg = "revert task:" + p.Task
	default:
		msg = "revert " + p.Commit.Short()
		if cm, err := v.R.Commit(ctx, p.Commit); err == nil && cm.Message != "" {
			first, _, _ := strings.Cut(cm.Message, "\n")
			msg += fmt.Sprintf(" %q", first)
		}
	}
	meta := maps.Clone(o.Metadata)
	if meta == nil {
		meta = map[string]string{}
	}
	meta["op"], meta["revert"] = "revert", p.Commit.String()
	if p.Task != "" {
		meta["revertTask"] = p.Task
	}
	defer v.R.HoldWrites()()
	var judged RevertPlan
	id, err := v.R.Edit(ctx, repo.EditRequest{Agent: agent, Message: msg, Metadata: meta,
		Edit: func(ctx context.Context, t *objects.Tree) (bool, error) {
			judged = p
			judged.Keys = slices.Clone(p.Keys)
			if err := judgeRevert(ctx, t, &judged); err != nil {
				return false, err
			}
			if c := judged.Conflicts(); len(c) > 0 {
				return false, &RevertConflictError{Rev: rev, Keys: c}
			}
			changed := false
			for _, k := range judged.Keys {
				var ok bool
				var err error
				switch k.Action {
				case RevertRestore:
					ok, err = t.Put(ctx, k.Key, k.Before)
				case RevertDelete:
					ok, err = t.Delete(ctx, k.Key)
				}
				if err != nil {
					return false, err
				}
				changed = changed || ok
			}
			return changed, nil
		}})
	if err != nil {
		if errors.Is(err, ErrRevertConflict) || errors.Is(err, ErrNoChange) {
			return judged, err
		}
		return judged, classify(err)
	}
	judged.New = id
	if cm, err := v.R.Commit(ctx, id); err == nil && len(cm.Parents) > 0 {
		judged.Head = cm.Parents[0]
	}
	return judged, nil
}

// revertChange finds the change rev names and the keys of it to revert,
// with their values before and after it.
func (v *View) revertChange(ctx context.Context, agent, rev string, keys []string) (RevertPlan, error) {
	for _, k := range keys {
		if err := objects.ValidateKey(k); err != nil {
			return RevertPlan{}, classify(err)
		}
	}
	if _, err := v.checkAgent(ctx, agent); err != nil {
		return RevertPlan{}, err
	}
	if rev == "" {
		rev = "HEAD"
	}
	p := RevertPlan{Rev: rev, Keys: []RevertKey{}}
	var base, target objects.CID // commits: the change is base → target
	l, isTask, err := v.landingOf(ctx, agent, rev)
	if err != nil {
		return RevertPlan{}, err
	}
	what := ""
	if isTask {
		p.Commit, p.Task, base, target = l.Commit, l.ID, l.Start, l.TaskCommit
		what = "task " + l.ID
	} else {
		id, cm, err := v.resolve(ctx, agent, rev)
		if err != nil {
			return RevertPlan{}, err
		}
		p.Commit, target = id, id
		if len(cm.Parents) > 0 {
			base = cm.Parents[0]
		}
		what = "commit " + id.Short()
	}
	p.Base = base
	from := objects.EmptyTreeCID
	if !base.IsZero() {
		bc, err := v.R.Commit(ctx, base)
		if isMissing(err) {
			return RevertPlan{}, badf("revert %s: what %s changed is not known: %s, the commit it is reverted against, was forgotten (history cut by forget)", rev, what, base.Short())
		}
		if err != nil {
			return RevertPlan{}, classify(err)
		}
		from = bc.Tree
	}
	tc, err := v.R.Commit(ctx, target)
	if err != nil {
		return RevertPlan{}, classify(err)
	}
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	for ch, err := range objects.DiffTrees(ctx, v.R.Blocks, from, tc.Tree) {
		if err != nil {
			return RevertPlan{}, classify(err)
		}
		if len(keys) > 0 && !want[ch.Path] {
			continue
		}
		delete(want, ch.Path)
		p.Keys = append(p.Keys, RevertKey{Key: ch.Path, Before: ch.Old, After: ch.New})
	}
	if len(want) > 0 {
		return RevertPlan{}, badf("revert %s: %s did not change %s", rev, what, quoteKeys(slices.Sorted(maps.Keys(want))))
	}
	if len(p.Keys) == 0 {
		return p, fmt.Errorf("revert %s: %s changed no key: %w", rev, what, ErrNoChange)
	}
	return p, nil
}

// judgeRevert sets each key's value at HEAD (the tree t) and its action.
func judgeRevert(ctx context.Context, t *objects.Tree, p *RevertPlan) error {
	for i := range p.Keys {
		k := &p.Keys[i]
		cur, _, err := t.Get(ctx, k.Key)
		if err != nil {
			return classify(err)
		}
		k.Head = cur
		switch {
		case cur == k.Before:
			k.Action = RevertDone
		case cur != k.After:
			k.Action = RevertConflict
		case k.Before.IsZero():
			k.Action = RevertDelete
		default:
			k.Action = RevertRestore
		}
	}
	return nil
}

// landingOf returns the task landing rev names when rev is a task
// revision without steps (task:ID, task:ID@ATTEMPT, AGENT@task:ID) that
// names a landed task; isTask is false otherwise (rev is then resolved as
// any revision, which reports what is wrong with it).
func (v *View) landingOf(ctx context.Context, agent, rev string) (l repo.TaskLanding, isTask bool, err error) {
	readings, ok, err := dag.ParseTaskRev(rev)
	if !ok || err != nil {
		return l, false, nil
	}
	for _, rd := range readings {
		if len(rd.Steps) > 0 {
			continue
		}
		if rd.Agent == "" {
			rd.Agent = agent
		}
		l, err = v.R.FindTask(ctx, rd)
		if errors.Is(err, dag.ErrNoTask) || errors.Is(err, dag.ErrUnknown) {
			continue
		}
		if err != nil {
			return l, false, classify(err)
		}
		return l, true, nil
	}
	return l, false, nil
}
