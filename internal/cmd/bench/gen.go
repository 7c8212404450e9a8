package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Everything generated here is a function of the seed alone, so two runs
// (and agentstate, git and restic within a run) see identical bytes.

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

// fill writes pseudo-random text-like bytes (a 64-symbol alphabet with
// spaces and newlines, so compressors find what they find in notes) into b.
func fill(b []byte, seed uint64) {
	var key [32]byte
	for i := range 4 {
		for j := range 8 {
			key[i*8+j] = byte(seed >> (8 * j))
		}
		key[i*8] ^= byte(i)
	}
	c := rand.NewChaCha8(key)
	c.Read(b)
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n"
	for i, x := range b {
		b[i] = alphabet[x&63]
	}
}

// vocabulary is a fixed list of pseudo-words for SQLite text.
var vocabulary = func() []string {
	r := newRand(42)
	words := make([]string, 4096)
	for i := range words {
		n := 3 + r.IntN(8)
		w := make([]byte, n)
		for j := range w {
			w[j] = byte('a' + r.IntN(26))
		}
		words[i] = string(w)
	}
	return words
}()

// sentence returns about n bytes of words (only [a-z ], safe in SQL quotes).
func sentence(r *rand.Rand, n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		// Zipf-ish: low indexes are common, as in real text.
		i := int(float64(len(vocabulary)) * r.Float64() * r.Float64())
		b.WriteString(vocabulary[i])
	}
	return b.String()
}

// brainPath is file f of directory d in a generated brain.
func brainPath(d, f int) string { return fmt.Sprintf("notes-%03d/note-%03d.md", d, f) }

// genBrain writes dirs*files files of size bytes under root.
func genBrain(root string, dirs, files, size int, seed uint64) error {
	buf := make([]byte, size)
	for d := range dirs {
		if err := os.MkdirAll(filepath.Join(root, fmt.Sprintf("notes-%03d", d)), 0o755); err != nil {
			return err
		}
		for f := range files {
			fill(buf, seed+uint64(d*files+f))
			if err := os.WriteFile(filepath.Join(root, brainPath(d, f)), buf, 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}

// sqliteDB drives the sqlite3 CLI to build and evolve a memory.db.
type sqliteDB struct {
	bin  string
	path string
	rows int // rows in memories
	r    *rand.Rand
}

const sqliteSchema = `PRAGMA page_size=4096;
PRAGMA journal_mode=DELETE;
CREATE TABLE memories(id INTEGER PRIMARY KEY, kind TEXT NOT NULL, created INTEGER NOT NULL, body TEXT NOT NULL);
CREATE VIRTUAL TABLE notes USING fts5(title, body);
`

func (s *sqliteDB) exec(ctx context.Context, sql string) error {
	cmd := exec.CommandContext(ctx, s.bin, "-batch", "-bail", s.path)
	cmd.Stdin = strings.NewReader(sql)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if out, err := cmd.Output(); err != nil {
		return fmt.Errorf("sqlite3: %w: %s %s", err, errb.String(), out)
	}
	return nil
}

// genSQLite creates a database of at least size bytes: a memories table of
// ~1 KiB rows and an FTS5 table of notes.
func genSQLite(ctx context.Context, bin, path string, size int64, seed uint64) (*sqliteDB, error) {
	s := &sqliteDB{bin: bin, path: path, r: newRand(seed)}
	if err := s.exec(ctx, sqliteSchema); err != nil {
		return nil, err
	}
	for {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, err
		}
		if fi.Size() >= size {
			return s, nil
		}
		var b strings.Builder
		b.WriteString("BEGIN;\n")
		batch := int(min((size-fi.Size())/1100+1, 4000))
		for range batch {
			s.rows++
			fmt.Fprintf(&b, "INSERT INTO memories VALUES(%d,'%s',%d,'%s');\n", s.rows, vocabulary[s.r.IntN(16)], 1700000000+s.rows, sentence(s.r, 900+s.r.IntN(200)))
		}
		for range batch / 20 {
			fmt.Fprintf(&b, "INSERT INTO notes VALUES('%s','%s');\n", sentence(s.r, 30), sentence(s.r, 400))
		}
		b.WriteString("COMMIT;\n")
		if err := s.exec(ctx, b.String()); err != nil {
			return nil, err
		}
	}
}

// mutate makes one new version: it rewrites the bodies of `updates` random
// memories (scattered pages) and inserts `inserts` notes into the FTS5 index.
func (s *sqliteDB) mutate(ctx context.Context, updates, inserts int) error {
	var b strings.Builder
	b.WriteString("BEGIN;\n")
	for range updates {
		id := 1 + s.r.IntN(s.rows)
		fmt.Fprintf(&b, "UPDATE memories SET body='%s', created=created+1 WHERE id=%d;\n", sentence(s.r, 900+s.r.IntN(200)), id)
	}
	for range inserts {
		fmt.Fprintf(&b, "INSERT INTO notes VALUES('%s','%s');\n", sentence(s.r, 30), sentence(s.r, 400))
	}
	b.WriteString("COMMIT;\n")
	return s.exec(ctx, b.String())
}

// changedPages counts the pageSize pages of b that differ from a (pages
// beyond a's end count as changed).
func changedPages(a, b []byte, pageSize int) int {
	n := 0
	for off := 0; off < len(b); off += pageSize {
		end := min(off+pageSize, len(b))
		if end > len(a) || !bytes.Equal(a[off:end], b[off:end]) {
			n++
		}
	}
	return n
}
