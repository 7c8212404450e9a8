package sqlitedb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"zombiezen.com/go/sqlite"

	"github.com/agentstate/agentstate/objects"
)

// MaxEdit is the largest database Apply edits: it holds the database in
// memory about three times over (the value read, SQLite's copy, the copy
// serialized back).
const MaxEdit = 1 << 30

// ErrEdit: a statement Apply runs failed or did not change exactly one row.
var ErrEdit = errors.New("sqlitedb: edit failed")

// Apply returns the content of the SQLite value at value with one
// statement applied: the value is copied into an in-memory database
// (SQLite's deserialize; the store's blocks are never written through
// SQLite), stmt runs there (defensive mode, no attached databases,
// trusted_schema off, so the database's own triggers run but cannot call
// unsafe functions) and must change exactly one row of the table it names,
// and the database is serialized back. A database in WAL mode is read as
// its main file, as Open reads it, and keeps its WAL mode bytes. A value
// over MaxEdit is ErrTooLarge, refused before any chunk is read. The caller
// stores the result as a new value (objects.WriteValue).
func Apply(ctx context.Context, bs objects.BlockStore, value objects.CID, stmt string) ([]byte, error) {
	return apply(ctx, bs, value, stmt, false)
}

// ApplyErasing is Apply with SQLite's secure_delete on: the bytes of what
// the statement deletes are overwritten with zeros in the database it
// returns, not left in free space (a redaction's new version).
func ApplyErasing(ctx context.Context, bs objects.BlockStore, value objects.CID, stmt string) ([]byte, error) {
	return apply(ctx, bs, value, stmt, true)
}

func apply(ctx context.Context, bs objects.BlockStore, value objects.CID, stmt string, erase bool) ([]byte, error) {
	p, err := OpenPages(ctx, bs, value)
	if err != nil {
		return nil, err
	}
	wal := p.WALMode()
	p.Close()
	data, err := objects.ReadValueMax(ctx, bs, value, MaxEdit)
	var tooLarge *objects.ValueTooLargeError
	if errors.As(err, &tooLarge) {
		return nil, fmt.Errorf("%w: %v: a database is edited in memory, whole", ErrTooLarge, err)
	}
	if err != nil {
		return nil, err
	}
	var mode [2]byte
	copy(mode[:], data[18:20])
	if wal {
		data = slices.Clone(data) // the store's bytes are not ours to change
		data[18], data[19] = 1, 1 // memory databases have no WAL
	}
	c, err := sqlite.OpenConn(":memory:", sqlite.OpenReadWrite|sqlite.OpenCreate|sqlite.OpenMemory)
	if err != nil {
		return nil, fmt.Errorf("%w: opening a memory database: %v", ErrEdit, err)
	}
	defer c.Close()
	if err := c.SetDefensive(true); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEdit, err)
	}
	c.Limit(sqlite.LimitAttached, 0)
	c.Limit(sqlite.LimitLength, MaxLength)
	if err := c.Deserialize("main", data); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	data = nil
	run := func(q string) (int, error) {
		st, trailing, err := c.PrepareTransient(q)
		if err != nil {
			return 0, err
		}
		defer st.Finalize()
		if strings.TrimSpace(q[len(q)-trailing:]) != "" {
			return 0, fmt.Errorf("more than one statement")
		}
		for {
			row, err := st.Step()
			if err != nil {
				return 0, err
			}
			if !row {
				return c.Changes(), nil
			}
		}
	}
	if _, err := run("PRAGMA trusted_schema=0"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEdit, err)
	}
	if erase {
		if _, err := run("PRAGMA secure_delete=1"); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrEdit, err)
		}
	}
	if _, err := run("BEGIN"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEdit, err)
	}
	n, err := run(stmt)
	if err == nil && n != 1 {
		err = fmt.Errorf("it changed %d rows, not one", n)
	}
	if err != nil {
		run("ROLLBACK")
		return nil, fmt.Errorf("%w: %s: %v", ErrEdit, stmt, strings.TrimPrefix(err.Error(), "sqlite: "))
	}
	if _, err := run("COMMIT"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEdit, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := c.Serialize("main")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEdit, err)
	}
	if len(out) >= HeaderSize {
		copy(out[18:20], mode[:])
	}
	return out, nil
}
