package badger

import (
	"context"
	"encoding/binary"
	"fmt"

	badger "github.com/dgraph-io/badger/v4"
)

// TaskRecorder computes the task record of one line appended to an
// agent's tape (the repository's, docs/format.md "Task records"): nil for
// none.
type TaskRecorder func(ctx context.Context, agent string, line []byte) []byte

// SetTaskRecorder makes every later tape append write, with each line and
// in the same write, the record f computes for it, as the metadata record
// TaskRecordName(agent, n) (the line's number n).
func (s *Store) SetTaskRecorder(f func(ctx context.Context, agent string, line []byte) []byte) {
	r := TaskRecorder(f)
	s.taskRec.Store(&r)
}

// TaskRecordName is the metadata name of the task record of line n of
// agent's tape: taskrec/AGENT/ and n as 16 lower-case hex digits (agent
// names hold no '/').
func TaskRecordName(agent string, n uint64) string { return taskRecordName(agent, n) }

func taskRecordName(agent string, n uint64) string {
	return fmt.Sprintf("taskrec/%s/%016x", agent, n)
}

// taskRecords returns the records of lines (nil where there is none).
func (s *Store) taskRecords(ctx context.Context, agent string, lines [][]byte) [][]byte {
	f := s.taskRec.Load()
	recs := make([][]byte, len(lines))
	if f == nil {
		return recs
	}
	for i, l := range lines {
		recs[i] = (*f)(ctx, agent, l)
	}
	return recs
}

// TapeLen returns the number of an agent's tape lines (the last one's
// number), held lines with them.
func (s *Store) TapeLen(ctx context.Context, agent string) (uint64, error) {
	last, err := s.tapeLast(agent)
	if err != nil {
		return 0, err
	}
	return last, ctx.Err()
}

// tapeLast is the number of the last line of agent's tape, written or held.
func (s *Store) tapeLast(agent string) (uint64, error) {
	var last uint64
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		last, err = lastTapeSeq(txn, agent)
		return err
	})
	if err != nil {
		return 0, err
	}
	if keys, _ := s.held.withPrefix(tapePrefix(agent)); len(keys) > 0 {
		k := keys[len(keys)-1]
		last = max(last, binary.BigEndian.Uint64(k[len(k)-8:]))
	}
	return last, nil
}
