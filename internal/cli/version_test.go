package cli

import (
	"strings"
	"testing"
)

// TestVersionFlag: --version and -v print what the version command prints,
// "agentstate version VERSION", as git does.
func TestVersionFlag(t *testing.T) {
	code, want, errs := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(want, "agentstate version ") {
		t.Fatalf("version: %d %q %q", code, want, errs)
	}
	for _, flag := range []string{"--version", "-v"} {
		if code, got, errs := runCLI(t, flag); code != 0 || got != want {
			t.Errorf("%s: %d %q %q, want %q", flag, code, got, errs, want)
		}
	}
}

// TestVersionOnly: a command line naming no command is the lean engine's to
// run when it asks for the version and not for help; a global flag's value
// spelled like a flag is a value.
func TestVersionOnly(t *testing.T) {
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"agentstate", "--version"}, true},
		{[]string{"agentstate", "-v"}, true},
		{[]string{"agentstate", "--store", "s", "--version"}, true},
		{[]string{"agentstate", "--store=s", "-v"}, true},
		{[]string{"agentstate"}, false},
		{[]string{"agentstate", "--version", "--help"}, false},
		{[]string{"agentstate", "-h", "-v"}, false},
		{[]string{"agentstate", "--agent", "v"}, false},
		{[]string{"agentstate", "--agent", "-v"}, false},
		{[]string{"agentstate", "--store", "help", "--version"}, true},
	} {
		if got := versionOnly(c.args); got != c.want {
			t.Errorf("versionOnly(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
