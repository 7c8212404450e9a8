package repo

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentstate/agentstate/dag"
	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/objects"
	"github.com/agentstate/agentstate/refs/receipt"
)

// Task records (docs/format.md, "Task records"): for every line of an
// agent's receipt tape, the store keeps what a listing of the agent's
// tasks shows of it, written in the same write as the line, so that
// `log --tasks` reads one run of records instead of walking the history
// and parsing every receipt. They are a cache: every record is computed
// from its line and the commits it names, verify recomputes each one, and
// verify --repair drops and rebuilds them.

// TaskRecordPrefix is the metadata name prefix of task records:
// taskrec/AGENT/ + 16 lower-case hex digits of the tape line's number.
const TaskRecordPrefix = "taskrec/"

// TaskRecordName is the metadata name of the record of line n of agent's
// tape.
func TaskRecordName(agent string, n uint64) string { return badger.TaskRecordName(agent, n) }

// ErrBadTaskRecord: a task record's bytes are not a record (its form or
// checksum).
var ErrBadTaskRecord = errors.New("repo: bad task record")

// Task record kinds.
const (
	// TaskRecordNone: the line is no receipt (it does not parse); it names
	// no task.
	TaskRecordNone byte = 0
	// TaskRecordLanding: the line is a landing's receipt.
	TaskRecordLanding byte = 1
	// TaskRecordAbsent: the line is a landing's receipt whose commits were
	// not in the store when the record was made (a tape restored with a
	// snapshot, which holds no history): the record holds only the two
	// commits it names, so that a reader meeting them walks instead.
	TaskRecordAbsent byte = 2
)

// Task record flags.
const (
	// TaskRecordWhole: the task's own commits are every commit between its
	// last commit and the commit it started from, one line of first
	// parents, each with at most one parent: the history below the task's
	// last commit is its own commits and then the history of its start.
	TaskRecordWhole byte = 1
)

// TaskRecord is one decoded task record: what `log --tasks` shows of a
// landing, from its receipt and its own commits.
type TaskRecord struct {
	Kind  byte
	Flags byte
	// From the receipt.
	ID, Attempt, Model, Adapter string
	Time                        int64
	Start, Commit, TaskCommit   objects.CID
	BundleBefore, BundleAfter   objects.BundleHash
	// From the task's own commits (TaskOwn): their count (with the merge,
	// when it landed as one) and the keys they wrote.
	Commits int
	Keys    []string
}

// Merged reports whether the task landed as a merge commit.
func (t TaskRecord) Merged() bool { return t.Commit != t.TaskCommit }

// Whole reports the TaskRecordWhole flag.
func (t TaskRecord) Whole() bool { return t.Flags&TaskRecordWhole != 0 }

const taskRecordVersion = 1

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// EncodeTaskRecord returns a record's bytes.
func EncodeTaskRecord(t TaskRecord) []byte {
	b := []byte{taskRecordVersion, t.Kind}
	if t.Kind == TaskRecordLanding {
		b = append(b, t.Flags)
		for _, s := range []string{t.ID, t.Attempt, t.Model, t.Adapter} {
			b = binary.AppendUvarint(b, uint64(len(s)))
			b = append(b, s...)
		}
		b = binary.AppendVarint(b, t.Time)
		for _, c := range []objects.CID{t.Start, t.Commit, t.TaskCommit} {
			b = appendCID(b, c)
		}
		b = append(b, t.BundleBefore[:]...)
		b = append(b, t.BundleAfter[:]...)
		b = binary.AppendUvarint(b, uint64(t.Commits))
		b = binary.AppendUvarint(b, uint64(len(t.Keys)))
		for _, k := range t.Keys {
			b = binary.AppendUvarint(b, uint64(len(k)))
			b = append(b, k...)
		}
	}
	if t.Kind == TaskRecordAbsent {
		b = appendCID(appendCID(b, t.Commit), t.TaskCommit)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, crcTable))
}

// appendCID appends a CID's length and binary form (length 0 for none).
func appendCID(b []byte, c objects.CID) []byte {
	var cb []byte
	if !c.IsZero() {
		cb = c.Bytes()
	}
	b = binary.AppendUvarint(b, uint64(len(cb)))
	return append(b, cb...)
}

// maxTaskRecordLen bounds a record's decoded counts (a receipt line is at
// most receipt.MaxLen; the keys a task wrote are bounded by nothing else).
const maxTaskRecordLen = 1 << 30

// DecodeTaskRecord reads a record's bytes; anything but a whole record
// of a known version with its checksum is ErrBadTaskRecord.
func DecodeTaskRecord(b []byte) (TaskRecord, error) {
	bad := func(what string) (TaskRecord, error) {
		return TaskRecord{}, fmt.Errorf("%w: %s", ErrBadTaskRecord, what)
	}
	if len(b) < 6 || len(b) > maxTaskRecordLen {
		return bad("length " + strconv.Itoa(len(b)))
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, crcTable) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return bad("checksum")
	}
	if body[0] != taskRecordVersion {
		return bad("version " + strconv.Itoa(int(body[0])))
	}
	t := TaskRecord{Kind: body[1]}
	p := body[2:]
	if t.Kind == TaskRecordNone {
		if len(p) != 0 {
			return bad("bytes after a record of no task")
		}
		return t, nil
	}
	if (t.Kind != TaskRecordLanding && t.Kind != TaskRecordAbsent) || len(p) < 1 {
		return bad("kind " + strconv.Itoa(int(t.Kind)))
	}
	uv := func() (uint64, bool) {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, false
		}
		p = p[n:]
		return v, true
	}
	bytesOf := func() ([]byte, bool) {
		n, ok := uv()
		if !ok || n > uint64(len(p)) {
			return nil, false
		}
		s := p[:n]
		p = p[n:]
		return s, true
	}
	cidOf := func(c *objects.CID) bool {
		v, ok := bytesOf()
		if !ok {
			return false
		}
		if len(v) == 0 {
			return true
		}
		id, err := objects.CIDFromBytes(v)
		if err != nil || !slices.Equal(id.Bytes(), v) {
			return false
		}
		*c = id
		return true
	}
	if t.Kind == TaskRecordAbsent {
		if !cidOf(&t.Commit) || !cidOf(&t.TaskCommit) || t.Commit.IsZero() || t.TaskCommit.IsZero() {
			return bad("a CID")
		}
		if len(p) != 0 {
			return bad("bytes after the commits")
		}
		return t, nil
	}
	t.Flags, p = p[0], p[1:]
	if t.Flags&^TaskRecordWhole != 0 {
		return bad("flags")
	}
	for _, s := range []*string{&t.ID, &t.Attempt, &t.Model, &t.Adapter} {
		v, ok := bytesOf()
		if !ok {
			return bad("a string")
		}
		*s = string(v)
	}
	tm, n := binary.Varint(p)
	if n <= 0 {
		return bad("time")
	}
	t.Time, p = tm, p[n:]
	for _, c := range []*objects.CID{&t.Start, &t.Commit, &t.TaskCommit} {
		if !cidOf(c) {
			return bad("a CID")
		}
	}
	if t.Commit.IsZero() || t.TaskCommit.IsZero() {
		return bad("no commit")
	}
	if len(p) < 64 {
		return bad("bundle hashes")
	}
	copy(t.BundleBefore[:], p)
	copy(t.BundleAfter[:], p[32:])
	p = p[64:]
	commits, ok := uv()
	if !ok || commits > uint64(len(b)) {
		return bad("commit count")
	}
	t.Commits = int(commits)
	nk, ok := uv()
	if !ok || nk > uint64(len(p)) {
		return bad("key count")
	}
	t.Keys = make([]string, 0, nk)
	for range nk {
		k, ok := bytesOf()
		if !ok {
			return bad("a key")
		}
		t.Keys = append(t.Keys, string(k))
	}
	if len(p) != 0 {
		return bad("bytes after the keys")
	}
	return t, nil
}

// TaskOwn is what a landing's own commits say: the commits (newest first:
// first parents from its last commit back to the commit it started from,
// at most its receipt's count of writes; a parent a forget cut ends them),
// the keys they wrote (sorted), the model and adapter of the newest (for
// a landing with no receipt), and whether they are Whole (TaskRecordWhole).
type TaskOwn struct {
	Commits        []objects.CID
	Keys           []string
	Model, Adapter string
	Whole          bool
}

// TaskOwnOf reads a landing's own commits (the one reading every window
// and every task record uses).
func (r *Repo) TaskOwnOf(ctx context.Context, l TaskLanding) (TaskOwn, error) {
	var out TaskOwn
	limit := -1
	if l.Receipt != nil {
		limit = l.Receipt.Writes
	}
	keys := map[string]bool{}
	dirs := false // a commit with no key recorded: a directory task's
	single := true
	c := l.TaskCommit
	for ; c != l.Start && !c.IsZero() && limit != 0; limit-- {
		cm, err := r.Commit(ctx, c)
		if errors.Is(err, dag.ErrUnknown) {
			break
		}
		if err != nil {
			return TaskOwn{}, err
		}
		if l.Receipt == nil && len(out.Commits) > 0 && (cm.Metadata["task"] != l.ID || cm.Metadata["attempt"] != l.Attempt) {
			break
		}
		out.Commits = append(out.Commits, c)
		if l.Receipt == nil && len(out.Commits) == 1 {
			out.Model, out.Adapter = cm.Metadata["model"], cm.Metadata["adapter"]
		}
		if k, ok := cm.Metadata["key"]; ok {
			keys[k] = true
		} else {
			dirs = true
		}
		if len(cm.Parents) > 1 {
			single = false
		}
		if len(cm.Parents) == 0 {
			c = objects.CID{}
			break
		}
		c = cm.Parents[0]
	}
	out.Whole = single && c == l.Start
	if dirs {
		// A directory task records no keys: its change says which.
		// (Not known when a forget took either end.)
		from, to, err := r.taskTrees(ctx, l)
		if err != nil && !errors.Is(err, dag.ErrUnknown) && !errors.Is(err, objects.ErrNotFound) {
			return TaskOwn{}, err
		}
		for ch, err := range objects.DiffTrees(ctx, r.Blocks, from, to) {
			if err != nil || from.IsZero() {
				break
			}
			keys[ch.Path] = true
		}
	}
	out.Keys = make([]string, 0, len(keys))
	for k := range keys {
		out.Keys = append(out.Keys, k)
	}
	slices.Sort(out.Keys)
	return out, nil
}

// taskTrees returns the trees of the commit a task started from (the
// empty tree when it started with no state) and of its own last commit;
// zero CIDs and the error when a forget took either.
func (r *Repo) taskTrees(ctx context.Context, l TaskLanding) (from, to objects.CID, err error) {
	from = objects.EmptyTreeCID
	if !l.Start.IsZero() {
		sc, err := r.Commit(ctx, l.Start)
		if err != nil {
			return objects.CID{}, objects.CID{}, err
		}
		from = sc.Tree
	}
	tc, err := r.Commit(ctx, l.TaskCommit)
	if err != nil {
		return objects.CID{}, objects.CID{}, err
	}
	return from, tc.Tree, nil
}

// TaskRecordOf computes the record of one tape line of agent's (of kind
// TaskRecordAbsent when a commit its receipt names is not in the store).
func (r *Repo) TaskRecordOf(ctx context.Context, agent string, line []byte) (TaskRecord, error) {
	rc, err := receipt.Parse(line)
	if err != nil {
		return TaskRecord{Kind: TaskRecordNone}, nil
	}
	absent := TaskRecord{Kind: TaskRecordAbsent, Commit: rc.Commit, TaskCommit: rc.TaskCommit}
	gone := func(err error) bool { return errors.Is(err, dag.ErrUnknown) || errors.Is(err, objects.ErrNotFound) }
	for _, c := range []objects.CID{rc.Commit, rc.TaskCommit} {
		// (A writer has them in its commit cache: it just wrote them.)
		if _, err := r.Commit(ctx, c); gone(err) {
			return absent, nil
		} else if err != nil {
			return TaskRecord{}, err
		}
	}
	l := TaskLanding{Agent: agent, ID: rc.Task, Attempt: rc.Attempt, Receipt: rc,
		Start: rc.Parent, Commit: rc.Commit, TaskCommit: rc.TaskCommit}
	own, err := r.TaskOwnOf(ctx, l)
	if gone(err) {
		return absent, nil
	}
	if err != nil {
		return TaskRecord{}, err
	}
	t := TaskRecord{Kind: TaskRecordLanding, ID: rc.Task, Attempt: rc.Attempt, Model: rc.Model, Adapter: rc.Adapter,
		Time: rc.Time, Start: rc.Parent, Commit: rc.Commit, TaskCommit: rc.TaskCommit,
		BundleBefore: rc.BundleBefore, BundleAfter: rc.BundleAfter, Commits: len(own.Commits), Keys: own.Keys}
	if t.Merged() {
		t.Commits++
	}
	if own.Whole {
		t.Flags |= TaskRecordWhole
	}
	return t, nil
}

// taskRecorder is the storage's hook (TaskRecordStore): the bytes of the
// record of a line appended to agent's tape, nil for none; the record
// PrepareTaskRecord made for these very bytes when there is one.
func (r *Repo) taskRecorder(ctx context.Context, agent string, line []byte) []byte {
	if rec, ok := r.prepared.take(agent, line); ok {
		return rec
	}
	taskRecordsComputed.Add(1)
	t, err := r.TaskRecordOf(context.WithoutCancel(ctx), agent, line)
	if err != nil {
		return nil // no record: readers of this agent's tasks walk its history
	}
	return EncodeTaskRecord(t)
}

// TaskRecordStore is storage that keeps task records: it calls the
// recorder for each line appended to a tape and writes the record it
// returns (if any) in the same write as the line, named TaskRecordName;
// TapeLen is the number of an agent's tape lines (the last one's number).
type TaskRecordStore interface {
	SetTaskRecorder(func(ctx context.Context, agent string, line []byte) []byte)
	TapeLen(ctx context.Context, agent string) (uint64, error)
}

// TaskRecords yields agent's task records when there is one for every
// line of its tape, in tape order (the i-th is line i+1's); ok is false
// when the store keeps none or a line has none (written before records
// were kept, appended where they are not, or a write cut short), and
// then nothing is yielded: the caller reads the tape. A record that does
// not decode is an error (ErrBadTaskRecord).
func (r *Repo) TaskRecords(ctx context.Context, agent string) ([]TaskRecord, bool, error) {
	ts, ok := r.Storage.(TaskRecordStore)
	if !ok {
		return nil, false, nil
	}
	n, err := ts.TapeLen(ctx, agent)
	if err != nil || n == 0 {
		return nil, false, err
	}
	prefix := TaskRecordPrefix + agent + "/"
	recs := make([]TaskRecord, 0, n)
	gap := errors.New("gap")
	err = r.Storage.MetaPrefix(ctx, prefix, func(name string, v []byte) error {
		want := uint64(len(recs) + 1)
		if want > n || name[len(prefix):] != fmt.Sprintf("%016x", want) {
			return gap
		}
		t, err := DecodeTaskRecord(v)
		if err != nil {
			return fmt.Errorf("task record %s: %w", name, err)
		}
		recs = append(recs, t)
		return nil
	})
	if errors.Is(err, gap) || (err == nil && uint64(len(recs)) != n) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return recs, true, nil
}

// RebuildTaskRecords drops every task record and writes each agent's
// anew from its tape, line after line (a rebuild cut short leaves lines
// with no record: readers walk). It returns the records written; none
// where the storage keeps no task records.
func (r *Repo) RebuildTaskRecords(ctx context.Context) (int, error) {
	gp, ok := r.Storage.(GraphPutter)
	if _, ok2 := r.Storage.(TaskRecordStore); !ok || !ok2 {
		return 0, nil
	}
	if err := r.Storage.DeleteMetaPrefix(ctx, TaskRecordPrefix); err != nil {
		return 0, err
	}
	heads, err := r.Refs.Agents(ctx)
	if err != nil {
		return 0, err
	}
	written := 0
	for _, h := range heads {
		var batch [][]byte
		flush := func() error {
			if len(batch) == 0 {
				return nil
			}
			err := gp.PutWithMeta(ctx, nil, batch...)
			batch = batch[:0]
			return err
		}
		n := uint64(0)
		for line, err := range r.Tape.Lines(ctx, h.Agent) {
			if err != nil {
				return written, err
			}
			n++
			t, err := r.TaskRecordOf(ctx, h.Agent, line)
			if err != nil {
				return written, err
			}
			batch = append(batch, []byte(TaskRecordName(h.Agent, n)), EncodeTaskRecord(t))
			written++
			if len(batch) >= 1024 {
				if err := flush(); err != nil {
					return written, err
				}
			}
		}
		if err := flush(); err != nil {
			return written, err
		}
	}
	return written, nil
}

// VerifyTaskRecords checks every task record: its name, its form and
// checksum, that it names a line of its agent's tape, and that it is the
// record that line and the commits it names give now (where they can
// still be read, and the agent's history was not cut by a forget). A line
// with no record is not a problem (readers walk the history).
func (r *Repo) VerifyTaskRecords(ctx context.Context) ([]string, error) {
	var problems []string
	problem := func(format string, a ...any) {
		if len(problems) < 100 {
			problems = append(problems, "task records: "+fmt.Sprintf(format, a...))
		}
	}
	type rec struct {
		n uint64
		v []byte
	}
	byAgent := map[string][]rec{}
	var agents []string
	err := r.Storage.MetaPrefix(ctx, TaskRecordPrefix, func(name string, v []byte) error {
		rest := name[len(TaskRecordPrefix):]
		i := strings.LastIndexByte(rest, '/')
		var n uint64
		var err error
		if i >= 0 && len(rest)-i-1 == 16 {
			n, err = strconv.ParseUint(rest[i+1:], 16, 64)
		}
		if i < 0 || len(rest)-i-1 != 16 || err != nil || n == 0 || TaskRecordName(rest[:i], n) != name {
			problem("a record named %q", name)
			return nil
		}
		agent := rest[:i]
		if _, ok := byAgent[agent]; !ok {
			agents = append(agents, agent)
		}
		byAgent[agent] = append(byAgent[agent], rec{n, v})
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, agent := range agents {
		var lines [][]byte
		for line, err := range r.Tape.Lines(ctx, agent) {
			if err != nil {
				return nil, err
			}
			lines = append(lines, line)
		}
		_, cut, err := r.CheckpointOf(ctx, agent)
		if err != nil {
			return nil, err
		}
		for _, x := range byAgent[agent] {
			got, err := DecodeTaskRecord(x.v)
			if err != nil {
				problem("agent %q, line %d: %v", agent, x.n, err)
				continue
			}
			if x.n > uint64(len(lines)) {
				problem("agent %q, line %d: the tape has %d lines", agent, x.n, len(lines))
				continue
			}
			if cut {
				continue // a forget took commits it was computed from
			}
			want, err := r.TaskRecordOf(ctx, agent, lines[x.n-1])
			if err != nil {
				return nil, err
			}
			if (want.Kind == TaskRecordAbsent || got.Kind == TaskRecordAbsent) && got.Kind != TaskRecordNone &&
				got.Commit == want.Commit && got.TaskCommit == want.TaskCommit {
				continue // its commits came (a pull) or went (gc) since: it names the same ones
			}
			if !bytes.Equal(EncodeTaskRecord(want), x.v) {
				problem("agent %q, line %d: the record says %s, its receipt and commits give %s", agent, x.n, got.describe(), want.describe())
			}
		}
	}
	return problems, nil
}

// describe names a record's contents in a problem.
func (t TaskRecord) describe() string {
	if t.Kind == TaskRecordNone {
		return "no task"
	}
	if t.Kind == TaskRecordAbsent {
		return fmt.Sprintf("commit %s not in the store", t.Commit.Short())
	}
	return fmt.Sprintf("task %q attempt %q, commit %s, %d commits, keys %q, whole %v", t.ID, t.Attempt, t.Commit.Short(), t.Commits, t.Keys, t.Whole())
}

// PrepareTaskRecord computes the task record of line, a receipt line about
// to be appended to agent's tape, before the append: the runtime does it
// while a task's landing waits for the disk, so the append after the
// landing, of exactly these bytes, writes it without computing it again.
// The record depends only on the line and the commits it names, which are
// stored and immutable, so it is the one the append would compute. One
// record is kept per agent (the next prepared replaces it); an append of
// other bytes computes its own.
func (r *Repo) PrepareTaskRecord(ctx context.Context, agent string, line []byte) {
	if _, ok := r.Storage.(TaskRecordStore); !ok {
		return
	}
	taskRecordsComputed.Add(1)
	t, err := r.TaskRecordOf(context.WithoutCancel(ctx), agent, line)
	var rec []byte
	if err == nil {
		rec = EncodeTaskRecord(t)
	}
	r.prepared.put(agent, bytes.Clone(line), rec)
}

// taskRecordsComputed counts the task records computed (tests).
var taskRecordsComputed atomic.Int64

// preparedRecords are the task records PrepareTaskRecord made, one per
// agent, each with the line it is the record of.
type preparedRecords struct {
	mu sync.Mutex
	m  map[string]preparedRecord
}

type preparedRecord struct{ line, rec []byte }

func (p *preparedRecords) put(agent string, line, rec []byte) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[string]preparedRecord{}
	}
	p.m[agent] = preparedRecord{line, rec}
}

// take returns, and forgets, the record prepared for line of agent's.
func (p *preparedRecords) take(agent string, line []byte) ([]byte, bool) {
	if p == nil {
		return nil, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, ok := p.m[agent]
	if !ok || !bytes.Equal(pr.line, line) {
		return nil, false
	}
	delete(p.m, agent)
	return pr.rec, true
}
