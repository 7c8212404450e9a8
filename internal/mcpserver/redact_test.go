package mcpserver_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/internal/mcpserver"
)

// TestRedactTool: the redact tool exists only for a read-write session of
// a server given a signer; a redacted value reads as redacted, with its
// record, not as an error.
func TestRedactTool(t *testing.T) {
	v := store(t)
	seed := sha256.Sum256([]byte("redactor"))
	signer := ed25519.NewKeyFromSeed(seed[:])
	for _, o := range []mcpserver.Options{{Agent: "lumen"}, {Agent: "lumen", ReadOnly: true, RedactSigner: signer}} {
		if slices.Contains(toolNames(t, connect(t, mcpserver.NewServer(v, o))), "redact") {
			t.Fatalf("redact offered with %+v", o)
		}
	}
	cs := connect(t, mcpserver.NewServer(v, mcpserver.Options{Agent: "lumen", RedactSigner: signer}))
	if !slices.Contains(toolNames(t, cs), "redact") {
		t.Fatal("redact not offered to a read-write session with a signer")
	}
	if res, _ := call(t, cs, "redact", map[string]any{"key": "skills/x.md", "all": true}); !res.IsError {
		t.Fatal("a redaction without a reason was taken")
	}
	res, out := call(t, cs, "redact", map[string]any{"key": "skills/x.md", "all": true, "reason": "leaked"})
	if res.IsError || out["removed"].(float64) != 1 {
		t.Fatalf("redact: %s %v", text(res), out)
	}
	res, out = call(t, cs, "get", map[string]any{"key": "skills/x.md"})
	if res.IsError || out["redacted"] == nil || out["text"] != nil || !strings.Contains(out["omitted"].(string), "leaked") {
		t.Fatalf("get of a redacted value: %s %v", text(res), out)
	}
}
