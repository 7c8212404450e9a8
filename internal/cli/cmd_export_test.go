package cli

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeOutput is env.writeOutput in the user's own process.
func writeOutput(path string, stdout io.Writer, fn func(io.Writer) error) error {
	return (&env{stdout: stdout}).writeOutput(path, fn)
}

func TestWriteOutput(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.tar")
	write := func(s string) func(io.Writer) error {
		return func(w io.Writer) error { _, err := io.WriteString(w, s); return err }
	}
	if err := writeOutput(path, nil, write("first")); err != nil {
		t.Fatal(err)
	}
	if err := writeOutput(path, nil, write("second")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := writeOutput(path, nil, func(w io.Writer) error {
		io.WriteString(w, "partial")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("failing writer: err = %v, want boom", err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "second" {
		t.Fatalf("after a failed write: %q, %v; want the previous content", got, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, %v; want 0600", fi.Mode(), err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only out.tar (no temporary files left)", len(ents))
	}

	var stdout bytes.Buffer
	if err := writeOutput("-", &stdout, write("to stdout")); err != nil || stdout.String() != "to stdout" {
		t.Errorf(`writeOutput("-") wrote %q, %v`, stdout.String(), err)
	}
	if err := writeOutput(filepath.Join(dir, "missing", "x"), nil, write("x")); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeOutput(sub, nil, write("x")); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("writing over a directory: %v, want a refusal naming a directory", err)
	}
	if fi, err := os.Stat(sub); err != nil || !fi.IsDir() {
		t.Errorf("the directory is gone: %v, %v", fi, err)
	}
}

type recordWrites struct {
	bytes.Buffer
	sizes []int
}

func (r *recordWrites) Write(p []byte) (int, error) {
	r.sizes = append(r.sizes, len(p))
	return r.Buffer.Write(p)
}

// A write as long as the output's buffer reaches the output whole, in
// order, not copied through the buffer.
func TestWriteBufferedPassesLongWrites(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 1<<20+1)
	var out recordWrites
	err := writeBuffered(&out, func(w io.Writer) error {
		for _, p := range [][]byte{[]byte("head"), big, []byte("tail")} {
			if _, err := w.Write(p); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "head" + string(big) + "tail"; out.String() != want {
		t.Fatal("output differs from what was written")
	}
	if len(out.sizes) != 3 || out.sizes[0] != 4 || out.sizes[1] != len(big) || out.sizes[2] != 4 {
		t.Fatalf("writes reaching the output: %v, want [4 %d 4]", out.sizes, len(big))
	}
}
