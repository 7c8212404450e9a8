package cli

import (
	"context"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain makes the test binary every program a script runs: agentstate
// is the real front end (internal/front), which hands command lines to a
// server or starts agentstate-engine (this package's Main), exactly as the
// installed binaries do; agentstate-runtime is a runtime landing tasks.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"agentstate":         func() { os.Exit(frontMain()) },
		engineName:           func() { os.Exit(Main(context.Background(), os.Args, os.Stdin, os.Stdout, os.Stderr)) },
		"agentstate-runtime": func() { os.Exit(runtimeFixture(os.Args[1:])) },
		"agentstate-tasks":   func() { os.Exit(tasksFixture(os.Args[1:])) },
		"agentstate-task":    func() { os.Exit(taskFixture(os.Args[1:])) },
	})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("SOURCE_DATE_EPOCH", "1700000000")
			env.Setenv("NO_COLOR", "1")
			return nil
		},
		Cmds: scriptCmds,
	})
}
