package receipt_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A reader of receipts links neither the runtime that writes them nor the
// repository or its store: a receipt is read and verified from its line
// alone.
func TestReceiptNeedsNoRuntime(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		for _, banned := range []string{"/runtime", "/dag/repo", "dgraph-io/badger"} {
			if strings.HasPrefix(p, "github.com/") && strings.Contains(p, banned) {
				t.Fatalf("refs/receipt depends on %s", p)
			}
		}
	}
}

// Readers of the tape (the inspect model, the command line) use the receipt
// package, not the embedding API.
func TestReadersDoNotImportTheRuntime(t *testing.T) {
	for _, pkg := range []string{"../../dag/inspect", "../../internal/mcpserver", "../../internal/webui", "../../export/history"} {
		out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, p := range strings.Fields(string(out)) {
			if p == "github.com/agentstate/agentstate/runtime" {
				t.Errorf("%s imports the runtime", pkg)
			}
		}
	}
}
