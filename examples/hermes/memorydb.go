package main

import (
	"context"
	"errors"
	"fmt"

	"zombiezen.com/go/sqlite"
	"zombiezen.com/go/sqlite/sqlitex"

	"github.com/agentstate/agentstate/runtime"
)

// memorySchema is the agent's memory database: facts it believes (a rowid
// table), what it said and heard (an FTS5 table, searchable), and small
// settings (a WITHOUT ROWID table).
const memorySchema = `
CREATE TABLE facts (id INTEGER PRIMARY KEY, task TEXT NOT NULL, fact TEXT NOT NULL, confidence REAL NOT NULL);
CREATE VIRTUAL TABLE messages USING fts5(task, role, content);
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
`

// updateMemoryDB applies one task to memory.db: its finding becomes a fact,
// its transcript messages, and the settings record the last task. A task
// that revises an earlier fact changes that fact's confidence. The database
// is read from the brain, changed in memory and written back whole; the
// store keeps only the pages that changed.
func updateMemoryDB(ctx context.Context, tx *runtime.Tx, j job, transcript []string) error {
	old, err := tx.Get(ctx, "memory.db")
	if err != nil && !errors.Is(err, runtime.ErrKeyNotFound) {
		return err
	}
	conn, err := sqlite.OpenConn(":memory:", sqlite.OpenReadWrite|sqlite.OpenCreate|sqlite.OpenMemory)
	if err != nil {
		return err
	}
	defer conn.Close()
	if old != nil {
		if err := conn.Deserialize("main", old); err != nil {
			return fmt.Errorf("memory.db: %w", err)
		}
	} else if err := sqlitex.ExecuteScript(conn, memorySchema, nil); err != nil {
		return fmt.Errorf("memory.db schema: %w", err)
	}
	exec := func(q string, args ...any) error { return sqlitex.Execute(conn, q, &sqlitex.ExecOptions{Args: args}) }
	if err := exec("INSERT INTO facts (task, fact, confidence) VALUES (?, ?, ?)", j.id, j.fact, 0.6); err != nil {
		return err
	}
	if j.revise != "" {
		if err := exec("UPDATE facts SET confidence = 0.95 WHERE task = ?", j.revise); err != nil {
			return err
		}
	}
	for _, line := range append([]string{"user: " + j.input}, transcript...) {
		if err := exec("INSERT INTO messages (task, role, content) VALUES (?, 'assistant', ?)", j.id, line); err != nil {
			return err
		}
	}
	if err := exec("INSERT INTO settings (key, value) VALUES ('last_task', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value", j.id); err != nil {
		return err
	}
	data, err := conn.Serialize("main")
	if err != nil {
		return err
	}
	return tx.Put(ctx, "memory.db", data)
}
