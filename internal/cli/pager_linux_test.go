package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: its master, and its slave (a terminal
// to the command). The master is drained into the returned buffer until
// the slave is closed (done is closed then).
func openPTY(t *testing.T) (slave *os.File, out *bytes.Buffer, done chan struct{}) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	out, done = &bytes.Buffer{}, make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(out, m) // ends with EIO when the slave is closed
	}()
	return s, out, done
}

// A command's long output on a terminal goes through the pager
// (AGENTSTATE_PAGER, then PAGER), with what it prints from the store
// escaped, a value's lines too; not with --no-pager, not when stdout is
// not a terminal, not for a command that prints a value as it is.
func TestPagerOnTerminal(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, ".agentstate")
	ran := filepath.Join(dir, "ran")
	got := filepath.Join(dir, "paged")
	pager := filepath.Join(dir, "pager.sh")
	// The pager records that it ran, with its arguments, and what it read.
	os.WriteFile(pager, []byte("#!/bin/sh\necho \"$@\" >> "+ran+"\ncat > "+got+"\n"), 0o755)
	t.Setenv("AGENTSTATE_PAGER", "")
	t.Setenv("PAGER", pager+" from-PAGER")
	t.Setenv("NO_COLOR", "1")
	t.Setenv("AGENTSTATE_AGENT", "")
	t.Setenv("AGENTSTATE_STORE", "")
	run := func(stdout io.Writer, args ...string) (int, string) {
		var stderr bytes.Buffer
		code := Main(context.Background(), append([]string{"agentstate", "--store", store}, args...), strings.NewReader(""), stdout, &stderr)
		return code, stderr.String()
	}
	mustRun := func(args ...string) {
		if code, stderr := run(io.Discard, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
	}
	onTTY := func(args ...string) string {
		t.Helper()
		s, out, done := openPTY(t)
		code, stderr := run(s, args...)
		s.Close()
		<-done
		if code != 0 {
			t.Fatalf("%v on a terminal: exit %d: %s", args, code, stderr)
		}
		return out.String()
	}
	pagerRuns := func() string {
		b, _ := os.ReadFile(ran)
		os.Remove(ran)
		return string(b)
	}
	mustRun("init")
	v1 := filepath.Join(dir, "v1")
	v2 := filepath.Join(dir, "v2")
	os.WriteFile(v1, []byte("calm\n"), 0o644)
	os.WriteFile(v2, []byte("calm\n\x1b]0;pwned\x07\x1b[2J\n"), 0o644)
	mustRun("put", "-m", "first", "k.md", v1)
	mustRun("put", "-m", "second \x1b[31mred", "k.md", v2)

	// On a terminal: log goes through PAGER, escaped.
	onTTY("log")
	if r := pagerRuns(); r != "from-PAGER\n" {
		t.Fatalf("log on a terminal: the pager ran %q, want once from PAGER", r)
	}
	paged, _ := os.ReadFile(got)
	if !strings.Contains(string(paged), "second") || bytes.ContainsAny(paged, "\x1b\x07") {
		t.Fatalf("the pager got %q: want the log, with no control characters", paged)
	}
	// show -p and blame: a value's lines reach the pager escaped too.
	for _, args := range [][]string{{"show", "-p", "HEAD"}, {"diff", "-p", "HEAD~1", "HEAD"}, {"blame", "k.md"}} {
		onTTY(args...)
		if r := pagerRuns(); r == "" {
			t.Fatalf("%v on a terminal: the pager did not run", args)
		}
		paged, _ = os.ReadFile(got)
		if !strings.Contains(string(paged), `\x1b]0;pwned`) || bytes.ContainsAny(paged, "\x1b\x07") {
			t.Fatalf("%v: the pager got %q: want the value's lines escaped", args, paged)
		}
	}
	// AGENTSTATE_PAGER wins over PAGER.
	t.Setenv("AGENTSTATE_PAGER", pager+" from-AGENTSTATE_PAGER")
	onTTY("log", "--oneline")
	if r := pagerRuns(); r != "from-AGENTSTATE_PAGER\n" {
		t.Fatalf("the pager ran %q, want the one AGENTSTATE_PAGER names", r)
	}
	// --no-pager, before or after the command: straight to the terminal.
	for _, args := range [][]string{{"--no-pager", "log"}, {"log", "--no-pager"}} {
		out := onTTY(args...)
		if r := pagerRuns(); r != "" {
			t.Fatalf("%v: the pager ran (%q)", args, r)
		}
		if !strings.Contains(out, "second") {
			t.Fatalf("%v: the terminal got %q, want the log", args, out)
		}
	}
	// A command that prints a value as it is is not paged.
	onTTY("get", "k.md")
	if r := pagerRuns(); r != "" {
		t.Fatalf("get on a terminal: the pager ran (%q)", r)
	}
	// Not a terminal (a pipe): no pager.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	var piped bytes.Buffer
	done := make(chan struct{})
	go func() { io.Copy(&piped, pr); close(done) }()
	code, stderr := run(pw, "log")
	pw.Close()
	<-done
	if code != 0 {
		t.Fatalf("log into a pipe: exit %d: %s", code, stderr)
	}
	if r := pagerRuns(); r != "" {
		t.Fatalf("log into a pipe: the pager ran (%q)", r)
	}
	if !strings.Contains(piped.String(), "second") {
		t.Fatalf("log into a pipe printed %q", piped.String())
	}
}
