package runtime

import (
	"context"
	"fmt"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
)

// repairReceipts re-creates the receipts of landings that have none: a
// process killed between a task's HEAD move and the append of its receipt
// leaves such a landing. Everything a receipt states is derivable from the
// operation-log entry and the commits (the receipt time is the entry's
// time), so the re-created receipt is the one that would have been written
// (byte for byte when the operator key is the same). It runs the first time
// a process loads an agent.
func (rt *Runtime) repairReceipts(ctx context.Context, agent string) (int, error) {
	ents, err := rt.repo.Refs.Entries(ctx, agent)
	if err != nil {
		return 0, err
	}
	have := map[string]bool{}
	for line, err := range rt.tape.Lines(ctx, agent) {
		if err != nil {
			return 0, err
		}
		r, err := ParseReceipt(line)
		if err != nil {
			continue // reported by Receipts and 'agentstate receipts --verify'
		}
		have[r.Task+"\x00"+r.Commit.KeyString()] = true
	}
	var lines [][]byte
	for _, e := range ents {
		if e.Task == "" || (e.Op != refs.OpCommit && e.Op != refs.OpMerge) || have[e.Task+"\x00"+e.New.KeyString()] {
			continue
		}
		rec, ok, err := rt.rebuildReceipt(ctx, agent, e)
		if err != nil {
			return 0, fmt.Errorf("runtime: re-creating the receipt of task %q (landed at %s): %w", e.Task, e.New, err)
		}
		if ok {
			lines = append(lines, rec.Line())
		}
	}
	if len(lines) == 0 {
		return 0, nil
	}
	if _, err := rt.tape.Append(ctx, agent, lines...); err != nil {
		return 0, err
	}
	return len(lines), nil
}

// rebuildReceipt derives the receipt of a landing. ok is false for entries
// the runtime did not write (a commit made elsewhere with a task id).
func (rt *Runtime) rebuildReceipt(ctx context.Context, agent string, e refs.Entry) (*Receipt, bool, error) {
	c, err := rt.repo.Commit(ctx, e.New)
	if err != nil {
		return nil, false, err
	}
	taskCommit, start := e.New, e.Old
	tc := c
	if e.Op == refs.OpMerge {
		if len(c.Parents) != 2 || c.Metadata["op"] != "merge" {
			return nil, false, nil
		}
		taskCommit = c.Parents[1]
		start = objects.CID{}
		if s := c.Metadata["start"]; s != "" {
			if start, err = objects.ParseCID(s); err != nil {
				return nil, false, err
			}
		}
		if tc, err = rt.repo.Commit(ctx, taskCommit); err != nil {
			return nil, false, err
		}
	}
	m := tc.Metadata
	if m["task"] != e.Task || m["agent"] != agent {
		return nil, false, nil
	}
	switch m["op"] {
	case "put", "delete", "dir":
	default:
		return nil, false, nil
	}
	// Count the task's own commits: first parents back to its start.
	writes := 0
	for cur, cc := taskCommit, tc; cur != start; {
		writes++
		if len(cc.Parents) == 0 {
			break
		}
		cur = cc.Parents[0]
		if cur == start {
			break
		}
		if cc, err = rt.repo.Commit(ctx, cur); err != nil {
			return nil, false, err
		}
	}
	task := Task{ID: e.Task, Attempt: m["attempt"], Model: m["model"], Adapter: m["adapter"]}
	rec, err := rt.receipt(ctx, agent, task, start, e.Old, e.New, taskCommit, writes, e.Time, nil)
	return rec, err == nil, err
}
