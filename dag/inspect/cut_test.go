package inspect_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentstate/agentstate/dag/inspect"
	"github.com/agentstate/agentstate/dag/inspect/inspecttest"
	"github.com/agentstate/agentstate/objects"
)

func cids(h inspect.History) []objects.CID {
	var out []objects.CID
	for _, c := range h.Commits {
		out = append(out, c.CID)
	}
	return out
}

// A history a forget cut reads as 'agentstate log' prints it: no error, no
// forgotten commit listed, the cut marked; a revision past the cut is
// not found; show, diff, get, ls, oplog and receipts answer.
func TestCutHistory(t *testing.T) {
	ctx := context.Background()
	c := inspecttest.NewCut(t)
	v := inspect.New(c.R)
	s := c.Steps

	h, err := v.Log(ctx, inspecttest.A, inspect.LogOptions{})
	if err != nil {
		t.Fatalf("log of a cut history: %v", err)
	}
	if want := []objects.CID{s[5], s[4], s[1]}; !slices.Equal(cids(h), want) {
		t.Fatalf("log %v, want steps 6, 5 and the tagged 2", cids(h))
	}
	if h.Commits[0].Cut != nil || !slices.Equal(h.Commits[1].Cut, []objects.CID{s[3]}) || !slices.Equal(h.Commits[2].Cut, []objects.CID{s[0]}) {
		t.Fatalf("cut marks %v %v %v", h.Commits[0].Cut, h.Commits[1].Cut, h.Commits[2].Cut)
	}
	if h.Forgotten == nil || h.Forgotten.Policy != "--keep-last 2" || h.Forgotten.Ops == 0 {
		t.Fatalf("forgotten %+v", h.Forgotten)
	}
	// --path over the cut: the cut commits count as roots.
	h, err = v.Log(ctx, inspecttest.A, inspect.LogOptions{Path: "memory.md"})
	if err != nil || len(h.Commits) != 3 {
		t.Fatalf("log --path: %v %v", cids(h), err)
	}
	// From a revision: the kept part of the history below it.
	h, err = v.Log(ctx, inspecttest.A, inspect.LogOptions{Rev: "HEAD~1"})
	if err != nil || !slices.Equal(cids(h), []objects.CID{s[4], s[1]}) {
		t.Fatalf("log HEAD~1: %v %v", cids(h), err)
	}

	// The fork still reaches steps 1–3: its own history, uncut.
	h, err = v.Log(ctx, inspecttest.Fork, inspect.LogOptions{})
	if err != nil || !slices.Equal(cids(h), []objects.CID{s[2], s[1], s[0]}) || h.Forgotten != nil {
		t.Fatalf("fork's log %v %+v %v", cids(h), h.Forgotten, err)
	}
	for _, cm := range h.Commits {
		if cm.Cut != nil {
			t.Fatalf("fork's log marks a cut at %s", cm.CID.Short())
		}
	}
	// The late fork walks into the gone step 4 and ends there.
	h, err = v.Log(ctx, inspecttest.Late, inspect.LogOptions{})
	if err != nil || !slices.Equal(cids(h), []objects.CID{s[4]}) || !slices.Equal(h.Commits[0].Cut, []objects.CID{s[3]}) {
		t.Fatalf("late fork's log %v %v", h.Commits, err)
	}

	// show: the commit whose parent is gone says so; one whose parent the
	// cut left in the store (kept by the fork) diffs against it.
	sh, err := v.Show(ctx, inspecttest.A, "HEAD~1", true)
	if err != nil || !sh.ParentGone || len(sh.Changes) != 0 || !slices.Equal(sh.Commit.Cut, []objects.CID{s[3]}) {
		t.Fatalf("show HEAD~1: %+v %v", sh, err)
	}
	sh, err = v.Show(ctx, inspecttest.A, "keep-me", true)
	if err != nil || sh.ParentGone || !slices.Equal(sh.Commit.Cut, []objects.CID{s[0]}) || len(sh.Changes) != 1 ||
		!strings.Contains(sh.Changes[0].Patch, "-step 1\n+step 2\n") {
		t.Fatalf("show keep-me: %+v %v", sh, err)
	}
	sh, err = v.Show(ctx, inspecttest.Late, "HEAD", false)
	if err != nil || !sh.ParentGone || !slices.Equal(sh.Commit.Cut, []objects.CID{s[3]}) {
		t.Fatalf("show of the late fork: %+v %v", sh, err)
	}
	if sh, err = v.Show(ctx, inspecttest.A, "HEAD", true); err != nil || sh.ParentGone || sh.Commit.Cut != nil || len(sh.Changes) != 1 {
		t.Fatalf("show HEAD: %+v %v", sh, err)
	}

	// Past the cut: not found, saying a forget cut the history.
	for _, rev := range []string{"HEAD~2", "HEAD~5", s[3].String(), "HEAD~1^"} {
		_, err := v.Show(ctx, inspecttest.A, rev, false)
		if !errors.Is(err, inspect.ErrNotFound) || !strings.Contains(err.Error(), "forget cut") {
			t.Errorf("show %s: %v, want not found (cut by forget)", rev, err)
		}
		if _, err := v.Log(ctx, inspecttest.A, inspect.LogOptions{Rev: rev}); !errors.Is(err, inspect.ErrNotFound) {
			t.Errorf("log %s: %v, want not found", rev, err)
		}
		if _, err := v.Diff(ctx, inspecttest.A, rev, "HEAD", false); !errors.Is(err, inspect.ErrNotFound) {
			t.Errorf("diff %s: %v, want not found", rev, err)
		}
		if _, err := v.Get(ctx, inspecttest.A, rev, "memory.md", 100); !errors.Is(err, inspect.ErrNotFound) {
			t.Errorf("get %s: %v, want not found", rev, err)
		}
		if _, _, err := v.List(ctx, inspecttest.A, rev, "", 100); !errors.Is(err, inspect.ErrNotFound) {
			t.Errorf("list %s: %v, want not found", rev, err)
		}
	}

	// diff across the cut, get and ls at kept states.
	ch, err := v.Diff(ctx, inspecttest.A, "keep-me", "HEAD", true)
	if err != nil || len(ch) != 1 || !strings.Contains(ch[0].Patch, "-step 2\n+step 6\n") {
		t.Fatalf("diff keep-me HEAD: %+v %v", ch, err)
	}
	if val, err := v.Get(ctx, inspecttest.A, "HEAD~1", "memory.md", 100); err != nil || string(val.Data) != "step 5\n" {
		t.Fatalf("get HEAD~1: %+v %v", val, err)
	}
	if es, _, err := v.List(ctx, inspecttest.A, "keep-me", "", 100); err != nil || len(es) != 1 {
		t.Fatalf("list keep-me: %+v %v", es, err)
	}

	// The operation log starts after the cut; receipts of forgotten
	// commits verify, noting the forget.
	ops, err := v.Oplog(ctx, inspecttest.A, 0)
	if err != nil || len(ops) != 2 {
		t.Fatalf("oplog %+v %v", ops, err)
	}
	rcs, err := v.Receipts(ctx, inspecttest.A, true)
	if err != nil || len(rcs) != 6 {
		t.Fatalf("receipts %d %v", len(rcs), err)
	}
	for _, rc := range rcs {
		if rc.Verified == nil || !*rc.Verified {
			t.Fatalf("receipt %d: %+v", rc.N, rc)
		}
		if rc.Receipt.Commit == s[3] && !strings.Contains(rc.Note, "forgotten") {
			t.Fatalf("receipt of the gone step 4: %+v", rc)
		}
	}
	if _, err := v.Snapshots(ctx, inspecttest.A); err != nil {
		t.Fatal(err)
	}

	// An agent with no commits: not found, everywhere, never a fault.
	for name, err := range map[string]error{
		"log":      func() error { _, err := v.Log(ctx, inspecttest.Empty, inspect.LogOptions{}); return err }(),
		"show":     func() error { _, err := v.Show(ctx, inspecttest.Empty, "", false); return err }(),
		"diff":     func() error { _, err := v.Diff(ctx, inspecttest.Empty, "HEAD", "", false); return err }(),
		"get":      func() error { _, err := v.Get(ctx, inspecttest.Empty, "", "memory.md", 10); return err }(),
		"list":     func() error { _, _, err := v.List(ctx, inspecttest.Empty, "", "", 10); return err }(),
		"oplog":    func() error { _, err := v.Oplog(ctx, inspecttest.Empty, 0); return err }(),
		"receipts": func() error { _, err := v.Receipts(ctx, inspecttest.Empty, true); return err }(),
		"head":     func() error { _, err := v.Head(ctx, inspecttest.Empty); return err }(),
	} {
		if !errors.Is(err, inspect.ErrNotFound) {
			t.Errorf("%s of an agent with no commits: %v, want not found", name, err)
		}
	}
	if rs, err := v.Snapshots(ctx, inspecttest.Empty); err != nil || len(rs) != 0 {
		t.Errorf("snapshots of an agent with no commits: %v %v", rs, err)
	}
}
