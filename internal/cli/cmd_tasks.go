package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/internal/termsafe"
)

// Tasks in history: log --tasks, show task:ID and diff task:ID render the
// read model's task log and task view (dag/inspect/tasks.go).

// logTasksOptions is log --tasks's command line.
type logTasksOptions struct {
	readOpts
	Rev           string
	Limit         int // < 0: all
	Oneline, JSON bool
	Verify        bool
}

// runLogTasks prints one entry per landed task, newest first (--json: the
// read model's []inspect.Task).
func runLogTasks(ctx context.Context, o logTasksOptions, out io.Writer) error {
	to := inspect.TaskOptions{Rev: o.Rev, Limit: max(o.Limit, 0), Verify: o.Verify}
	if o.Limit == 0 {
		to.Limit = 1 // the revision is still resolved (a bad one fails)
	}
	lg, err := o.View.Tasks(ctx, o.Agent, to)
	if err != nil {
		return err
	}
	if o.Limit == 0 {
		lg.Tasks = lg.Tasks[:0]
	}
	e := o.out(ctx, out)
	if o.JSON {
		return e.writeJSON(lg.Tasks)
	}
	for i, t := range lg.Tasks {
		if o.Oneline {
			e.printTaskLine(t)
			continue
		}
		if i > 0 {
			fmt.Fprintln(out)
		}
		e.printTask(t, t.Commit == lg.Head)
	}
	return nil
}

// taskName is a task's ID with its attempt, as a task revision writes it.
func taskName(id, attempt string) string {
	if attempt != "" {
		return termsafe.Line(id + "@" + attempt)
	}
	return termsafe.Line(id)
}

// printTaskLine prints a task on one line: the commit it landed, the task,
// what it folded and the bundle hash it moved.
func (e *env) printTaskLine(t inspect.Task) {
	merge := ""
	if t.Merge {
		merge = " (merge)"
	}
	fmt.Fprintf(e.stdout, "%s task %s: %s, %s, %s -> %s%s\n", e.paint("33", t.Commit.Short()), taskName(t.ID, t.Attempt),
		plural(t.Commits, "commit"), plural(len(t.Keys), "key"), shortBundle(t.BundleBefore), shortBundle(t.BundleAfter), merge)
}

// printTask prints a task's entry of the task log.
func (e *env) printTask(t inspect.Task, head bool) {
	hdr := "task " + taskName(t.ID, t.Attempt)
	if head {
		hdr += " (HEAD -> " + termsafe.Line(e.agent) + ")"
	}
	fmt.Fprintln(e.stdout, e.paint("33", hdr))
	commit := t.Commit.String()
	if t.Merge {
		commit += " (merge; the task's own last commit " + t.TaskCommit.Short() + ")"
	}
	fmt.Fprintf(e.stdout, "Commit:  %s\n", commit)
	start := "(no state: the agent's first task)"
	if !t.Start.IsZero() {
		start = t.Start.String()
	}
	fmt.Fprintf(e.stdout, "Started: %s\n", start)
	fmt.Fprintf(e.stdout, "Date:    %s\n", fmtTime(t.Time))
	if t.Model != "" {
		fmt.Fprintf(e.stdout, "Model:   %s\n", termsafe.Line(t.Model))
	}
	if t.Adapter != "" {
		fmt.Fprintf(e.stdout, "Adapter: %s\n", termsafe.Line(t.Adapter))
	}
	fmt.Fprintf(e.stdout, "Commits: %d\n", t.Commits)
	keys := make([]string, 0, 5)
	for _, k := range t.Keys[:min(5, len(t.Keys))] {
		keys = append(keys, termsafe.Line(k))
	}
	if len(t.Keys) > 5 {
		keys = append(keys, fmt.Sprintf("and %d more", len(t.Keys)-5))
	}
	fmt.Fprintf(e.stdout, "Keys:    %d (%s)\n", len(t.Keys), strings.Join(keys, ", "))
	fmt.Fprintf(e.stdout, "Bundle:  %s -> %s\n", t.BundleBefore, t.BundleAfter)
	fmt.Fprintf(e.stdout, "Receipt: %s\n", e.receiptState(t))
}

// receiptState says what is known of a task's receipt.
func (e *env) receiptState(t inspect.Task) string {
	switch t.Receipt {
	case inspect.ReceiptNone:
		return "none on this agent's tape (the task was found from its commits)"
	case inspect.ReceiptFailed:
		return e.paint("31", fmt.Sprintf("FAILED (tape line %d): %s", t.ReceiptN, termsafe.Line(t.ReceiptError)))
	case inspect.ReceiptVerified:
		s := fmt.Sprintf("verified (tape line %d)", t.ReceiptN)
		if t.ReceiptNote != "" {
			s += "; " + termsafe.Line(t.ReceiptNote)
		}
		return s
	}
	return fmt.Sprintf("tape line %d, not verified (log --tasks --verify)", t.ReceiptN)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// shortBundle is a bundle hash's first 8 hex digits, as receipts prints it.
func shortBundle(h string) string { return h[:min(len(h), 10)] }

// runShowTask prints the task a task revision names (show task:ID): its
// entry, its commits, its receipt and its whole change (-p: line diffs;
// --json: the read model's inspect.TaskDetail). It returns false, having
// printed nothing, when rev names no task as a whole (task:ID~1 names a
// commit; an unknown task is then reported by the revision's resolution).
func runShowTask(ctx context.Context, o showOptions, rev string, out io.Writer) (bool, error) {
	d, err := o.View.Task(ctx, o.Agent, rev, o.Patch)
	if errors.Is(err, inspect.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	e := o.out(ctx, out)
	if o.JSON {
		return true, e.writeJSON(d)
	}
	head, err := o.View.Head(ctx, o.Agent)
	if err != nil {
		return true, err
	}
	e.printTask(d.Task, d.Task.Commit == head)
	fmt.Fprintln(out)
	for _, c := range d.Commits {
		fmt.Fprintf(out, "    %s %s\n", e.paint("33", c.CID.Short()), firstLine(c.Message))
	}
	if d.Receipt != nil && d.Receipt.Receipt != nil {
		rc := d.Receipt.Receipt
		fmt.Fprintf(out, "\nReceipt of %s, signed by operator %x at %s: %d write(s), stateDeltaHash %s\n",
			termsafe.Line(rc.Agent), []byte(rc.Operator), fmtTime(rc.Time), rc.Writes, rc.StateDeltaHash)
	}
	fmt.Fprintln(out)
	switch {
	case d.StartGone:
		fmt.Fprintf(out, "%s\n", e.paint("2", "~~ a forget took the commit the task started from (history cut by forget): what the task changed is not known ~~"))
	case o.Patch:
		e.printPatch(d.Changes)
	default:
		e.printChanges(d.Changes)
	}
	return true, nil
}

// taskChange is the whole change of the task a lone task revision names
// (diff task:ID): from the commit it started from to its own last commit.
// ok is false when rev is not a task as a whole (see runShowTask).
func taskChange(ctx context.Context, o readOpts, rev string, patch bool) ([]inspect.Change, bool, error) {
	if !dag.IsTaskRev(rev) {
		return nil, false, nil
	}
	d, err := o.View.Task(ctx, o.Agent, rev, patch)
	if errors.Is(err, inspect.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, true, err
	}
	return d.Changes, true, nil
}
