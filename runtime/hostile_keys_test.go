package runtime

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/objects"
)

// Tx.Put takes keys through objects.ValidateKey: a refused key fails the
// task with ErrBadKey and moves nothing.
func TestTxPutRefusesHostileKeys(t *testing.T) {
	ctx := context.Background()
	rt := openTest(t, Options{})
	if _, err := rt.RunTask(ctx, "a", Task{ID: "seed"}, put("k", "v")); err != nil {
		t.Fatal(err)
	}
	head := mustHead(t, rt, "a")
	for _, key := range []string{
		".agentstate/MANIFEST", ".agentstate/config.json", "bundle.lock.json/x", "receipts.ndjson/x",
		"evil\x1b[2J", "ding\a", "fake\nline", "c1\u009b", strings.Repeat("n", 256),
	} {
		_, err := rt.RunTask(ctx, "a", Task{ID: "hostile"}, put("ok.md", "fine", key, "x"))
		if !errors.Is(err, objects.ErrBadKey) {
			t.Errorf("Tx.Put(%q): %v, want ErrBadKey", key, err)
		}
		if h := mustHead(t, rt, "a"); h != head {
			t.Fatalf("Tx.Put(%q) moved HEAD to %s", key, h)
		}
	}
}
