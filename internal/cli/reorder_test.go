package cli

import (
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// Flags anywhere among a command's arguments, `--` ending them, global flags
// after the command: the command line is reordered, from the command
// definitions, to what urfave/cli parses.
func TestReorderArgs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"log HEAD -n 1", "log -n 1 -- HEAD"},
		{"log -n 1 HEAD", "log -n 1 -- HEAD"},
		{"log --agent lumen", "--agent lumen log"},
		{"log --agent=lumen --oneline", "--agent=lumen log --oneline"},
		{"--store s log HEAD --store=t", "--store s --store=t log -- HEAD"},
		{"put KEY - -m msg", "put -m msg -- KEY -"},
		{"put -m msg -- KEY -x", "put -m msg -- KEY -x"},
		{"revert REV -- KEY --json", "revert -- REV -- KEY --json"},
		{"revert -n REV", "revert -n -- REV"},
		{"diff A B --stat -p", "diff --stat -p -- A B"},
		{"get --at HEAD~1 KEY --json", "get --at HEAD~1 --json -- KEY"},
		{"log --bogus x", "log --bogus -- x"},
		{"log HEAD -n", "log -n -- HEAD"},
		{"log HEAD --help", "log --help -- HEAD"},
		{"trust add KEY --all-agents", "trust add --all-agents -- KEY"},
		{"trust ls --json --agent a", "--agent a trust ls --json"},
		{"comit -m x", "comit -m x"},
		{"--agent a", "--agent a"},
		{"log", "log"},
	}
	for _, tt := range tests {
		args := append([]string{"agentstate"}, strings.Fields(tt.in)...)
		e := &env{}
		got := reorderArgs(newApp(e, args), args)
		if want := append([]string{"agentstate"}, strings.Fields(tt.want)...); !slices.Equal(got, want) {
			t.Errorf("reorder %q = %q, want %q", tt.in, strings.Join(got[1:], " "), tt.want)
		}
	}
}

// A flag another command adds is known without being listed anywhere but
// in its command's definition: every flag of every command, placed after an
// argument, is moved before it.
func TestReorderKnowsEveryCommandsFlags(t *testing.T) {
	e := &env{}
	for _, c := range commands(e) {
		for _, f := range c.Flags {
			name := f.Names()[0]
			flag := "--" + name
			if len(name) == 1 {
				flag = "-" + name
			}
			args := []string{"agentstate", c.Name, "ARG", flag}
			takes := flagSpecs([]cli.Flag{f}, false)[name]
			if takes {
				args = append(args, "V")
			}
			got := reorderArgs(newApp(e, args), args)
			want := []string{"agentstate", c.Name, flag}
			if takes {
				want = append(want, "V")
			}
			want = append(want, "--", "ARG")
			if !slices.Equal(got, want) {
				t.Errorf("%s: reorder = %q, want %q", c.Name, got, want)
			}
		}
	}
}
