package cli

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/agentstate/agentstate/dag/repo"
)

// TestReadCloseBesideTheCommand: in a process that ends with its command, a
// read-only open is closed in the background (closeRead), and the next
// open in the process waits for that close. The writable open fails at
// once if the store is still held (AGENTSTATE_LOCK_TIMEOUT=0), so an open
// that did not wait fails here.
func TestReadCloseBesideTheCommand(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	if code, _, errs := runCLI(t, "--store", store, "init"); code != 0 {
		t.Fatalf("init: %d %s", code, errs)
	}
	vars := map[string]string{"AGENTSTATE_LOCK_TIMEOUT": "0"}
	for _, exits := range []bool{true, false} {
		e := &env{ctx: context.Background(), storeFlag: store, dir: t.TempDir(), exits: exits,
			getenv: func(k string) string { return vars[k] }}
		for i := range 20 {
			read := false
			if err := e.withRepoRead(func(r *repo.Repo) error { read = true; return nil }); err != nil || !read {
				t.Fatalf("exits=%v, read %d: %v (ran: %v)", exits, i, err, read)
			}
			if (e.closing != nil) != exits {
				t.Fatalf("exits=%v: close in the background: %v", exits, e.closing != nil)
			}
			r, err := e.open()
			if err != nil {
				t.Fatalf("exits=%v, writable open after read %d: %v", exits, i, err)
			}
			if e.closing != nil {
				t.Fatalf("exits=%v: the open left the read's close unwaited", exits)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
