package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// ontty PROG [ARGS...] runs a program of the script with its standard
// output on a pseudo-terminal (stdin and stderr as exec gives them); what
// the terminal shows becomes the command's stdout. The program gets the
// script's environment for the variables a command reads.
func init() {
	scriptCmds["ontty"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) == 0 {
			ts.Fatalf("usage: ontty program [args...]")
		}
		m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
		ts.Check(err)
		defer m.Close()
		ts.Check(unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0))
		n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
		ts.Check(err)
		s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
		ts.Check(err)
		var out bytes.Buffer
		done := make(chan struct{})
		go func() {
			defer close(done)
			io.Copy(&out, m) // ends with EIO once every copy of the slave is closed
		}()
		var env []string
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			if !strings.HasPrefix(k, "AGENTSTATE_") && k != "PAGER" {
				env = append(env, kv)
			}
		}
		for _, k := range []string{"PATH", "HOME", "TMPDIR", "WORK", "NO_COLOR", "TERM", "SOURCE_DATE_EPOCH", "PAGER",
			"AGENTSTATE_PAGER", "AGENTSTATE_AGENT", "AGENTSTATE_STORE"} {
			if v := ts.Getenv(k); v != "" {
				env = append(env, k+"="+v)
			}
		}
		path := args[0]
		for _, dir := range strings.Split(ts.Getenv("PATH"), ":") {
			if p := dir + "/" + args[0]; dir != "" && isExecutable(p) {
				path = p
				break
			}
		}
		cmd := exec.Command(path, args[1:]...)
		cmd.Dir = ts.MkAbs(".")
		cmd.Env = env
		cmd.Stdout = s
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		s.Close()
		<-done
		ts.Stdout().Write(out.Bytes())
		ts.Stderr().Write(stderr.Bytes())
		if neg {
			if err == nil {
				ts.Fatalf("unexpected success")
			}
			return
		}
		ts.Check(err)
	}
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
