//go:build unix

package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ExecFullEngine replaces this process (the lean engine) with the full
// engine, agentstate-engine beside this program's file, on the same
// command line, environment and standard streams. It returns only on a
// failure, with the exit code to end with.
func ExecFullEngine(args []string) int {
	p, err := fullEnginePath()
	if err == nil {
		err = syscall.Exec(p, append([]string{p}, args[1:]...), os.Environ())
	}
	fmt.Fprintf(os.Stderr, "agentstate: %v (this command runs in %s, which must be installed beside %s)\n", err, engineName, filepath.Base(args[0]))
	return 1
}

// fullEnginePath is agentstate-engine beside this program's file.
func fullEnginePath() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this program's file: %w", err)
	}
	return filepath.Join(filepath.Dir(exe), engineName), nil
}
