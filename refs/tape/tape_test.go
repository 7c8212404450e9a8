package tape_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentstate/agentstate/dag/repo/storage/badger"
	"github.com/agentstate/agentstate/refs/tape"
)

func TestTape(t *testing.T) {
	ctx := context.Background()
	s, err := badger.Create(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tp := tape.New(s)
	if n, err := tp.Append(ctx, "a", []byte(`{"task":"1"}`), []byte(`{"task":"2"}`)); err != nil || n != 2 {
		t.Fatalf("Append = %d, %v", n, err)
	}
	tp.Append(ctx, "b", []byte(`{"task":"other"}`))
	out, _ := tp.NDJSON(ctx, "a")
	if string(out) != "{\"task\":\"1\"}\n{\"task\":\"2\"}\n" {
		t.Fatalf("NDJSON = %q", out)
	}
	// Re-import of the same tape adds nothing; a new line is appended.
	n, err := tp.Import(ctx, "a", append(out, []byte("{\"task\":\"3\"}\n")...))
	if err != nil || n != 1 {
		t.Fatalf("Import = %d, %v", n, err)
	}
	if n, _ := tp.Import(ctx, "a", out); n != 0 {
		t.Fatalf("re-import added %d", n)
	}
	for _, bad := range []string{"not json", "[1]", "{\"a\":1}\n{"} {
		if _, err := tp.Import(ctx, "a", []byte(bad)); !errors.Is(err, tape.ErrBadLine) {
			t.Errorf("Import(%q) = %v", bad, err)
		}
	}
	out, _ = tp.NDJSON(ctx, "a")
	if string(out) != "{\"task\":\"1\"}\n{\"task\":\"2\"}\n{\"task\":\"3\"}\n" {
		t.Fatalf("tape after bad imports = %q", out)
	}
}
