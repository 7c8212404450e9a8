package cli

import (
	"strconv"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// setenvq VAR GOSTRING: set VAR to a Go-quoted string literal's value,
	// so a script can build keys holding control bytes ('a\x1bb').
	scriptCmds["setenvq"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: setenvq VAR GOSTRING")
		}
		s, err := strconv.Unquote(`"` + args[1] + `"`)
		if err != nil {
			ts.Fatalf("setenvq %s: %v", args[1], err)
		}
		ts.Setenv(args[0], s)
	}
	// setenvrep VAR S N [SUFFIX]: set VAR to S repeated N times, then SUFFIX.
	scriptCmds["setenvrep"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 3 && len(args) != 4 {
			ts.Fatalf("usage: setenvrep VAR S N [SUFFIX]")
		}
		n, err := strconv.Atoi(args[2])
		ts.Check(err)
		s := strings.Repeat(args[1], n)
		if len(args) == 4 {
			s += args[3]
		}
		ts.Setenv(args[0], s)
	}
}
