// Package tape stores each agent's receipt tape: an append-only sequence of
// JSON lines (one signed task receipt each) that exports as receipts.ndjson
// and is re-ingested on restore. The tape treats lines as opaque JSON; the
// runtime package defines and signs the receipts.
package tape

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
)

var ErrBadLine = errors.New("tape: invalid receipt line")

// Store keeps receipt tapes as opaque lines. Implementations: the Badger
// store (dag/repo/storage/badger), the in-memory one
// (dag/repo/storage/memory) and the served store's client (dag/repo/remote).
type Store interface {
	// AppendLines adds lines to the end of an agent's tape in one atomic
	// write, numbering them on from the tape's last sequence number, and
	// returns the number of the last one.
	AppendLines(ctx context.Context, agent string, lines [][]byte) (uint64, error)
	// TapeLines yields an agent's tape, oldest first.
	TapeLines(ctx context.Context, agent string) iter.Seq2[[]byte, error]
}

// Tape is the receipt tapes of a store.
type Tape struct{ s Store }

// New returns the tapes kept in s.
func New(s Store) *Tape { return &Tape{s: s} }

func checkLine(line []byte) error {
	if len(line) == 0 || bytes.IndexByte(line, '\n') >= 0 || !json.Valid(line) || bytes.TrimSpace(line)[0] != '{' {
		return fmt.Errorf("%w: want one JSON object on one line", ErrBadLine)
	}
	return nil
}

// Append adds lines to an agent's tape atomically and returns the sequence
// number of the last one.
func (t *Tape) Append(ctx context.Context, agent string, lines ...[]byte) (uint64, error) {
	for _, l := range lines {
		if err := checkLine(l); err != nil {
			return 0, err
		}
	}
	return t.s.AppendLines(ctx, agent, lines)
}

// Lines yields an agent's tape, oldest first.
func (t *Tape) Lines(ctx context.Context, agent string) iter.Seq2[[]byte, error] {
	return t.s.TapeLines(ctx, agent)
}

// NDJSON returns an agent's tape as receipts.ndjson bytes (one line each,
// newline-terminated), or nil if the tape is empty.
func (t *Tape) NDJSON(ctx context.Context, agent string) ([]byte, error) {
	var buf bytes.Buffer
	for l, err := range t.Lines(ctx, agent) {
		if err != nil {
			return nil, err
		}
		buf.Write(l)
		buf.WriteByte('\n')
	}
	return buf.Bytes(), nil
}

// Import re-ingests receipts.ndjson bytes: lines already on the tape are
// skipped, new ones appended in their order. It returns how many were added.
func (t *Tape) Import(ctx context.Context, agent string, ndjson []byte) (int, error) {
	have := map[[32]byte]bool{}
	for l, err := range t.Lines(ctx, agent) {
		if err != nil {
			return 0, err
		}
		have[sha256.Sum256(l)] = true
	}
	lines, err := SplitNDJSON(ndjson)
	if err != nil {
		return 0, err
	}
	var add [][]byte
	for _, l := range lines {
		h := sha256.Sum256(l)
		if !have[h] {
			have[h] = true
			add = append(add, l)
		}
	}
	if len(add) == 0 {
		return 0, nil
	}
	_, err = t.Append(ctx, agent, add...)
	return len(add), err
}

// SplitNDJSON splits receipts.ndjson bytes into tape lines, skipping blank
// lines, and checks every line as Append would: the one rule for what a
// tape line is, used before anything is written.
func SplitNDJSON(ndjson []byte) ([][]byte, error) {
	var out [][]byte
	for i, l := range bytes.Split(ndjson, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if err := checkLine(l); err != nil {
			return nil, fmt.Errorf("receipts.ndjson line %d: %w", i+1, err)
		}
		out = append(out, l)
	}
	return out, nil
}
