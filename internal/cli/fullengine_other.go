//go:build !unix

package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// ExecFullEngine runs the full engine, agentstate-engine beside this
// program's file, on the same command line, environment and standard
// streams, and returns its exit code.
func ExecFullEngine(args []string) int {
	exe, err := os.Executable()
	if err == nil {
		cmd := exec.Command(filepath.Join(filepath.Dir(exe), engineName+filepath.Ext(exe)), args[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		err = cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err == nil {
			return 0
		}
	}
	fmt.Fprintf(os.Stderr, "agentstate: %v (this command runs in %s, which must be installed beside %s)\n", err, engineName, filepath.Base(args[0]))
	return 1
}
