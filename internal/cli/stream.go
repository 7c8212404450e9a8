package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/internal/termsafe"
)

// streamWriter buffers a command's output as it goes: the first write goes
// out at once (a long listing shows its first line before the rest is
// read), then writes gather up to 64 KiB. It keeps the first write error.
type streamWriter struct {
	bw    *bufio.Writer
	wrote bool
	err   error
}

func newStreamWriter(w io.Writer) *streamWriter {
	return &streamWriter{bw: bufio.NewWriterSize(w, 64<<10)}
}

func (s *streamWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.bw.Write(p)
	if err == nil && !s.wrote {
		s.wrote = true
		err = s.bw.Flush()
	}
	if err != nil {
		s.err = err
	}
	return n, err
}

// Flush writes what is buffered.
func (s *streamWriter) Flush() error {
	if s.err != nil {
		return s.err
	}
	s.err = s.bw.Flush()
	return s.err
}

// jsonArrayWriter writes a JSON array one element at a time, byte for byte
// what env.writeJSON writes for the whole slice (two-space indent, no HTML
// escaping, terminal-unsafe characters escaped), and "[]" for none.
type jsonArrayWriter struct {
	w   io.Writer
	n   int
	buf bytes.Buffer
	raw []byte // addCommit's
}

func (j *jsonArrayWriter) add(v any) error {
	j.buf.Reset()
	if j.n == 0 {
		j.buf.WriteString("[\n  ")
	} else {
		j.buf.WriteString(",\n  ")
	}
	enc := json.NewEncoder(&j.buf)
	enc.SetIndent("  ", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	j.buf.Truncate(j.buf.Len() - 1) // Encode's newline
	j.n++
	_, err := j.w.Write(termsafe.JSON(j.buf.Bytes()))
	return err
}

// addCommit is add for a commit of the read model's log, encoded without
// reflection (appendCommitJSON).
func (j *jsonArrayWriter) addCommit(c inspect.Commit) error {
	b := j.raw[:0]
	if j.n == 0 {
		b = append(b, "[\n  "...)
	} else {
		b = append(b, ",\n  "...)
	}
	j.raw = appendCommitJSON(b, c)
	j.n++
	_, err := j.w.Write(termsafe.JSON(j.raw))
	return err
}

// end closes the array.
func (j *jsonArrayWriter) end() error {
	var err error
	if j.n == 0 {
		_, err = io.WriteString(j.w, "[]\n")
	} else {
		_, err = io.WriteString(j.w, "\n]\n")
	}
	return err
}
