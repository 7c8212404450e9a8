package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The long operations draw a progress bar on stderr when it is a terminal
// (here a pseudo-terminal), and nothing when it is not (a pipe, a file) or
// with --json.
func TestProgressOnTerminal(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, ".agentstate")
	brain := filepath.Join(dir, "brain")
	os.MkdirAll(filepath.Join(brain, "skills"), 0o755)
	for i, name := range []string{"notes.md", "skills/a.md", "skills/b.md"} {
		os.WriteFile(filepath.Join(brain, name), bytes.Repeat([]byte{'a' + byte(i)}, 200000), 0o644)
	}
	t.Setenv("AGENTSTATE_AGENT", "")
	t.Setenv("AGENTSTATE_STORE", "")
	run := func(stderr io.Writer, args ...string) int {
		return Main(context.Background(), append([]string{"agentstate", "--store", store, "--agent", "lumen"}, args...), strings.NewReader(""), io.Discard, stderr)
	}
	if code := run(io.Discard, "init"); code != 0 {
		t.Fatal("init failed")
	}
	onTTY := func(args ...string) string {
		t.Helper()
		s, out, done := openPTY(t)
		code := run(s, args...)
		s.Close()
		<-done
		if code != 0 {
			t.Fatalf("%v on a terminal: exit %d: %s", args, code, out)
		}
		return out.String()
	}
	for _, c := range []struct {
		args []string
		bar  string
	}{
		{[]string{"commit", "-m", "one", brain}, "commit"},
		{[]string{"verify"}, "verify: blocks"},
		{[]string{"export", "-o", filepath.Join(dir, "out.tar")}, "export"},
		{[]string{"import", "-m", "back", filepath.Join(dir, "out.tar")}, "import"},
		{[]string{"gc", "--dry-run"}, "gc: blocks"},
	} {
		got := onTTY(c.args...)
		if !strings.Contains(got, c.bar) || !strings.Contains(got, "\r") {
			t.Errorf("%v on a terminal drew no %q bar: %q", c.args, c.bar, got)
		}
		var piped bytes.Buffer
		if code := run(&piped, c.args...); code != 0 && c.args[0] != "import" {
			t.Fatalf("%v: exit %d: %s", c.args, code, piped.String())
		}
		if strings.Contains(piped.String(), c.bar+" ") || strings.Contains(piped.String(), "\r") {
			t.Errorf("%v not on a terminal drew a bar: %q", c.args, piped.String())
		}
	}
	// --json: the terminal gets no bar.
	if got := onTTY("verify", "--json"); strings.Contains(got, "verify: blocks") {
		t.Errorf("verify --json drew a bar: %q", got)
	}
}
