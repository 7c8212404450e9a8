package runtime

import (
	"errors"
	"fmt"
	"strings"

	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs"
	"github.com/agentstate/agentstate/refs/receipt"
)

var (
	ErrClosed       = errors.New("runtime: closed")
	ErrNoSigner     = errors.New("runtime: no operator signing key")
	ErrBadTask      = errors.New("runtime: invalid task")
	ErrTxDone       = errors.New("runtime: transaction already finished")
	ErrKeyNotFound  = errors.New("runtime: key not found")
	ErrConflict     = errors.New("runtime: conflicting writes")
	ErrTaskPanicked = errors.New("runtime: task panicked")
	// ErrBadReceipt and ErrBadSignature are refs/receipt's errors.
	ErrBadReceipt     = receipt.ErrMalformed
	ErrBadSignature   = receipt.ErrBadSignature
	ErrReceiptNotKept = errors.New("runtime: task landed but its receipt was not stored")
	ErrNoSnapshot     = errors.New("runtime: agent has no snapshot to restore")
	ErrQueueFull      = errors.New("runtime: snapshot queue full")
	ErrSnapshotsOff   = errors.New("runtime: snapshots are not configured")
	// ErrAgentExists is the one error for a name that is taken: refs.ErrAgentExists.
	ErrAgentExists     = refs.ErrAgentExists
	ErrUnknownAgent    = errors.New("runtime: agent has no state")
	ErrDirNotWorkspace = errors.New("runtime: not a usable working directory")
)

// ConflictError reports a task whose writes collide with writes that landed
// after it started: the same keys changed to different values (or one side
// deleted a key the other modified). HEAD stays where the other writes left
// it.
type ConflictError struct {
	Agent string
	Task  string
	// Keys are the colliding keys in bytewise order.
	Keys []string
	// Base is the task's start commit, Head the commit HEAD had moved to,
	// TaskCommit the task's own last commit (kept, reachable from nothing).
	Base, Head, TaskCommit objects.CID
}

func (e *ConflictError) Error() string {
	keys := e.Keys
	more := ""
	if len(keys) > 10 {
		keys, more = keys[:10], fmt.Sprintf(" and %d more", len(e.Keys)-10)
	}
	return fmt.Sprintf("runtime: task %q of agent %q conflicts with writes that landed since it started at %s (HEAD is now %s): key(s) %s%s changed differently on both sides; HEAD was not moved, re-run the task on the new HEAD",
		e.Task, e.Agent, short(e.Base), short(e.Head), strings.Join(quoteAll(keys), ", "), more)
}

func (e *ConflictError) Is(t error) bool { return t == ErrConflict }

// PanicError is what RunTask returns for a task function that panicked.
type PanicError struct {
	Task  string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("runtime: task %q panicked: %v (HEAD was not moved)", e.Task, e.Value)
}

func (e *PanicError) Is(t error) bool { return t == ErrTaskPanicked }

// Unwrap exposes a panic value that is an error.
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}

func short(c objects.CID) string {
	if c.IsZero() {
		return "(no commit)"
	}
	return c.Short()
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
