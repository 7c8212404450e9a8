package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
	"github.com/agentstate/agentstate/export/snapshot"
	"github.com/agentstate/agentstate/walrus"
)

// The libraries' errors carry no flags; the command line adds them where it
// prints an error, matched by sentinel or type however deeply wrapped.
func TestHintsAddTheCommandLineToLibraryErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	r, err := repo.Init(dir, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, inUse := repo.Open(dir, repo.Options{LockTimeout: -1})
	plain := t.TempDir()
	_, notStore := repo.Open(plain, repo.Options{})
	_, noStore := repo.Find("", plain)
	tests := []struct {
		err  error
		hint string
	}{
		{inUse, "raise AGENTSTATE_LOCK_TIMEOUT"},
		{notStore, "run 'agentstate init' to create one"},
		{&repo.NotStoreError{Dir: plain, HalfMade: true}, "run 'agentstate init' to make it anew"},
		{noStore, "pass --store DIR / set AGENTSTATE_STORE"},
		{fmt.Errorf("pull: %w: HEAD of a is x", repo.ErrNotFastForward), "--ff-only refuses a merge"},
		{fmt.Errorf("gc: %w: 1", repo.ErrDamaged), "run 'agentstate verify'"},
		{fmt.Errorf("restore: %w", &snapshot.UnboundError{Blob: walrus.BlobID("B1")}), "'restore --blob B1'"},
	}
	for _, tt := range tests {
		if tt.err == nil {
			t.Fatalf("no error for the case hinted %q", tt.hint)
		}
		if strings.Contains(tt.err.Error(), tt.hint) {
			t.Errorf("the library's own message carries the command line's hint: %q", tt.err)
		}
		wrapped := fmt.Errorf("outer: %w", tt.err)
		if got := withHint(wrapped); !strings.HasPrefix(got, wrapped.Error()) || !strings.HasSuffix(got, ")") || !strings.Contains(got, tt.hint) {
			t.Errorf("withHint(%q) = %q, want the hint %q", wrapped, got, tt.hint)
		}
	}
	if got := withHint(errors.New("plain")); got != "plain" {
		t.Errorf("an error without a hint: %q", got)
	}
}

// Errors reach a person without the libraries' package prefixes, their
// words kept; a word that only looks like one ("the store: ") stays.
func TestForPeople(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`refs: no such agent: "ghost"`, `no such agent: "ghost"`},
		{`opening: repo: store: refs: HEAD moved concurrently`, `opening: HEAD moved concurrently`},
		{`dag: invalid revision: "x": bad`, `invalid revision: "x": bad`},
		{`export: tar: writing: disk full`, `tar: writing: disk full`},
		{`receipts.ndjson line 1: tape: invalid receipt line`, `receipts.ndjson line 1: invalid receipt line`},
		{`walrus/httpstore: publisher said 500`, `publisher said 500`},
		{`refusing to write into the store: it is read-only`, `refusing to write into the store: it is read-only`},
		{`key "refs: x" does not exist`, `key "refs: x" does not exist`},
	} {
		if got := forPeople(c.in); got != c.want {
			t.Errorf("forPeople(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
