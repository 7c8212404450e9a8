package cli

import (
	"os"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// appendto DST SRC: append SRC's content (a file, or stdout/stderr of
	// the last exec) to the file DST.
	scriptCmds["appendto"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 2 {
			ts.Fatalf("usage: appendto DST SRC")
		}
		f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		ts.Check(err)
		_, err = f.WriteString(ts.ReadFile(args[1]))
		ts.Check(err)
		ts.Check(f.Close())
	}
}
