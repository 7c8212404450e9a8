package repo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs/receipt"
)

// TaskLanding is one landing of a task: from its receipt on the agent's
// tape, or, for a task whose receipt the tape does not hold, from the
// task metadata of its commits.
type TaskLanding struct {
	Agent   string
	ID      string
	Attempt string
	// Receipt is the landing's receipt (nil when found from commits); N is
	// its line on the tape (1-based; 0 without).
	Receipt *receipt.Receipt
	N       int
	// Start is the commit the task started from (zero: the agent had no
	// state); Commit the commit HEAD moved to when it landed; TaskCommit the
	// task's own last commit (Commit unless it landed as a merge).
	Start, Commit, TaskCommit objects.CID
}

// Merged reports whether the task landed as a merge commit.
func (l TaskLanding) Merged() bool { return l.Commit != l.TaskCommit }

// FindTask returns the landing a task revision's reading names: the
// latest receipt on t.Agent's tape for task t.ID (of attempt t.Attempt
// when t.HasAttempt), or, when the tape holds none, the newest commit in
// the agent's history whose task metadata names it. A task that did not
// land is a *dag.NoTaskError (errors.Is dag.ErrNoTask), with the task's
// attempts or the IDs close to t.ID.
func (r *Repo) FindTask(ctx context.Context, t dag.TaskRev) (TaskLanding, error) {
	idField, _ := json.Marshal(t.ID)
	needle := append(append([]byte(`,"task":`), idField...), `,"attempt":`...)
	var found *TaskLanding
	var attempts []string
	n := 0
	for line, err := range r.Tape.Lines(ctx, t.Agent) {
		if err != nil {
			return TaskLanding{}, err
		}
		n++
		if !bytes.Contains(line, needle) {
			continue
		}
		rc, err := receipt.Parse(line)
		if err != nil || rc.Task != t.ID {
			continue
		}
		if t.HasAttempt && rc.Attempt != t.Attempt {
			if !slices.Contains(attempts, rc.Attempt) {
				attempts = append(attempts, rc.Attempt)
			}
			continue
		}
		found = &TaskLanding{Agent: t.Agent, ID: rc.Task, Attempt: rc.Attempt, Receipt: rc, N: n,
			Start: rc.Parent, Commit: rc.Commit, TaskCommit: rc.TaskCommit}
	}
	if found != nil {
		return *found, nil
	}
	l, ok, ids, err := r.taskFromCommits(ctx, t, &attempts)
	if err != nil || ok {
		return l, err
	}
	ne := &dag.NoTaskError{Rev: t, Attempts: attempts}
	if len(attempts) == 0 {
		ids = append(ids, r.tapeTaskIDs(ctx, t.Agent)...)
		ne.Near = dag.NearIDs(t.ID, ids)
	}
	return TaskLanding{}, ne
}

// tapeTaskIDs lists the task IDs on agent's tape (unreadable lines skipped).
func (r *Repo) tapeTaskIDs(ctx context.Context, agent string) []string {
	var ids []string
	for line, err := range r.Tape.Lines(ctx, agent) {
		if err != nil {
			break
		}
		if rc, err := receipt.Parse(line); err == nil {
			ids = append(ids, rc.Task)
		}
	}
	return ids
}

// taskFromCommits finds the newest commit of t.Agent's history whose task
// metadata names t and returns its landing; when there is none it returns
// the task IDs the history does name (and adds to attempts those of t.ID).
func (r *Repo) taskFromCommits(ctx context.Context, t dag.TaskRev, attempts *[]string) (TaskLanding, bool, []string, error) {
	head, err := r.Refs.Head(ctx, t.Agent)
	if err != nil {
		return TaskLanding{}, false, nil, err
	}
	lo, _, err := r.LogOptions(ctx, t.Agent)
	if err != nil {
		return TaskLanding{}, false, nil, err
	}
	var ids []string
	seen := map[string]bool{}
	for le, err := range dag.LogWith(ctx, r.Blocks, head.Commit, lo) {
		if err != nil {
			return TaskLanding{}, false, nil, err
		}
		m := le.Commit.Metadata
		id, ok := m["task"]
		if !ok {
			continue
		}
		if id != t.ID {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
			continue
		}
		if t.HasAttempt && m["attempt"] != t.Attempt {
			if !slices.Contains(*attempts, m["attempt"]) {
				*attempts = append(*attempts, m["attempt"])
			}
			continue
		}
		l, err := r.TaskLanding(ctx, t.Agent, le.CID, le.Commit)
		return l, err == nil, nil, err
	}
	return TaskLanding{}, false, ids, nil
}

// TaskLanding is the landing whose newest commit is c (a task's merge, or
// its last commit), found from the task metadata of c and its first
// parents, for a task with no receipt.
func (r *Repo) TaskLanding(ctx context.Context, agent string, id objects.CID, c *objects.Commit) (TaskLanding, error) {
	m := c.Metadata
	l := TaskLanding{Agent: agent, ID: m["task"], Attempt: m["attempt"], Commit: id, TaskCommit: id}
	if m["op"] == "merge" && len(c.Parents) == 2 {
		l.TaskCommit = c.Parents[1]
		if s, err := objects.ParseCID(m["start"]); err == nil {
			l.Start = s
			return l, nil
		}
		tc, err := r.Commit(ctx, l.TaskCommit)
		if err != nil {
			return TaskLanding{}, err
		}
		c = tc
	}
	start, err := r.TaskStart(ctx, c)
	if err != nil {
		return TaskLanding{}, err
	}
	l.Start = start
	return l, nil
}

// TaskStart walks first parents from a task's commit c while they are the
// same task's own commits (same task and attempt, not a merge) and returns
// the commit the task started from (zero when its first commit has no
// parent). A parent a forget cut ends the walk there.
func (r *Repo) TaskStart(ctx context.Context, c *objects.Commit) (objects.CID, error) {
	task, attempt := c.Metadata["task"], c.Metadata["attempt"]
	for len(c.Parents) > 0 {
		p := c.Parents[0]
		pc, err := r.Commit(ctx, p)
		if errors.Is(err, dag.ErrUnknown) {
			return p, nil
		}
		if err != nil {
			return objects.CID{}, err
		}
		pm := pc.Metadata
		if pm["task"] != task || pm["attempt"] != attempt || pm["op"] == "merge" {
			return p, nil
		}
		c = pc
	}
	return objects.CID{}, nil
}
