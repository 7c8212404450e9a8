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
