package refs

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"regexp"

	"github.com/agentstate/agentstate/internal/store"
	"github.com/agentstate/agentstate/objects"
	badger "github.com/dgraph-io/badger/v4"
)

// Op names what moved HEAD.
type Op string

const (
	OpCommit  Op = "commit"
	OpReset   Op = "reset"
	OpUndo    Op = "undo"
	OpRedo    Op = "redo"
	OpFork    Op = "fork"
	OpRestore Op = "restore"
	OpMerge   Op = "merge"
	OpImport  Op = "import"
)

var (
	ErrBadAgent    = errors.New("refs: invalid agent name")
	ErrNoAgent     = errors.New("refs: no such agent")
	ErrAgentExists = errors.New("refs: agent already exists")
	ErrConflict    = errors.New("refs: HEAD moved concurrently")
	ErrBrokenLog   = errors.New("refs: operation log is broken")
	ErrNothingUndo = errors.New("refs: nothing to undo")
	ErrNothingRedo = errors.New("refs: nothing to redo")
)

var agentRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidateAgent checks an agent name: 1-64 characters of [A-Za-z0-9._-],
// starting with a letter or digit.
func ValidateAgent(name string) error {
	if !agentRE.MatchString(name) {
		return fmt.Errorf("%w: %q (use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit)", ErrBadAgent, name)
	}
	return nil
}

// ConflictError reports a compare-and-swap that found HEAD elsewhere.
type ConflictError struct {
	Agent            string
	Expected, Actual objects.CID
}

func (e *ConflictError) Error() string {
	exp, act := e.Expected.Short(), e.Actual.Short()
	if e.Expected.IsZero() {
		exp = "(no HEAD)"
	}
	if e.Actual.IsZero() {
		act = "(no HEAD)"
	}
	return fmt.Sprintf("refs: HEAD of agent %q moved: expected %s, found %s", e.Agent, exp, act)
}
func (e *ConflictError) Is(t error) bool { return t == ErrConflict }

// Entry is one operation-log entry. Its JSON encoding (fields in this order)
// is what is stored and hashed.
type Entry struct {
	Seq    uint64      `json:"seq"`
	Prev   string      `json:"prev"` // hex sha256 of the previous entry's bytes; "" for the first
	Agent  string      `json:"agent"`
	Op     Op          `json:"op"`
	Old    objects.CID `json:"old,omitzero"`
	New    objects.CID `json:"new"`
	Time   int64       `json:"time"`
	Task   string      `json:"task,omitempty"`
	Target uint64      `json:"target,omitempty"` // for undo/redo: the entry undone or redone
	Note   string      `json:"note,omitempty"`   // e.g. "fork of lumen", "restore from blob X"
}

// Head is an agent's HEAD record.
type Head struct {
	Agent  string      `json:"agent"`
	Commit objects.CID `json:"commit"`
	Seq    uint64      `json:"seq"`
	Hash   string      `json:"hash"` // hex sha256 of entry Seq's bytes
}

// Refs reads and moves HEADs in a store.
type Refs struct {
	db *badger.DB
}

// New returns the refs of a store.
func New(s *store.Store) *Refs { return &Refs{db: s.DB()} }

func headKey(agent string) []byte { return append([]byte{store.NSHead}, agent...) }

func opPrefix(agent string) []byte {
	return append(append([]byte{store.NSOp}, agent...), 0)
}

func opKey(agent string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(opPrefix(agent), seq)
}

func getHead(txn *badger.Txn, agent string) (Head, bool, error) {
	it, err := txn.Get(headKey(agent))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Head{}, false, nil
	}
	if err != nil {
		return Head{}, false, err
	}
	var h Head
	err = it.Value(func(v []byte) error { return json.Unmarshal(v, &h) })
	if err != nil {
		return Head{}, false, fmt.Errorf("%w: agent %q: HEAD record unreadable: %v", ErrBrokenLog, agent, err)
	}
	return h, true, nil
}

// Head returns an agent's HEAD record.
func (r *Refs) Head(ctx context.Context, agent string) (Head, error) {
	if err := ValidateAgent(agent); err != nil {
		return Head{}, err
	}
	var h Head
	var ok bool
	err := r.db.View(func(txn *badger.Txn) error {
		var err error
		h, ok, err = getHead(txn, agent)
		return err
	})
	if err != nil {
		return Head{}, err
	}
	if !ok {
		return Head{}, fmt.Errorf("%w: %q (list agents with 'agentstate agents'; create one with 'commit', 'put' or 'fork')", ErrNoAgent, agent)
	}
	return h, nil
}

// Exists reports whether the agent has a HEAD.
func (r *Refs) Exists(ctx context.Context, agent string) (bool, error) {
	_, err := r.Head(ctx, agent)
	if errors.Is(err, ErrNoAgent) {
		return false, nil
	}
	return err == nil, err
}

// Move is one requested HEAD move.
type Move struct {
	Agent  string
	Old    objects.CID // expected current HEAD; zero means the agent must not exist yet
	New    objects.CID
	Op     Op
	Time   int64
	Task   string
	Target uint64
	Note   string
}

// Move sets HEAD from m.Old to m.New if and only if HEAD is at m.Old, and
// appends the operation-log entry, atomically. A mismatch is a *ConflictError.
func (r *Refs) Move(ctx context.Context, m Move) (Entry, error) {
	if err := ValidateAgent(m.Agent); err != nil {
		return Entry{}, err
	}
	if m.New.IsZero() {
		return Entry{}, fmt.Errorf("refs: moving HEAD of %q to an empty commit", m.Agent)
	}
	for {
		var e Entry
		err := r.db.Update(func(txn *badger.Txn) error {
			h, ok, err := getHead(txn, m.Agent)
			if err != nil {
				return err
			}
			if h.Commit != m.Old {
				if !ok && !m.Old.IsZero() {
					return fmt.Errorf("%w: %q", ErrNoAgent, m.Agent)
				}
				return &ConflictError{Agent: m.Agent, Expected: m.Old, Actual: h.Commit}
			}
			e = Entry{Seq: h.Seq + 1, Prev: h.Hash, Agent: m.Agent, Op: m.Op, Old: m.Old, New: m.New,
				Time: m.Time, Task: m.Task, Target: m.Target, Note: m.Note}
			data, err := json.Marshal(e)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(data)
			nh := Head{Agent: m.Agent, Commit: m.New, Seq: e.Seq, Hash: hex.EncodeToString(sum[:])}
			hd, err := json.Marshal(nh)
			if err != nil {
				return err
			}
			if err := txn.Set(opKey(m.Agent, e.Seq), data); err != nil {
				return err
			}
			return txn.Set(headKey(m.Agent), hd)
		})
		if errors.Is(err, badger.ErrConflict) {
			if ctx.Err() != nil {
				return Entry{}, ctx.Err()
			}
			continue // another writer in this process committed first; re-read and compare
		}
		if err != nil {
			return Entry{}, err
		}
		return e, nil
	}
}

// Agents yields every agent's HEAD record in name order.
func (r *Refs) Agents(ctx context.Context) ([]Head, error) {
	var out []Head
	err := r.db.View(func(txn *badger.Txn) error {
		o := badger.DefaultIteratorOptions
		o.Prefix = []byte{store.NSHead}
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var h Head
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &h) }); err != nil {
				return fmt.Errorf("%w: HEAD record %q unreadable: %v", ErrBrokenLog, it.Item().Key()[1:], err)
			}
			out = append(out, h)
		}
		return nil
	})
	return out, err
}

// Log yields an agent's operation-log entries, oldest first, with the raw
// bytes each was stored as.
func (r *Refs) Log(ctx context.Context, agent string) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		if err := ValidateAgent(agent); err != nil {
			yield(Entry{}, err)
			return
		}
		txn := r.db.NewTransaction(false)
		defer txn.Discard()
		o := badger.DefaultIteratorOptions
		o.Prefix = opPrefix(agent)
		it := txn.NewIterator(o)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			var e Entry
			err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &e) })
			if err != nil {
				err = fmt.Errorf("%w: agent %q: entry at key %x unreadable: %v", ErrBrokenLog, agent, it.Item().Key(), err)
			}
			if !yield(e, err) || err != nil {
				return
			}
		}
	}
}

// Entries returns all of an agent's log entries, oldest first.
func (r *Refs) Entries(ctx context.Context, agent string) ([]Entry, error) {
	var out []Entry
	for e, err := range r.Log(ctx, agent) {
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// Verify checks an agent's operation-log chain: consecutive sequence numbers,
// each entry's prev equal to the hash of the previous entry's stored bytes,
// each entry's old equal to the previous entry's new, and HEAD's record
// naming the last entry and its hash. It returns every problem found.
func (r *Refs) Verify(ctx context.Context, agent string) []error {
	var problems []error
	bad := func(format string, a ...any) {
		problems = append(problems, fmt.Errorf("%w: agent %q: %s", ErrBrokenLog, agent, fmt.Sprintf(format, a...)))
	}
	var h Head
	var ok bool
	err := r.db.View(func(txn *badger.Txn) error {
		var err error
		if h, ok, err = getHead(txn, agent); err != nil {
			return err
		}
		o := badger.DefaultIteratorOptions
		o.Prefix = opPrefix(agent)
		it := txn.NewIterator(o)
		defer it.Close()
		var prevHash string
		var prevNew objects.CID
		var seq uint64
		for it.Rewind(); it.Valid(); it.Next() {
			seq++
			key := it.Item().Key()
			kseq := binary.BigEndian.Uint64(key[len(key)-8:])
			data, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			var e Entry
			if err := json.Unmarshal(data, &e); err != nil {
				bad("entry %d is unreadable: %v", kseq, err)
				return nil
			}
			if again, _ := json.Marshal(e); string(again) != string(data) {
				bad("entry %d is not in canonical form (edited?)", kseq)
			}
			if kseq != seq || e.Seq != seq {
				bad("entry at position %d has sequence %d (key %d): an entry is missing or out of place", seq, e.Seq, kseq)
				seq = kseq
			}
			if e.Prev != prevHash {
				bad("entry %d does not chain to entry %d: prev %.12s, actual hash %.12s (an entry was edited or lost)", e.Seq, e.Seq-1, e.Prev, prevHash)
			}
			if seq > 1 && e.Old != prevNew {
				bad("entry %d starts from %s but entry %d ended at %s", e.Seq, e.Old.Short(), e.Seq-1, prevNew.Short())
			}
			if e.Agent != agent {
				bad("entry %d names agent %q", e.Seq, e.Agent)
			}
			sum := sha256.Sum256(data)
			prevHash = hex.EncodeToString(sum[:])
			prevNew = e.New
		}
		if !ok {
			if seq > 0 {
				bad("operation log has %d entries but no HEAD record", seq)
			}
			return nil
		}
		if h.Seq != seq || h.Hash != prevHash {
			bad("HEAD record names entry %d (hash %.12s) but the log ends at entry %d (hash %.12s)", h.Seq, h.Hash, seq, prevHash)
		}
		if h.Commit != prevNew {
			bad("HEAD is at %s but the last operation moved it to %s", h.Commit.Short(), prevNew.Short())
		}
		return nil
	})
	if err != nil {
		problems = append(problems, fmt.Errorf("refs: verifying agent %q: %w", agent, err))
	}
	return problems
}

// UndoTarget computes, by replaying the log, the entry an undo would revert
// (redo=false) or the undone entry a redo would re-apply (redo=true).
func UndoTarget(entries []Entry, redo bool) (Entry, error) {
	var done, undone []Entry
	bySeq := make(map[uint64]Entry, len(entries))
	for _, e := range entries {
		bySeq[e.Seq] = e
		switch e.Op {
		case OpUndo:
			if n := len(done); n > 0 && done[n-1].Seq == e.Target {
				undone = append(undone, done[n-1])
				done = done[:n-1]
			}
		case OpRedo:
			if n := len(undone); n > 0 && undone[n-1].Seq == e.Target {
				done = append(done, undone[n-1])
				undone = undone[:n-1]
			}
		default:
			done = append(done, e)
			undone = undone[:0]
		}
	}
	if redo {
		if len(undone) == 0 {
			return Entry{}, ErrNothingRedo
		}
		return undone[len(undone)-1], nil
	}
	if len(done) == 0 || done[len(done)-1].Old.IsZero() {
		return Entry{}, fmt.Errorf("%w: the agent is at its first operation", ErrNothingUndo)
	}
	return done[len(done)-1], nil
}
