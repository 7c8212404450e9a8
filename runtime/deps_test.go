package runtime_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Embedding the runtime does not link go-ethereum: the ENS pointer lives in
// package ens, which a runtime that wants it imports itself.
func TestRuntimeDoesNotLinkEthereum(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, "go-ethereum") {
			t.Fatalf("runtime depends on %s", p)
		}
	}
}
