//go:build unix

package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentstate/agentstate/dag/repo"
)

// A FIFO (or a device such as /dev/null) named as output is written into
// in the user's own process, and stays what it was: a rename over it once
// replaced /dev/null with a regular file. A server refuses both.
func TestWriteOutputIntoAStream(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- "open: " + err.Error()
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- string(b)
	}()
	if err := writeOutput(fifo, nil, func(w io.Writer) error { _, err := io.WriteString(w, "into the fifo"); return err }); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "into the fifo" {
			t.Errorf("the FIFO's reader got %q", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("nothing was written into the FIFO (its reader still waits for a writer)")
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("after the write %s is %v, %v; want the FIFO", fifo, fi.Mode(), err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want the FIFO alone", len(ents))
	}

	served := &env{served: &repo.Repo{}, dir: dir}
	for _, p := range []string{fifo, "/dev/null", "/dev/stdout"} {
		err := served.writeOutput(p, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err })
		if err == nil || !strings.Contains(err.Error(), "a served store's server writes only a regular file") {
			t.Errorf("served write to %s: %v, want a refusal", p, err)
		}
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("after the refused writes %s is %v, %v; want the FIFO", fifo, fi.Mode(), err)
	}
}
