package cli

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/agentstate/agentstate/internal/termsafe"
)

// DefaultPager is the pager long output goes through on a terminal when
// neither AGENTSTATE_PAGER nor PAGER names one.
const DefaultPager = "less -FRX"

// pagedCommands are the commands whose output may run long: on a terminal
// it goes through the pager. Every line they print from the store is
// escaped for a terminal first (termsafe; a value's lines too when paged,
// see env.valueLine); commands that print a value as it is (get, show
// REV:KEY, sql) are not paged.
var pagedCommands = map[string]bool{"log": true, "show": true, "diff": true, "blame": true, "oplog": true, "receipts": true, "ls": true}

// pagerCommand is the pager for this command's output, "" for none: with
// stdout a terminal (the client's, for a served command), without
// --no-pager, for a paged command; AGENTSTATE_PAGER, then PAGER, then
// DefaultPager ("cat" pages nothing).
func (e *env) pagerCommand() string {
	if e.noPager || !e.tty || !pagedCommands[e.command] {
		return ""
	}
	p := e.getenv("AGENTSTATE_PAGER")
	if strings.TrimSpace(p) == "" {
		p = e.getenv("PAGER")
	}
	p = strings.TrimSpace(p)
	if p == "" {
		p = DefaultPager
	}
	if p == "cat" {
		return ""
	}
	return p
}

// paging runs act with its output going through the pager (pagerCommand),
// run by the shell as git runs it, and waits for the pager to end. A pager
// that cannot start leaves the output as it was; one the user quits early
// ends the command quietly.
func (e *env) paging(act func() error) error {
	p := e.pagerCommand()
	if p == "" {
		return act()
	}
	if e.served != nil {
		// A served command's client runs the pager, on its own terminal
		// (ExecOut.Pager): the server only escapes what it sends.
		ps, ok := e.stdout.(interface{ StartPager(cmd string) error })
		if !ok || ps.StartPager(p) != nil {
			return act()
		}
		e.paged = true
		defer func() { e.paged = false }()
		return act()
	}
	cmd := exec.Command("sh", "-c", p)
	cmd.Stdout, cmd.Stderr = e.stdout, e.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return act()
	}
	if err := cmd.Start(); err != nil {
		return act()
	}
	out := e.stdout
	e.stdout, e.paged = in, true
	err = act()
	e.stdout, e.paged = out, false
	in.Close()
	werr := cmd.Wait()
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed) {
		err = nil // the user quit the pager before the end
	}
	if err == nil && werr != nil {
		var ee *exec.ExitError
		if !errors.As(werr, &ee) {
			return werr
		}
	}
	return err
}

// valueLine is a line of a value (a patch's hunk, blame's text) as it is
// printed: as it is, except into a pager, which gets it escaped
// (termsafe.Line) like everything else from the store.
func (e *env) valueLine(s string) string {
	if e.paged {
		return termsafe.Line(s)
	}
	return s
}
