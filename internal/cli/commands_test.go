package cli

import (
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

// The table's names are the commands' names, and a command line builds the
// one it names (after any global flags), or all of them.
func TestCommandsFor(t *testing.T) {
	e := &env{}
	for i, c := range commands(e) {
		if c.Name != commandTable[i].name {
			t.Errorf("table entry %d is %q, its command is %q", i, commandTable[i].name, c.Name)
		}
	}
	for _, f := range globalFlags(e) {
		_, str := f.(*cli.StringFlag) // commandIndex skips a value after each
		_, boolean := f.(*cli.BoolFlag)
		if !str && !boolean {
			t.Errorf("global flag %v is a %T: commandIndex knows string and bool flags", f.Names(), f)
		}
	}
	names := func(args ...string) []string {
		var out []string
		for _, c := range commandsFor(e, append([]string{"agentstate"}, args...)) {
			out = append(out, c.Name)
		}
		return out
	}
	all := len(commandTable)
	for _, c := range []struct {
		args []string
		want []string // nil: every command
	}{
		{[]string{"get", "k"}, []string{"get"}},
		{[]string{"--store", "s", "--agent=a", "log", "--oneline"}, []string{"log"}},
		{[]string{"--store=get", "show"}, []string{"show"}},
		{[]string{"--agent", "log", "get", "k"}, []string{"get"}}, // a flag's value is not the command
		{[]string{"get", "--help"}, nil},
		{[]string{"get", "k", "-help"}, nil},
		{[]string{"get", "--h=true"}, nil},
		{[]string{"put", "--", "--help"}, []string{"put"}}, // a value, not a flag
		{[]string{"get", "--helpful"}, []string{"get"}},
		{[]string{"-h"}, nil},
		{[]string{"help", "get"}, nil},
		{[]string{"no-such-command"}, nil},
		{[]string{"--store"}, nil},
		{nil, nil},
	} {
		got := names(c.args...)
		if c.want == nil && len(got) != all || c.want != nil && !slices.Equal(got, c.want) {
			t.Errorf("%q built %v, want %v (nil: all %d)", c.args, got, c.want, all)
		}
	}
}

// A command line that builds one command gets no help flags (urfave/cli
// looks every flag up by every name before a command runs); help still
// works, through the whole tree.
func TestOneCommandHasNoHelpFlags(t *testing.T) {
	e := &env{}
	app := newApp(e, []string{"agentstate", "get", "k"})
	if !app.HideHelp || len(app.Commands) != 1 || !app.Commands[0].HideHelp {
		t.Fatalf("get k: app.HideHelp %v, %d commands", app.HideHelp, len(app.Commands))
	}
	app = newApp(e, []string{"agentstate", "get", "--help"})
	if app.HideHelp || len(app.Commands) != len(commandTable) {
		t.Fatalf("get --help: app.HideHelp %v, %d commands", app.HideHelp, len(app.Commands))
	}
}

// A wrapped flag has the library flag's names, and every ability urfave/cli
// asks of a flag (help, environment variables, required, actions).
func TestNamesOnce(t *testing.T) {
	e := &env{}
	all := globalFlags(e)
	for _, c := range commands(e) {
		all = append(all, c.Flags...)
	}
	wrapped := namesOnce(all)
	if h, ok := cli.HelpFlag.(*boolNames); !ok || !slices.Equal(h.Names(), h.BoolFlag.Names()) {
		t.Errorf("the help flag (%T) is not wrapped, or its names are not the library's", cli.HelpFlag)
	}
	for i, f := range all {
		w := wrapped[i]
		if !slices.Equal(w.Names(), f.Names()) {
			t.Errorf("%v: wrapped names %v", f.Names(), w.Names())
		}
		if w == f {
			t.Errorf("%v (%T) is not wrapped", f.Names(), f)
		}
		for _, ability := range []func(cli.Flag) bool{
			func(f cli.Flag) bool { _, ok := f.(cli.DocGenerationFlag); return ok },
			func(f cli.Flag) bool { _, ok := f.(cli.VisibleFlag); return ok },
			func(f cli.Flag) bool { _, ok := f.(cli.RequiredFlag); return ok },
			func(f cli.Flag) bool { _, ok := f.(cli.CategorizableFlag); return ok },
			func(f cli.Flag) bool { _, ok := f.(cli.ActionableFlag); return ok },
			func(f cli.Flag) bool { _, ok := f.(interface{ GetEnvVars() []string }); return ok },
		} {
			if ability(f) != ability(w) {
				t.Errorf("%v: the wrapped flag (%T) lost an ability of %T", f.Names(), w, f)
			}
		}
		if w.String() != f.String() {
			t.Errorf("%v: help line %q, want %q", f.Names(), w.String(), f.String())
		}
	}
}
